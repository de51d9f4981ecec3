#include "replay_runner.h"

#include "replay_kernel.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>
#include <unordered_map>

namespace uvmp::tools {
namespace {

using Clock = std::chrono::steady_clock;
using replay::OpKind;

// Enough threads to touch a range's pages at once, few enough that every block
// of a launch runs at the same time (its duration is counted from each block's start).
constexpr unsigned kThreadsPerBlock = 256;

// Waits until `until`: sleeping while the wait is long, spinning for the last stretch.
void wait_until(Clock::time_point until) {
    constexpr auto kSpin = std::chrono::microseconds(200);
    for (auto now = Clock::now(); now < until; now = Clock::now()) {
        if (until - now > kSpin) std::this_thread::sleep_for(until - now - kSpin);
    }
}

CUstream stream_for(const ReplayDriver& driver, uint64_t recorded) {
    // The default streams keep their meaning; any other stream is one of the replay's own.
    if (recorded == 0) return nullptr;
    if (recorded == reinterpret_cast<uint64_t>(CU_STREAM_LEGACY)) return CU_STREAM_LEGACY;
    if (recorded == reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD)) return CU_STREAM_PER_THREAD;
    CUstream stream = nullptr;
    driver.check(driver.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "creating a stream");
    return stream;
}

class PlanRunner {
public:
    PlanRunner(const replay::Plan& plan, const ReplayDriver& driver, const ReplayHooks& hooks)
        : plan_(plan), driver_(driver), hooks_(hooks), kernels_(driver), pointers_(plan.slots, 0),
          waits_left_(plan.launches.size(), 0) {
        CUdevice device = 0;
        driver.check(driver.cuInit(0), "cuInit");
        driver.check(driver.cuDeviceGet(&device, 0), "cuDeviceGet");
        CUcontext context = nullptr;
        driver.check(driver.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
        driver.check(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent");
        int processors = 0;
        driver.check(driver.cuDeviceGetAttribute(&processors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
                     "cuDeviceGetAttribute");
        grid_ = processors > 0 ? static_cast<unsigned>(processors) : 1;
        for (uint64_t recorded : plan.streams) streams_.push_back(stream_for(driver, recorded));
        for (const replay::LaunchOp& l : plan.launches) waits_left_[&l - plan.launches.data()] = l.waiters;
    }

    void run() {
        start_ = step_start_ = Clock::now();
        for (const replay::Op& op : plan_.ops) {
            switch (op.kind) {
            case OpKind::Alloc: alloc(plan_.allocs[op.index]); break;
            case OpKind::Free: free(plan_.frees[op.index]); break;
            case OpKind::Launch: launch(op.index); break;
            case OpKind::Mark:
                if (hooks_.mark_iteration) hooks_.mark_iteration();
                break;
            case OpKind::StepBoundary: boundary(op.index); break;
            }
        }
        synchronize();
    }

private:
    void alloc(const replay::AllocOp& a) {
        CUdeviceptr& pointer = pointers_[a.slot];
        const CUresult result = a.call == replay::AllocCall::StreamOrdered
                                    ? driver_.cuMemAllocAsync(&pointer, a.bytes, streams_[a.stream])
                                    : driver_.cuMemAlloc_v2(&pointer, a.bytes);
        driver_.check(result, fmt::format("allocating {} bytes (allocation {} of the replay)", a.bytes, a.slot + 1));
    }

    void free(const replay::FreeOp& f) {
        const CUresult result = f.call == replay::AllocCall::StreamOrdered
                                    ? driver_.cuMemFreeAsync(pointers_[f.slot], streams_[f.stream])
                                    : driver_.cuMemFree_v2(pointers_[f.slot]);
        driver_.check(result, fmt::format("freeing allocation {} of the replay", f.slot + 1));
        pointers_[f.slot] = 0;
    }

    void launch(uint32_t index) {
        const replay::LaunchOp& l = plan_.launches[index];
        const CUstream stream = streams_[l.stream];
        for (uint32_t w = 0; w < l.wait_count; ++w) {
            const uint32_t before = plan_.waits[l.first_wait + w];
            auto it = events_of_.find(before);
            driver_.check(driver_.cuStreamWaitEvent(stream, it->second, 0), "ordering a launch after another stream's");
            if (--waits_left_[before] == 0) {
                spare_events_.push_back(it->second);
                events_of_.erase(it);
            }
        }
        accesses_.clear();
        for (uint32_t t = 0; t < l.touch_count; ++t) {
            const replay::Touch& touch = plan_.touches[l.first_touch + t];
            accesses_.push_back({pointers_[touch.slot] + touch.offset, touch.length});
        }
        const uint32_t kernel_accesses =
            l.kernel_id < plan_.kernel_max_touches.size() ? plan_.kernel_max_touches[l.kernel_id] : l.touch_count;
        const ReplayKernels::Function& function = kernels_.function(l.kernel_id, kernel_accesses);
        ParamBuffer& buffer = buffers_[function.slots];
        buffer.words.resize(2 + 2 * size_t{function.slots}, 0);
        buffer.used = fill_replay_words(buffer.words, buffer.used, l.duration_ns, accesses_);
        void* params[] = {buffer.words.data()};
        if (l.not_before_ns) wait_until(step_start_ + std::chrono::nanoseconds(*l.not_before_ns));
        driver_.check(driver_.cuLaunchKernel(function.function, grid_, 1, 1, kThreadsPerBlock, 1, 1, 0, stream, params,
                                             nullptr),
                      fmt::format("launch {} of the replay", index));
        if (l.waiters > 0) {
            CUevent event = take_event();
            driver_.check(driver_.cuEventRecord(event, stream), "recording an event after a launch");
            events_of_[index] = event;
        }
    }

    CUevent take_event() {
        if (!spare_events_.empty()) {
            CUevent event = spare_events_.back();
            spare_events_.pop_back();
            return event;
        }
        CUevent event = nullptr;
        driver_.check(driver_.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "creating an event");
        return event;
    }

    void synchronize() {
        for (CUstream stream : streams_) driver_.check(driver_.cuStreamSynchronize(stream), "waiting for a stream");
    }

    void boundary(uint32_t index) {
        synchronize();
        step_start_ = Clock::now();
        if (hooks_.boundary)
            hooks_.boundary(index, static_cast<uint64_t>(
                                       std::chrono::duration_cast<std::chrono::nanoseconds>(step_start_ - start_).count()));
    }

    struct ParamBuffer {
        std::vector<uint64_t> words;
        size_t used = 0;
    };

    const replay::Plan& plan_;
    const ReplayDriver& driver_;
    const ReplayHooks& hooks_;
    ReplayKernels kernels_;
    unsigned grid_ = 1;
    std::vector<CUstream> streams_;
    std::vector<CUdeviceptr> pointers_;
    std::vector<uint32_t> waits_left_;
    std::unordered_map<uint32_t, CUevent> events_of_; // launch -> the event recorded after it
    std::vector<CUevent> spare_events_;
    std::unordered_map<uint32_t, ParamBuffer> buffers_; // by the entry's slots
    std::vector<ReplayAccess> accesses_;
    Clock::time_point start_, step_start_;
};

} // namespace

void run_replay_plan(const replay::Plan& plan, const ReplayDriver& driver, const ReplayHooks& hooks) {
    PlanRunner runner(plan, driver, hooks);
    runner.run();
}

} // namespace uvmp::tools

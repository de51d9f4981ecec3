#include "driver/home_learner.h"

#include "core/sim/simulator.h"
#include "core/trace/fastest_durations.h"
#include "core/util/log.h"
#include "core/util/size_parse.h"
#include "driver/kernel_timing.h"

#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace uvmp::driver {
namespace {

// How often the thread looks, and how many launches must have come since its
// last look: a training step under pressure takes a fraction of a second or
// more, and each look copies the recording and searches it for steps.
constexpr std::chrono::milliseconds kLookEvery{250};
constexpr uint64_t kLaunchesBetweenLooks = 256;

} // namespace

trace::MemoryRecorder* HomeLearner::begin(int device, uint64_t budget_bytes, trace::Header header,
                                          std::span<const trace::Alloc> live, std::function<void()> done) {
    if (begun_.exchange(true, std::memory_order_acq_rel)) return nullptr;
    device_ = device;
    budget_bytes_ = budget_bytes;
    done_ = std::move(done);
    recorder_ = std::make_unique<trace::MemoryRecorder>(std::move(header), kMaxLaunches);
    for (const trace::Alloc& a : live) recorder_->alloc(a);
    recording_.store(true, std::memory_order_release);
    log::info("device {} went over its budget of {}: learning host homes from the next steps", device,
              format_size(budget_bytes));
    try {
        std::thread([this] { run(); }).detach();
    } catch (const std::exception& e) {
        give_up(std::string("no thread to learn on (") + e.what() + ")");
    }
    return recorder_.get();
}

void HomeLearner::kernel_timed(uint64_t launch_seq, uint64_t duration_ns) {
    if (recording_.load(std::memory_order_acquire)) recorder_->kernel_duration(launch_seq, duration_ns);
}

void HomeLearner::give_up(const std::string& why) {
    if (!recording_.load(std::memory_order_acquire)) return;
    log::info("host homes not learned in the run: {}; every allocation is homed on the GPU", why);
    end();
}

void HomeLearner::end() {
    std::call_once(end_once_, [this] {
        recording_.store(false, std::memory_order_release);
        if (done_) done_();
        recorder_->close();
    });
}

void HomeLearner::forget_after_fork() {
    begun_.store(true, std::memory_order_relaxed);
    recording_.store(false, std::memory_order_relaxed);
}

void HomeLearner::run() {
    while (!stopping_.load(std::memory_order_acquire) && recording_.load(std::memory_order_acquire)) {
        std::this_thread::sleep_for(kLookEvery);
        try {
            if (look()) return;
        } catch (const std::exception& e) {
            // The application must never pay for what went wrong here.
            give_up(std::string("learning failed (") + e.what() + ")");
            return;
        }
    }
}

bool HomeLearner::look() {
    const uint64_t launches = recorder_->launches();
    if (launches < looked_at_ + kLaunchesBetweenLooks) return false;
    looked_at_ = launches;
    // The kernels of the steps looked at have ended; their records may still
    // be in CUPTI's buffers.
    KernelTiming::flush();
    trace::Trace recording = recorder_->snapshot();
    const std::vector<uint64_t> bounds = recording_iteration_bounds(recording);
    // Two full steps after the partial one it began in; the learned one is the
    // second of the trace's full steps, as for a recorded trace.
    if (bounds.size() < 3) {
        if (launches >= kMaxLaunches)
            give_up(fmt::format("no step repeated within the first {} launches after the budget was reached",
                                kMaxLaunches));
        return !recording_.load(std::memory_order_acquire);
    }
    trace::use_fastest_durations(recording);
    std::string why_not;
    const placement::TimingPriorConfig prior{.streaming_gbps = config_.streaming_gbps};
    std::optional<placement::RecordedHomes> homes =
        placement::recorded_homes(recording, bounds, budget_bytes_, config_.chunk_size, &why_not, {},
                                  placement::HomeScope::MadeInStep, prior);
    if (!homes) {
        give_up(why_not);
        return true;
    }
    router_.adopt_learned(device_, budget_bytes_, std::move(*homes), [this] { return recorder_->managed_allocs(); });
    end();
    return true;
}

} // namespace uvmp::driver

// The launch path: each launch's kernel described (once), its arguments scanned
// for the converted allocations it touches, and, with a policy on, the launch
// handed to the planner on the worker behind a fence recorded on its stream.
#include "driver/intercept/interceptor.h"

#include "core/util/log.h"
#include "driver/intercept/monotonic_clock.h"

#include <array>
#include <utility>

namespace uvmp::driver {
namespace {

// Launch-path scratch: one per thread, so observing a launch allocates nothing
// once warmed up.
thread_local std::vector<AccessHit> t_hits;
// The kernel descriptions this thread launched with lately, so that launching a
// kernel seen before takes no lock: they hold while the table's generation does.
// Trivially destructible, so that reaching it needs no check that it was made.
struct KernelCache {
    static constexpr size_t kEntries = 32;
    static size_t slot(const void* handle) {
        static_assert(kEntries == 32, "the top five bits of the hash pick the entry");
        return static_cast<size_t>((reinterpret_cast<uintptr_t>(handle) * 0x9E3779B97F4A7C15ull) >> 59);
    }
    uint64_t generation = 0; // no table's
    std::array<std::pair<const void*, const KernelInfo*>, kEntries> entries{};
};
thread_local KernelCache t_kernels;

// This thread's launch hits as trace accesses (extent unknown).
std::span<const trace::Access> hits_as_accesses() {
    thread_local std::vector<trace::Access> accesses;
    accesses.clear();
    for (const AccessHit& h : t_hits) accesses.push_back({h.alloc_id, h.offset, 0});
    return accesses;
}

} // namespace

void Interceptor::describe_kernel(const void* handle, KernelInfo& info) const {
    const DriverTable* table = driver_table_if_ready();
    if (!table) return;
    auto function = static_cast<CUfunction>(const_cast<void*>(handle));
    auto kernel = reinterpret_cast<CUkernel>(function);
    const char* name = nullptr;
    if (table->cuFuncGetName && table->cuFuncGetName(&name, function) != CUDA_SUCCESS) name = nullptr;
    if (!name && table->cuKernelGetName && table->cuKernelGetName(&name, kernel) != CUDA_SUCCESS)
        name = nullptr;
    info.name = name ? name : "?";

    // The runtime's lazy loading hands CUkernel handles to cuLaunchKernel as
    // CUfunction; try the function query first, then the kernel one.
    auto collect = [&](auto query) {
        std::vector<ParamSlot> slots;
        for (size_t i = 0;; ++i) {
            size_t offset = 0, size = 0;
            if (query(i, &offset, &size) != CUDA_SUCCESS) break;
            slots.push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(size)});
        }
        return slots;
    };
    if (table->cuFuncGetParamInfo) {
        info.params = collect([&](size_t i, size_t* o, size_t* s) {
            return table->cuFuncGetParamInfo(function, i, o, s);
        });
    }
    if (info.params.empty() && table->cuKernelGetParamInfo) {
        info.params = collect([&](size_t i, size_t* o, size_t* s) {
            return table->cuKernelGetParamInfo(kernel, i, o, s);
        });
    }
    info.layout_known = true;
    log::debug("kernel {}: {} parameters", info.name, info.params.size());
}

uint64_t Interceptor::observe_launch(const LaunchSite& site) {
    const uint64_t seen = stats_.launches_seen.fetch_add(1, std::memory_order_relaxed);
    // What the hook costs, in the program itself.
    const bool timed = seen % kSampleEvery == 0;
    const uint64_t hook_start = timed ? monotonic_ns() : 0;
    const uint64_t seq = observe_launch_untimed(site);
    if (timed) {
        stats_.add(stats_.hooks_timed);
        stats_.add(stats_.hook_ns, monotonic_ns() - hook_start);
    }
    return seq;
}

const KernelInfo& Interceptor::kernel_info(const void* handle) {
    const uint64_t generation = kernels_.generation();
    KernelCache& cache = t_kernels;
    auto& [cached, cached_info] = cache.entries[KernelCache::slot(handle)];
    if (cache.generation == generation && cached == handle) return *cached_info;
    bool first_sight = false;
    const KernelInfo& info = kernels_.lookup(handle, &first_sight);
    if (trace::TraceWriter* trace = this->trace(); first_sight && trace) trace->kernel(info.id, info.name);
    if (cache.generation != generation) {
        cache.entries = {};
        cache.generation = generation;
    }
    cached = handle;
    cached_info = &info;
    return info;
}

uint64_t Interceptor::observe_launch_untimed(const LaunchSite& site) {
    // Only a plan or a trace reads a launch's accesses: without either (no budget
    // or one not reached yet, no trace) a launch is counted and nothing more.
    const bool planned = plans_launches();
    if (!planned && !trace()) return launch_seq_.fetch_add(1, std::memory_order_relaxed);
    const KernelInfo& info = kernel_info(site.function);
    // Reached once: each use of a thread-local in a shared library looks it up anew.
    std::vector<AccessHit>& hits = t_hits;
    hits.clear();
    if (site.params) {
        scan_kernel_params(info, site.params, registry_, hits);
    } else if (site.extra) {
        const ParamBuffer buffer = param_buffer(site.extra);
        scan_param_buffer(buffer.data, buffer.bytes, registry_, hits);
    }
    if (!hits.empty()) {
        stats_.add(stats_.launches_with_access);
        stats_.add(stats_.access_entries, hits.size());
    }
    if (const CaptureState capture = capture_of(site.flavor, site.stream, planned && !hits.empty()); capture.capturing) {
        // It runs only when a graph made of the capture is launched, where it is
        // planned and recorded; an event recorded into the capture would also
        // change the application's graph. It takes no sequence number: it is no
        // launch of the ones that ran.
        stats_.add(stats_.launches_captured);
        if (trace::TraceWriter* trace = this->trace()) {
            trace::CapturedLaunch record;
            record.capture_id = capture.id;
            record.kernel_id = info.id;
            for (int i = 0; i < 3; ++i) {
                record.grid[i] = site.grid[i];
                record.block[i] = site.block[i];
            }
            record.stream = reinterpret_cast<uint64_t>(site.stream);
            record.time_ns = now_ns();
            record.launches_before = launch_seq_.load(std::memory_order_relaxed);
            trace->captured_launch(record, hits_as_accesses());
        }
        return kNotRun;
    }
    const uint64_t seq = launch_seq_.fetch_add(1, std::memory_order_relaxed);
    if (!hits.empty() && planned) post_to_planner(site, seq, info.id, hits);
    if (trace::TraceWriter* trace = this->trace())
        record_launch(*trace, seq, info.id, site.grid, site.block, site.stream, hits_as_accesses());
    return seq;
}

CaptureState Interceptor::capture_of(StreamFlavor flavor, CUstream stream, bool planned_accesses) const {
    // A driver call: made only where a plan or a record depends on it, and once
    // some capture may have begun.
    if (!trace() && !planned_accesses) return {};
    if (!captures_possible()) return {};
    const DriverTable* table = driver_table_if_ready();
    return table ? capture_state(*table, flavor, stream) : CaptureState{};
}

void Interceptor::make_launch_lane() {
    if (lane_.load(std::memory_order_acquire)) return;
    std::lock_guard lock(lane_mutex_);
    if (lane_owner_) return;
    lane_owner_ = std::make_unique<LaunchLane>(kLaneCapacity, [this](const PlannedLaunch& launch) { plan(launch); });
    executor_.set_lane(lane_owner_.get());
    lane_.store(lane_owner_.get(), std::memory_order_release);
}

void Interceptor::post_to_planner(const LaunchSite& site, uint64_t seq, uint32_t kernel_id,
                                  std::span<const AccessHit> hits) {
    // The fence orders evictions after the kernels before this launch. While all
    // converted memory fits, no plan evicts, and the event record (which contends
    // with the launch itself for the driver) is not worth its cost.
    const LaunchOrigin origin = launch_origin();
    const CUevent fence = all_converted_memory_fits() ? nullptr : record_fence(site.flavor, site.stream, origin.context);
    LaunchLane* lane = lane_.load(std::memory_order_acquire);
    if (lane && LaunchLane::fits(hits)) {
        if (executor_.accepting() && lane->put(seq, kernel_id, hits, fence, origin)) executor_.lane_filled();
        else count_unplanned(fence);
        return;
    }
    // More accesses than a record holds (or no lane yet): a task of its own, which
    // comes after what the lane holds now, as the launch does.
    PlannedLaunch planned{seq, kernel_id, {}, fence, origin};
    planned.accesses.reserve(hits.size());
    for (const AccessHit& h : hits) planned.accesses.push_back({h.alloc_id, h.offset, 0});
    const bool queued = executor_.post_unless_backlogged(
        [this, planned = std::move(planned)](Executor&) { plan(planned); }, kMaxPlannerBacklog);
    if (!queued) count_unplanned(fence);
}

void Interceptor::post_to_planner(std::vector<PlannedLaunch> steps) {
    if (steps.empty()) return;
    auto shared = std::make_shared<const std::vector<PlannedLaunch>>(std::move(steps));
    const bool queued = executor_.post_unless_backlogged(
        [this, shared](Executor&) {
            for (const PlannedLaunch& step : *shared) plan(step);
        },
        kMaxPlannerBacklog);
    if (!queued)
        for (const PlannedLaunch& step : *shared) count_unplanned(step.fence);
}

void Interceptor::plan(const PlannedLaunch& launch) {
    stats_.add(stats_.launches_planned);
    if (const auto batch = planner_->launch(launch, learner_.wants_waits())) learner_.launch_planned(launch.seq, *batch);
}

void Interceptor::count_unplanned(CUevent fence) {
    stats_.add(stats_.launches_unplanned);
    if (fence) fences_.release(fence);
}

bool Interceptor::plans_launches() {
    if (!planner_) return false;
    if (plans_launches_.load(std::memory_order_relaxed)) return true;
    if (all_converted_memory_fits()) return false;
    plans_launches_.store(true, std::memory_order_relaxed);
    return true;
}

bool Interceptor::all_converted_memory_fits() const {
    return devices_over_budget_.load(std::memory_order_acquire) == 0 && !budget_bound_.load(std::memory_order_acquire);
}

CUevent Interceptor::record_fence(StreamFlavor flavor, CUstream stream, CUcontext context) {
    // Recorded before the launch is forwarded, so it completes when the work
    // queued before this launch has: the moves planned for the launch wait on it.
    // A fraction of a microsecond per launch.
    const DriverTable* table = driver_table_if_ready();
    if (!table) return nullptr;
    // No context (launch_origin found none): no event can be recorded.
    CUevent event = fences_.acquire(*table, context);
    if (!event) return nullptr;
    auto record = flavor == StreamFlavor::PerThread ? table->cuEventRecord_ptsz : table->cuEventRecord;
    if (record(event, stream) != CUDA_SUCCESS) {
        fences_.release(event);
        return nullptr;
    }
    stats_.add(stats_.launches_fenced);
    return event;
}

LaunchOrigin Interceptor::launch_origin() const {
    const DriverTable* table = driver_table_if_ready();
    LaunchOrigin origin;
    if (!table || table->cuCtxGetCurrent(&origin.context) != CUDA_SUCCESS || !origin.context) return {};
    // A thread launches in one context as a rule: its device is asked once a
    // context, not once a launch. (A context destroyed and made anew at the same
    // address on another device would keep the old device here: its launches'
    // moves would be planned on the wrong model, a loss of speed only.)
    thread_local LaunchOrigin t_last{nullptr, -1};
    LaunchOrigin& last = t_last;
    if (origin.context != last.context) {
        if (table->cuCtxGetDevice(&last.device) != CUDA_SUCCESS) last.device = -1;
        last.context = origin.context;
    }
    origin.device = last.device;
    return origin;
}

} // namespace uvmp::driver

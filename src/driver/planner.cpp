#include "driver/planner.h"

#include "core/util/log.h"
#include "core/util/size_parse.h"
#include "core/trace/reader.h"

#include <chrono>

namespace uvmp::driver {

CUevent FencePool::acquire(const DriverTable& table) {
    {
        std::lock_guard lock(mutex_);
        if (!free_.empty()) {
            CUevent e = free_.back();
            free_.pop_back();
            return e;
        }
    }
    CUevent e = nullptr;
    if (table.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return nullptr;
    return e;
}

void FencePool::release(CUevent event) {
    std::lock_guard lock(mutex_);
    free_.push_back(event);
}

Planner::Planner(ResidencyPolicy policy, uint64_t chunk_bytes, std::string trace_in, Stats& stats,
                 const Registry& registry, FencePool& fences)
    : kind_(policy), chunk_bytes_(chunk_bytes), trace_in_(std::move(trace_in)), stats_(stats), registry_(registry),
      fences_(fences) {}

std::unique_ptr<uvmp::Policy> Planner::make_policy() {
    if (kind_ != ResidencyPolicy::Learned) return make_demand_lru_policy();
    if (!seed_read_ && !trace_in_.empty()) {
        seed_read_ = true;
        std::string why_not;
        try {
            seed_ = loop_seed_from_trace(trace::read_trace_file(trace_in_), &why_not);
        } catch (const std::exception& e) {
            why_not = e.what();
        }
        if (seed_)
            log::info("learned policy starts from {} ({} launches an iteration)", trace_in_, seed_->launches.size());
        else
            log::warn("UVMP_TRACE_IN: cannot start from {}: {}; learning from this run instead", trace_in_, why_not);
    }
    return make_learned_policy({}, {}, seed_ ? &*seed_ : nullptr);
}

void Planner::check_seed(const PlannedAllocation& allocation) {
    if (!seed_) return;
    const auto it = seed_->allocation_sizes.find(allocation.id);
    if (it == seed_->allocation_sizes.end() || it->second == allocation.size) return;
    log::warn("UVMP_TRACE_IN: allocation {} is {} bytes here and {} in {}: the program allocates differently "
              "from the recorded run; learning from this run instead",
              allocation.id, allocation.size, it->second, trace_in_);
    seed_.reset();
    for (auto& [device, model] : models_) model.policy = make_policy();
}

Planner::DeviceModel& Planner::model_for(CUdevice device, uint64_t budget) {
    DeviceModel& model = models_[device];
    if (!model.residency) {
        // A long job that frees and allocates anew every step would grow the
        // per-chunk state with every byte it ever allocated: ids are reused.
        model.residency = std::make_unique<Residency>(budget, chunk_bytes_, ChunkIds::Reused);
        model.policy = make_policy();
        model.residency->keep_recency_order(model.policy->reads_recency_order());
    }
    return model;
}

void Planner::allocation_added(const PlannedAllocation& allocation, uint64_t budget, Executor& executor) {
    DeviceModel& model = model_for(allocation.device, budget);
    check_seed(allocation);
    allocations_[allocation.id] = allocation;
    Residency& residency = *model.residency;
    const auto chunks = residency.add_allocation(allocation.id, allocation.size);
    if (!chunks) return;
    model.policy->on_allocation_added(*chunks);
    if (const uint64_t reused = model.reuse.place(residency, *chunks, allocation.base, launches_))
        bytes_reused_in_place_.fetch_add(reused, std::memory_order_relaxed);
    // The rest, when it fits, is placed on the GPU now: a prefetch of untouched
    // managed memory only populates pages, far cheaper than faulting them in.
    const uint64_t missing = residency.missing_bytes(*chunks);
    if (missing == 0 || residency.free_bytes() < missing) return;
    for (ChunkId c = residency.first_missing(*chunks); c <= chunks->last; c = residency.first_missing({c, chunks->last})) {
        const ChunkRange run{c, residency.first_resident({c, chunks->last}) - 1};
        residency.make_resident(run, launches_);
        move(ChunkSpan{run.first, run.last - run.first + 1}, trace::MoveKind::Populate, model, executor);
        c = run.last + 1;
    }
}

void Planner::allocation_removed(uint32_t id) {
    auto it = allocations_.find(id);
    if (it == allocations_.end()) return;
    if (auto found = models_.find(it->second.device); found != models_.end()) {
        // What was resident stays on the GPU, dead, for the next block placed there.
        DeviceModel& model = found->second;
        model.reuse.note_removal(*model.residency, id, it->second.base);
        model.residency->remove_allocation(id);
    }
    allocations_.erase(it);
}

void Planner::slab_changed(CUdevice device, uint64_t base, uint64_t bytes) {
    if (auto found = models_.find(device); found != models_.end()) found->second.reuse.forget(base, bytes);
}

void Planner::launch(const PlannedLaunch& launch, Executor& executor) {
    auto owner = allocations_.find(launch.accesses.front().alloc_id);
    if (owner == allocations_.end()) return;
    auto found = models_.find(owner->second.device);
    if (found == models_.end()) return;
    DeviceModel& model = found->second;
    Residency& residency = *model.residency;
    launches_ = launch.seq;

    residency.launch_ranges(launch.accesses, range_scratch_);

    LaunchView view;
    view.step = launch.seq;
    view.kernel_id = launch.kernel_id;
    view.accesses = launch.accesses;
    view.ranges = range_scratch_;
    residency.pin_launch(range_scratch_);
    plan_.clear();
    model.policy->plan(view, residency, plan_);
    plan_.coalesce_evictions(residency);
    residency.unpin_launch();
    if (const uint64_t demand = Plan::bytes(plan_.demand, residency)) {
        stats_.add(stats_.launches_with_demand);
        stats_.add(stats_.bytes_demand_estimated, demand);
    }
    execute(plan_, launch.fence, model, executor);
    if (launch.fence) fences_.release(launch.fence);
}

void Planner::execute(const Plan& plan, CUevent fence, DeviceModel& model, Executor& executor) {
    const bool fetch_demand = model.policy->fetches_demand();
    const ChunkSpan* first = !plan.evict.empty()                   ? &plan.evict.front()
                             : fetch_demand && !plan.demand.empty() ? &plan.demand.front()
                             : !plan.prefetch.empty()               ? &plan.prefetch.front()
                                                                    : nullptr;
    if (!first) return;
    if (fence) wait_for_fence(fence, model.residency->alloc_id_of(first->first), executor);
    for (const ChunkSpan& span : plan.evict) move(span, trace::MoveKind::Evict, model, executor);
    if (fetch_demand)
        for (const ChunkSpan& span : plan.demand) move(span, trace::MoveKind::Prefetch, model, executor);
    for (const ChunkSpan& span : plan.prefetch) move(span, trace::MoveKind::Prefetch, model, executor);
}

void Planner::wait_for_fence(CUevent fence, uint32_t alloc_id, Executor& executor) {
    // A wait captures the event as last recorded, so the fence can be recycled
    // as soon as the wait is queued.
    const DriverTable* table = driver_table_if_ready();
    const auto it = allocations_.find(alloc_id);
    if (!table || it == allocations_.end()) return;
    CUstream stream = executor.stream_for(*table, it->second.context);
    if (stream && table->cuStreamWaitEvent(stream, fence, 0) != CUDA_SUCCESS)
        UVMP_WARN_ONCE("could not order moves after a launch; they may start early");
}

void Planner::move(ChunkSpan span, trace::MoveKind kind, DeviceModel& model, Executor& executor) {
    const bool to_gpu = kind != trace::MoveKind::Evict;
    if (span.count == 0) return;
    const Residency& residency = *model.residency;
    const uint32_t alloc_id = residency.alloc_id_of(span.first);
    auto it = allocations_.find(alloc_id);
    if (it == allocations_.end()) return;
    const PlannedAllocation& allocation = it->second;
    if (auto live = registry_.find_base(allocation.base); !live || live->id != alloc_id) return;
    const uint64_t offset = residency.chunk_offset(span.first);
    const uint64_t bytes = residency.bytes_of({span.first, span.first + span.count - 1});

    const DriverTable* table = driver_table_if_ready();
    if (!table || !table->cuMemPrefetchAsync_v2) return;
    CUstream stream = executor.stream_for(*table, allocation.context);
    if (!stream) return;
    CUmemLocation location{};
    if (to_gpu) {
        location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        location.id = allocation.device;
    } else {
        location.type = CU_MEM_LOCATION_TYPE_HOST;
        location.id = 0;
    }
    const auto call_start = std::chrono::steady_clock::now();
    const CUresult r = table->cuMemPrefetchAsync_v2(allocation.base + offset, bytes, location, 0, stream);
    stats_.add(stats_.move_calls);
    stats_.add(stats_.move_call_ns, static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                              std::chrono::steady_clock::now() - call_start)
                                                              .count()));
    if (r != CUDA_SUCCESS) {
        UVMP_WARN_ONCE("a {} of {} failed ({}); the driver will fault the data in instead",
                       to_gpu ? "prefetch" : "eviction", format_size(bytes), error_name(r));
        return;
    }
    switch (kind) {
    case trace::MoveKind::Populate:
        stats_.add(stats_.populate_calls);
        stats_.add(stats_.bytes_populated, bytes);
        break;
    case trace::MoveKind::Evict: stats_.add(stats_.bytes_evicted, bytes); break;
    default: stats_.add(stats_.bytes_prefetched, bytes); break;
    }
    if (trace_) {
        trace::Move record;
        record.kind = kind;
        record.alloc_id = alloc_id;
        record.offset = offset;
        record.length = bytes;
        record.launches_before = launches_;
        trace_->move(record);
    }
}

double Planner::prediction_hit_rate() const {
    for (const auto& [device, model] : models_)
        if (auto rate = model.policy->prediction_hit_rate()) return *rate;
    return 0.0;
}

} // namespace uvmp::driver

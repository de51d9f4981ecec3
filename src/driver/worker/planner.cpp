#include "driver/worker/planner.h"

#include "core/util/elapsed.h"
#include "core/util/log.h"
#include "core/util/size_parse.h"
#include "core/trace/format/reader.h"

#include <algorithm>
#include <chrono>

namespace uvmp::driver {

Planner::Planner(ResidencyPolicy policy, uint64_t chunk_bytes, std::string trace_in, Stats& stats,
                 const Registry& registry, FencePool& fences, Executor& mover)
    : kind_(policy), chunk_bytes_(chunk_bytes), trace_in_(std::move(trace_in)), stats_(stats), registry_(registry),
      fences_(fences), mover_(mover) {}

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
    LookaheadConfig lookahead;
    lookahead.blocks_reuse_in_place = true; // every converted allocation is a block of the pool
    return make_learned_policy({}, lookahead, seed_ ? &*seed_ : nullptr);
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
        model.device = device;
        // A long job that frees and allocates anew every step would grow the
        // per-chunk state with every byte it ever allocated: ids are reused.
        model.residency = std::make_unique<Residency>(budget, chunk_bytes_, ChunkIds::Reused);
        model.policy = make_policy();
        model.residency->keep_recency_order(model.policy->reads_recency_order());
        model.reuse->give_up_through(*model.residency, [this](uint64_t address, uint64_t bytes) {
            dead_scratch_.push_back({address, bytes});
        });
    }
    return model;
}

void Planner::publish(const DeviceModel& model) {
    const Residency& residency = *model.residency;
    DeviceStats& device = stats_.device(model.device);
    device.bytes_resident.store(residency.resident_bytes(), std::memory_order_relaxed);
    device.bytes_dead_resident.store(residency.dead_bytes(), std::memory_order_relaxed);
    device.bytes_held_peak.store(residency.peak_held_bytes(), std::memory_order_relaxed);
    uint64_t dead = 0, held_peak = 0;
    for (const auto& [id, other] : models_) {
        dead += other.residency->dead_bytes();
        held_peak = std::max(held_peak, other.residency->peak_held_bytes());
    }
    stats_.bytes_dead_resident.store(dead, std::memory_order_relaxed);
    stats_.bytes_held_peak.store(held_peak, std::memory_order_relaxed);
}

void Planner::allocation_added(const PlannedAllocation& allocation, uint64_t budget, bool populate) {
    DeviceModel& model = model_for(allocation.device, budget);
    check_seed(allocation);
    allocations_[allocation.id] = allocation;
    model.context = allocation.context;
    Residency& residency = *model.residency;
    const auto chunks = residency.add_allocation(allocation.id, allocation.size);
    if (!chunks) return;
    model.policy->on_allocation_added(*chunks);
    // The block's memory is its own now: no dead piece still to evict may take it.
    keep_clear_of(model.dead_pending, allocation.base, allocation.size);
    dead_scratch_.clear();
    populate_scratch_.clear();
    const uint64_t reused = place_block(residency, *model.reuse, *chunks, allocation.base, launches_,
                                        [&](ChunkRange run) { populate_scratch_.push_back(run); });
    // Dead memory given up for the block may still be in use by kernels queued
    // before its free (the application runs ahead of the GPU): it is evicted
    // behind the next launch's fence, as a launch's own dead pieces are.
    model.dead_pending.insert(model.dead_pending.end(), dead_scratch_.begin(), dead_scratch_.end());
    note_budget_bound(model);
    if (populate)
        for (const ChunkRange& run : populate_scratch_) {
            move(ChunkSpan{run.first, run.last - run.first + 1}, trace::MoveKind::Populate, model, allocation.context);
            model.populating.push_back(run);
        }
    note_unpopulated(model, allocation, *chunks);
    if (reused) bytes_reused_in_place_.fetch_add(reused, std::memory_order_relaxed);
    publish(model);
}

void Planner::note_unpopulated(DeviceModel& model, const PlannedAllocation& allocation, ChunkRange chunks) {
    const Residency& residency = *model.residency;
    if (model.unpopulated.size() <= chunks.last) model.unpopulated.resize(chunks.last + 1, 0);
    for (ChunkId c = chunks.first; c <= chunks.last; ++c) {
        const uint64_t begin = allocation.base + residency.chunk_offset(c);
        const uint64_t end = begin + residency.bytes_of({c, c});
        model.unpopulated[c] =
            !residency.is_resident(c) && begin >= allocation.fresh_begin && end <= allocation.fresh_end;
    }
}

void Planner::clear_unpopulated(DeviceModel& model, ChunkRange range) {
    if (model.unpopulated.empty()) return;
    const ChunkId last = std::min<ChunkId>(range.last, static_cast<ChunkId>(model.unpopulated.size() - 1));
    if (range.first <= last) std::fill(model.unpopulated.begin() + range.first, model.unpopulated.begin() + last + 1, 0);
}

void Planner::allocation_removed(uint32_t id) {
    auto it = allocations_.find(id);
    if (it == allocations_.end()) return;
    if (auto found = models_.find(it->second.device); found != models_.end()) {
        // What was resident stays on the GPU, dead, for the next block placed there.
        DeviceModel& model = found->second;
        if (const auto all = model.residency->chunks_of(id)) clear_unpopulated(model, *all);
        model.reuse->note_removal(*model.residency, id, it->second.base, launches_);
        model.residency->remove_allocation(id);
        publish(model);
    }
    allocations_.erase(it);
}

void Planner::allocation_homed_on_host(uint32_t id, uint64_t bytes) {
    auto it = allocations_.find(id);
    if (it != allocations_.end()) {
        if (auto found = models_.find(it->second.device); found != models_.end()) {
            DeviceModel& model = found->second;
            if (const auto all = model.residency->chunks_of(id)) clear_unpopulated(model, *all);
            model.residency->remove_allocation(id);
            publish(model);
        }
        allocations_.erase(it);
    }
    host_traffic_.add(id, bytes);
}

void Planner::slab_changed(CUdevice device, uint64_t base, uint64_t bytes) {
    if (auto found = models_.find(device); found != models_.end()) {
        found->second.reuse->forget(*found->second.residency, base, bytes);
        keep_clear_of(found->second.dead_pending, base, bytes);
        publish(found->second);
    }
}

void Planner::note_budget_bound(DeviceModel& model) {
    if (model.budget_bound || !model.reuse->budget_binds()) return;
    model.budget_bound = true;
    if (budget_bound_) budget_bound_->store(true, std::memory_order_release);
    // Until now no dead byte had to move, and the pool placed by best fit
    // without asking anything in the allocation hook.
    if (dead_memory_known_) dead_memory_known_(model.device, model.reuse);
}

void Planner::keep_clear_of(std::vector<DeadPiece>& pieces, uint64_t base, uint64_t bytes) {
    const uint64_t end = base + bytes;
    for (size_t i = 0; i < pieces.size();) {
        const DeadPiece piece = pieces[i];
        const uint64_t piece_end = piece.address + piece.bytes;
        if (piece_end <= base || piece.address >= end) {
            ++i;
            continue;
        }
        pieces.erase(pieces.begin() + static_cast<std::ptrdiff_t>(i));
        // What lies outside [base, end) is still dead and still to go.
        if (piece.address < base) pieces.insert(pieces.begin() + static_cast<std::ptrdiff_t>(i++), {piece.address, base - piece.address});
        if (piece_end > end) pieces.insert(pieces.begin() + static_cast<std::ptrdiff_t>(i++), {end, piece_end - end});
    }
}

std::span<const trace::Access> Planner::accesses_on(CUdevice device, const std::vector<trace::Access>& accesses) {
    auto elsewhere = [&](const trace::Access& a) {
        const auto it = allocations_.find(a.alloc_id);
        return it != allocations_.end() && it->second.device != device;
    };
    // A job of one device, and most launches of several, name no other device's memory.
    if (std::none_of(accesses.begin(), accesses.end(), elsewhere)) return accesses;
    access_scratch_.clear();
    for (const trace::Access& a : accesses)
        if (!elsewhere(a)) access_scratch_.push_back(a);
    return access_scratch_;
}

namespace {

// Whether a chunk of `ranges` (ascending, none overlapping) lies in `among`.
bool overlaps(std::span<const ChunkRange> ranges, std::span<const ChunkRange> among) {
    for (const ChunkRange& a : among)
        for (const ChunkRange& r : ranges) {
            if (r.first > a.last) break;
            if (std::max(r.first, a.first) <= std::min(r.last, a.last)) return true;
        }
    return false;
}

} // namespace

std::optional<trace::LaunchBatch> Planner::launch(const PlannedLaunch& launch, bool measure_waits) {
    if (host_traffic_.size()) {
        const placement::HostTrafficBytes named = host_traffic_.launch(launch.accesses, trip_scratch_);
        if (named.written) stats_.add(stats_.remote_write_bytes_named, named.written);
        if (named.read) stats_.add(stats_.remote_read_bytes_named, named.read);
    }
    // The launching device; where it is not known, that of the first allocation
    // the model holds (host-homed blocks are never added, and the launch may
    // name one first).
    CUdevice device = launch.origin.device;
    if (device < 0) {
        auto owner = allocations_.end();
        for (const trace::Access& access : launch.accesses)
            if ((owner = allocations_.find(access.alloc_id)) != allocations_.end()) break;
        device = owner == allocations_.end() ? -1 : owner->second.device;
    }
    const auto found = models_.find(device);
    const std::span<const trace::Access> accesses =
        found == models_.end() ? std::span<const trace::Access>{} : accesses_on(device, launch.accesses);
    if (accesses.empty()) {
        if (launch.fence) fences_.release(launch.fence);
        return {};
    }
    DeviceModel& model = found->second;
    Residency& residency = *model.residency;
    launches_ = launch.seq;

    residency.launch_ranges(accesses, range_scratch_);

    LaunchView view;
    view.step = launch.seq;
    view.kernel_id = launch.kernel_id;
    view.accesses = accesses;
    view.ranges = range_scratch_;
    residency.pin_launch(range_scratch_);
    plan_.clear();
    dead_scratch_.clear(); // what the plan gives up of dead memory comes here
    model.policy->plan(view, residency, plan_);
    plan_.coalesce_evictions(residency);
    residency.unpin_launch();
    if (const uint64_t demand = Plan::bytes(plan_.demand, residency)) {
        stats_.add(stats_.launches_with_demand);
        stats_.add(stats_.bytes_demand_estimated, demand);
    }
    stats_.add(stats_.device(model.device).launches_planned);
    publish(model);
    note_budget_bound(model);
    // Dead memory given up for blocks made since the last launch goes first.
    dead_scratch_.insert(dead_scratch_.begin(), model.dead_pending.begin(), model.dead_pending.end());
    model.dead_pending.clear();
    if (!execute(plan_, dead_scratch_, launch.fence, model, launch.origin.context) && launch.fence)
        fences_.release(launch.fence);
    // What the kernel names is on the GPU once it has run, fetched or faulted in.
    for (const ChunkRange& range : range_scratch_) clear_unpopulated(model, range);
    std::optional<trace::LaunchBatch> batch;
    if (measure_waits) {
        batch = batch_of(launch.seq, model);
        BatchChunks& chunks = model.recent.emplace_back(BatchChunks{launch.seq, {}, std::move(model.populating)});
        for (const ChunkSpan& span : plan_.prefetch)
            chunks.prefetched.push_back({span.first, span.first + span.count - 1});
        if (model.recent.size() > kRecentBatches) model.recent.pop_front();
    } else if (!model.recent.empty()) {
        model.recent.clear();
    }
    model.populating.clear();
    return batch;
}

trace::LaunchBatch Planner::batch_of(uint64_t launch, const DeviceModel& model) const {
    const Residency& residency = *model.residency;
    trace::LaunchBatch batch;
    for (const ChunkRange& run : model.populating) batch.populate_bytes += residency.bytes_of(run);
    batch.evict_bytes = Plan::bytes(plan_.evict, residency);
    for (const DeadPiece& piece : dead_scratch_) batch.evict_bytes += piece.bytes;
    batch.demand_bytes = Plan::bytes(plan_.demand, residency);
    batch.prefetch_bytes = Plan::bytes(plan_.prefetch, residency);
    const auto named = [&](const std::vector<ChunkRange>& brought) {
        return overlaps(range_scratch_, brought);
    };
    if (named(model.populating)) batch.needs_populate_of = launch;
    for (auto it = model.recent.rbegin(); it != model.recent.rend(); ++it) {
        if (!batch.needs_prefetch_of && named(it->prefetched)) batch.needs_prefetch_of = it->launch;
        if (!batch.needs_populate_of && named(it->populated)) batch.needs_populate_of = it->launch;
        if (batch.needs_prefetch_of && batch.needs_populate_of) break;
    }
    return batch;
}

bool Planner::execute(const Plan& plan, std::span<const DeadPiece> dead, CUevent fence, DeviceModel& model,
                      CUcontext context) {
    const bool fetch_demand = model.policy->fetches_demand();
    const ChunkSpan* first = !plan.evict.empty()                   ? &plan.evict.front()
                             : fetch_demand && !plan.demand.empty() ? &plan.demand.front()
                             : !plan.prefetch.empty()               ? &plan.prefetch.front()
                                                                    : nullptr;
    if (!first && dead.empty()) return false;
    // One stream for all of them: the evictions that make room run before the
    // fetches that need it, and all of them behind the one wait for the fence.
    if (!context && first) {
        const auto it = allocations_.find(model.residency->alloc_id_of(first->first));
        context = it == allocations_.end() ? nullptr : it->second.context;
    }
    if (!context) context = model.context;
    if (fence) wait_for_fence(fence, context);
    for (const DeadPiece& piece : dead) evict_dead(piece, model, context);
    for (const ChunkSpan& span : plan.evict) move(span, trace::MoveKind::Evict, model, context);
    if (fetch_demand)
        for (const ChunkSpan& span : plan.demand) move(span, trace::MoveKind::Prefetch, model, context);
    for (const ChunkSpan& span : plan.prefetch) move(span, trace::MoveKind::Prefetch, model, context);
    return true;
}

void Planner::wait_for_fence(CUevent fence, CUcontext context) {
    // A wait captures the event as last recorded, so the fence can be recycled
    // as soon as the wait is queued (on the mover, which then gives it back).
    mover_.post([this, fence, context](Executor& mover) {
        const DriverTable* table = driver_table_if_ready();
        CUstream stream = table && context ? mover.stream_for(*table, context) : nullptr;
        if (stream && table->cuStreamWaitEvent(stream, fence, 0) != CUDA_SUCCESS)
            UVMP_WARN_ONCE("could not order moves after a launch; they may start early");
        fences_.release(fence);
    });
}

void Planner::move(ChunkSpan span, trace::MoveKind kind, DeviceModel& model, CUcontext context) {
    if (span.count == 0) return;
    // A fetch of fresh memory that nothing brought to the GPU yet moves no data:
    // it populates, and is counted so (the bytes over the link stay the fetched
    // ones). Runs of the span are one or the other.
    if (kind != trace::MoveKind::Prefetch || model.unpopulated.empty()) return issue_move(span, kind, model, context);
    auto fresh = [&](ChunkId c) { return c < model.unpopulated.size() && model.unpopulated[c] != 0; };
    const ChunkId last = span.first + span.count - 1;
    for (ChunkId c = span.first; c <= last;) {
        const bool run_fresh = fresh(c);
        ChunkId end = c;
        while (end < last && fresh(end + 1) == run_fresh) ++end;
        if (run_fresh) clear_unpopulated(model, {c, end});
        issue_move({c, end - c + 1}, run_fresh ? trace::MoveKind::Populate : kind, model, context);
        c = end + 1;
    }
}

void Planner::issue_move(ChunkSpan span, trace::MoveKind kind, DeviceModel& model, CUcontext context) {
    const Residency& residency = *model.residency;
    const uint32_t alloc_id = residency.alloc_id_of(span.first);
    auto it = allocations_.find(alloc_id);
    if (it == allocations_.end()) return;
    const MoveOrder order{it->second,
                          residency.chunk_offset(span.first),
                          residency.bytes_of({span.first, span.first + span.count - 1}),
                          kind,
                          launches_,
                          context ? context : it->second.context,
                          model.device};
    mover_.post([this, order](Executor& mover) { issue(order, mover); });
}

void Planner::evict_dead(DeadPiece piece, DeviceModel& model, CUcontext context) {
    // Memory of no allocation: the order names the piece itself.
    const MoveOrder order{PlannedAllocation{kDeadMemory, piece.address, piece.bytes, model.device, context},
                          0,
                          piece.bytes,
                          trace::MoveKind::Evict,
                          launches_,
                          context,
                          model.device};
    mover_.post([this, order](Executor& mover) { issue(order, mover); });
}

void Planner::report_move_times_to(MoveTimer::Sink sink) {
    move_timer_ = std::make_unique<MoveTimer>(rates::RateRefiner::Settings{}.min_bytes, std::move(sink));
}

void Planner::issue(const MoveOrder& order, Executor& mover) {
    const bool to_gpu = order.kind != trace::MoveKind::Evict;
    const uint64_t bytes = order.bytes;
    const DriverTable* table = driver_table_if_ready();
    if (!table || !table->cuMemPrefetchAsync_v2) return;
    CUstream stream = mover.stream_for(*table, order.context);
    if (!stream) return;
    // An eviction the host cannot hold is not made, though the model counts it
    // done: its pages stay on the GPU, the GPU holds more than the budget, and
    // the driver still evicts of its own accord should the device fill. A move
    // is a hint, so the data the kernels read is the same either way; an
    // eviction made would have risked the job itself to the host's OOM killer.
    // Asked here, as the move is issued, rather than as it is planned: the
    // guard's figures are then those of the moves made before it.
    if (!to_gpu && host_memory_ && !host_memory_->admit_eviction(bytes)) return;
    CUmemLocation location{};
    if (to_gpu) {
        location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        location.id = order.device;
    } else {
        location.type = CU_MEM_LOCATION_TYPE_HOST;
        location.id = 0;
    }
    // Only evictions are timed. A population moves no data; and the events around a
    // prefetch to the GPU do not bound its migration: on an H100 (driver 580) their
    // pairs read 276-734 GB/s for a link the probe measured at 49, fetches of bytes
    // the mover had evicted itself included. The probe's fetch rate stands.
    std::optional<MoveTimer::Started> timing;
    if (move_timer_) {
        move_timer_->poll(*table);
        if (order.kind == trace::MoveKind::Evict) timing = move_timer_->begin(*table, stream, bytes);
    }
    const auto call_start = std::chrono::steady_clock::now();
    const CUresult r = table->cuMemPrefetchAsync_v2(order.allocation.base + order.offset, bytes, location, 0, stream);
    if (timing)
        move_timer_->finish(*table, stream, *timing, r == CUDA_SUCCESS, order.device, rates::Move::Evict, bytes);
    stats_.add(stats_.move_calls);
    stats_.add(stats_.device(order.device).move_calls);
    stats_.add(stats_.move_call_ns, nanoseconds_since(call_start));
    if (r != CUDA_SUCCESS) {
        // Memory freed since the move was planned may be gone: only a failure
        // on a live block says anything.
        if (const auto live = registry_.find_base(order.allocation.base); live && live->id == order.allocation.id)
            UVMP_WARN_ONCE("a {} of {} failed ({}); the driver will fault the data in instead",
                           to_gpu ? "prefetch" : "eviction", format_size(bytes), error_name(r));
        return;
    }
    const bool dead = order.allocation.id == kDeadMemory;
    const MoveCount what = order.kind == trace::MoveKind::Populate ? MoveCount::Populate
                           : to_gpu                                ? MoveCount::Prefetch
                           : dead                                  ? MoveCount::EvictDead
                                                                   : MoveCount::Evict;
    stats_.moved(order.device, what, bytes);
    if (trace::TraceWriter* trace = trace_.load(std::memory_order_acquire)) {
        trace::Move record;
        record.kind = order.kind;
        // Dead memory belongs to no allocation: the record names its address.
        record.alloc_id = dead ? trace::kNoAllocation : order.allocation.id;
        record.offset = dead ? order.allocation.base + order.offset : order.offset;
        record.length = bytes;
        record.launches_before = order.launches_before;
        trace->move(record);
    }
}

double Planner::prediction_hit_rate() const {
    for (const auto& [device, model] : models_)
        if (auto rate = model.policy->prediction_hit_rate()) return *rate;
    return 0.0;
}

} // namespace uvmp::driver

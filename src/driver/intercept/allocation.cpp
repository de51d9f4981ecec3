// The allocation path: device allocations served from the managed pool (or
// passed through to the driver), their frees, stream-ordered and not, and the
// memory-pool calls whose figures the converted allocations change.
#include "driver/intercept/interceptor.h"

#include "core/util/log.h"
#include "core/util/size_parse.h"
#include "driver/pool/host_advice.h"
#include "driver/table/current_context.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace uvmp::driver {
namespace {

// The slab events of one pool call: one list per thread, so that a call
// allocates nothing for them once warmed up.
thread_local std::vector<pool::SlabEvent> t_slab_events;

// Keys of per-thread default streams: odd, so that no stream handle (a pointer)
// and neither the legacy stream's key (1) nor kNoStream is one of them.
std::atomic<uint64_t> g_next_thread_stream_key{3};

} // namespace

pool::StreamKey stream_key(StreamFlavor flavor, CUstream stream) {
    if (stream == CU_STREAM_PER_THREAD || (!stream && flavor == StreamFlavor::PerThread)) {
        thread_local uint64_t key = 0;
        if (!key) key = g_next_thread_stream_key.fetch_add(2, std::memory_order_relaxed) + 2;
        return key;
    }
    return reinterpret_cast<pool::StreamKey>(stream ? stream : CU_STREAM_LEGACY);
}

DeviceBudget* Interceptor::budget_for_current_device(const DriverTable& table, CUdevice& device,
                                                     CUcontext& context) {
    if (table.cuCtxGetDevice(&device) != CUDA_SUCCESS || device < 0 ||
        static_cast<size_t>(device) >= budgets_.size())
        return nullptr;
    if (table.cuCtxGetCurrent(&context) != CUDA_SUCCESS) return nullptr;
    DeviceBudget& budget = budgets_[static_cast<size_t>(device)];
    if (budget.configured()) return &budget;
    std::lock_guard lock(budgets_mutex_);
    if (!budget.configured()) {
        size_t free_bytes = 0, total_bytes = 0;
        if (table.cuMemGetInfo_v2(&free_bytes, &total_bytes) != CUDA_SUCCESS) return nullptr;
        budget.count_over_budget_in(&devices_over_budget_);
        budget.configure(config_, free_bytes, total_bytes);
        stats_.device_configured(device, budget.budget(), budget.guard_limit());
        log::info("device {}: {} total, {} free at start; physical guard {}, budget {}", device,
                  format_size(total_bytes), format_size(free_bytes), format_size(budget.guard_limit()),
                  format_size(budget.budget()));
        if (budget.budget() > budget.guard_limit() && budget.guard_enforced())
            log::warn("the budget ({}) is above the physical guard ({}): allocations past the "
                      "guard will fail",
                      format_size(budget.budget()), format_size(budget.guard_limit()));
        // Only a job under a budget moves data by the rates; the probe's buffer
        // counts against the guard like any slab.
        if (config_.budget) rates_.settle(device, table, budget);
    }
    return &budget;
}

Interceptor::ConvertOutcome Interceptor::convert(CUdeviceptr* dptr, size_t bytes, bool stream_ordered,
                                                 pool::StreamKey stream, CUmemoryPool pool,
                                                 const DriverTable& table) {
    CUdevice device = 0;
    CUcontext context = nullptr;
    DeviceBudget* budget = budget_for_current_device(table, device, context);
    if (!budget || !table.cuMemAllocManaged) return ConvertOutcome::Failed;
    pool::PoolBook* book = pools_.book(device, *budget);
    if (!book) return ConvertOutcome::Failed;
    const pool::PoolTag tag = stream_ordered ? pools_.tag_for(device, pool, table) : kNoPoolTag;
    // Before the pool may make its first slab, whose record belongs in the trace.
    open_trace_if_needed(table);
    t_slab_events.clear();
    SlabRefusal why;
    std::optional<pool::Block> block;
    bool host_homed = false;
    HostHomeRouter::Routed routed;
    if (host_homes_.home_of(device, bytes, budget->budget(), &routed) == placement::Home::Host) {
        if (pool::PoolBook* host = pools_.host_book(device)) {
            block = pools_.allocate(device, *host, bytes, stream, tag, now_ns(), t_slab_events, &why);
            host_homed = block.has_value();
        }
        // A wrong home costs speed, never a result: the GPU serves it. (The
        // host memory guard said so itself when it refused the slab.)
        if (!host_homed && why.reason != SlabRefusal::Reason::HostMemory)
            UVMP_WARN_ONCE("device {}: an allocation meant to live on the host got no host slab ({}); such "
                           "allocations are homed on the GPU",
                           device, why.reason == SlabRefusal::Reason::Advice ? "its advice was refused" : "none made");
    } else if (routed.arena_offset) {
        // Where the block lay a step before, if that memory is free for this stream.
        block = pools_.allocate_planned(device, *book, host_homes_.arena_bytes(), *routed.arena_offset, bytes, stream,
                                        tag, t_slab_events);
        host_homes_.note_planned(block.has_value());
    }
    if (!block) block = pools_.allocate(device, *book, bytes, stream, tag, now_ns(), t_slab_events, &why);
    record_slab_events(device, t_slab_events);
    if (!block) {
        if (why.reason == SlabRefusal::Reason::Guard) {
            stats_.add(stats_.guard_refusals);
            stats_.add(stats_.device(device).guard_refusals);
            log::warn("{}", budget->refusal_message(bytes, why.bytes));
            return ConvertOutcome::GuardRefused;
        }
        UVMP_WARN_ONCE("cuMemAllocManaged failed ({}); allocations that cannot be converted use "
                       "the driver's own allocator",
                       error_name(why.result));
        return ConvertOutcome::Failed;
    }
    pools_.mark_converted(device, tag);
    if (!host_homed) budget->add_live(block->size);
    *dptr = block->address;
    const uint32_t id = registry_.add(*dptr, bytes, device, context, stream_ordered, host_homed);
    stats_.converted_allocated(device, bytes);
    if (host_homed) {
        // Never moved, but the planner counts what launches name of it
        // (remote_*_bytes_named): homes read from an earlier trace can leave the
        // GPU's share within the budget from the start.
        plans_launches_.store(true, std::memory_order_relaxed);
        stats_.host_block_allocated(bytes);
        learner_.host_homed(id, routed.step_entry);
    }
    if (trace::TraceWriter* trace = this->trace()) {
        trace::Alloc record;
        record.id = id;
        record.address = *dptr;
        record.size = bytes;
        record.kind = trace::AllocKind::Pooled;
        record.slab = block->slab;
        record.device = device;
        record.time_ns = now_ns();
        record.launches_before = launch_seq_.load(std::memory_order_relaxed);
        trace->alloc(record);
    }
    // After its record: as the recording begins, this allocation is one of the live.
    learn_homes_if_over_budget(device, *budget, table);
    // Its pages live on the host: nothing populates or moves it, and the planner
    // only counts what launches name of it.
    if (host_homed) {
        if (planner_) executor_.post([this, id, bytes](Executor&) { planner_->host_allocation_added(id, bytes); });
        return ConvertOutcome::Converted;
    }
    if (planner_) {
        make_launch_lane();
        const PlannedAllocation planned{id, *dptr, bytes, device, context, block->fresh_begin, block->fresh_end};
        const uint64_t limit = budget->budget();
        executor_.post([this, planned, limit](Executor&) {
            planner_->allocation_added(planned, limit, config_.populate == Populate::Prefetch);
        });
    } else if (budget->converted_live() <= budget->budget()) {
        // Only the chunks no earlier block of the slab covered lack pages: the
        // rest kept theirs on the GPU, and populating them again would cost a
        // driver call an allocation for nothing.
        if (config_.populate == Populate::Prefetch && block->fresh_bytes())
            populate(id, bytes, *block, device, context);
    } else {
        // Policy none converts but never moves data: past the budget, the driver alone
        // decides what stays on the GPU, which a user who set a budget rarely means.
        UVMP_WARN_ONCE("device {}: converted memory ({}) is above the budget ({}), which policy none does "
                       "not keep; UVMP_POLICY=learned or demand-lru keeps it",
                       device, format_size(budget->converted_live()), format_size(budget->budget()));
    }
    return ConvertOutcome::Converted;
}

void Interceptor::populate(uint32_t id, uint64_t bytes, const pool::Block& block, CUdevice device, CUcontext context) {
    const CUdeviceptr ptr = block.address;
    const uint64_t range_begin = block.fresh_begin, range_end = block.fresh_end, slab_base = block.slab_base;
    executor_.post([this, id, ptr, bytes, range_begin, range_end, slab_base, device, context](Executor& executor) {
        const DriverTable* table = driver_table_if_ready();
        if (!table || !table->cuMemPrefetchAsync_v2) return;
        // Short-lived allocations are often freed before the worker gets to them;
        // their address may even belong to a newer allocation by now. Their chunks
        // count as covered all the same, and the blocks placed there next will not
        // populate them: they are populated while their slab is held.
        const auto allocation = registry_.find_base(ptr);
        const bool live = allocation && allocation->id == id;
        if (!live && !pools_.holds_slab(slab_base)) return;
        CUstream stream = executor.stream_for(*table, context);
        if (!stream) return;
        CUmemLocation location{};
        location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        location.id = device;
        const uint64_t start = now_ns();
        const CUresult r = table->cuMemPrefetchAsync_v2(range_begin, range_end - range_begin, location, 0, stream);
        if (r != CUDA_SUCCESS) {
            if (pools_.holds_slab(slab_base))
                UVMP_WARN_ONCE("populating a fresh allocation on the GPU failed ({}); kernels will "
                               "fault it in instead",
                               error_name(r));
            return;
        }
        stats_.moved(device, MoveCount::Populate, range_end - range_begin);
        if (trace::TraceWriter* trace = this->trace(); trace && live) {
            // The trace speaks of the allocation: the part of the range within it.
            const uint64_t begin = std::max<uint64_t>(range_begin, ptr);
            const uint64_t end = std::min<uint64_t>(range_end, ptr + bytes);
            trace::Move move;
            move.kind = trace::MoveKind::Populate;
            move.alloc_id = id;
            move.offset = begin - ptr;
            move.length = end > begin ? end - begin : 0;
            move.time_ns = start;
            move.duration_ns = now_ns() - start;
            move.launches_before = launch_seq_.load(std::memory_order_relaxed);
            trace->move(move);
        }
    });
}

void Interceptor::note_passthrough_device(CUdeviceptr ptr, uint64_t bytes, std::atomic<uint64_t>& reason,
                                          const DriverTable& table) {
    CUdevice device = -1;
    if (table.cuCtxGetDevice(&device) != CUDA_SUCCESS || !PassthroughLedger::tracks(device)) {
        // No device to charge: counted, and reported as the driver's own figures show it.
        stats_.passed_through(reason, bytes);
        return;
    }
    stats_.passed_through(reason, bytes, device);
    passthrough_.note_allocation(ptr, bytes, device);
}

void Interceptor::release_converted(const Allocation& allocation, uint64_t block_bytes) {
    if (allocation.host_homed) {
        stats_.host_block_freed(allocation.size);
        if (planner_) {
            const uint32_t id = allocation.id;
            executor_.post([this, id](Executor&) { planner_->host_allocation_removed(id); });
        }
    } else {
        if (planner_) {
            const uint32_t id = allocation.id;
            executor_.post([this, id](Executor&) { planner_->allocation_removed(id); });
        }
        budgets_[static_cast<size_t>(allocation.device) % budgets_.size()].remove_live(block_bytes);
    }
    stats_.converted_freed(allocation.device, allocation.size);
    if (trace::TraceWriter* trace = this->trace()) {
        trace::Free record;
        record.id = allocation.id;
        record.time_ns = now_ns();
        record.launches_before = launch_seq_.load(std::memory_order_relaxed);
        trace->free(record);
    }
}

CUresult Interceptor::give_back(const Allocation& allocation, pool::StreamKey stream, pool::FenceKey fence) {
    // A block homed on the host in place stays in its GPU slab.
    const bool host_slab = allocation.host_homed && !allocation.homed_in_place;
    pool::PoolBook* book =
        pools_.existing_book(allocation.device, host_slab ? placement::Home::Host : placement::Home::Gpu);
    // Forgotten before the block can serve another allocation, which may get
    // its address; as it was at that moment, whatever home it had moved to.
    const std::optional<Allocation> removed = book ? registry_.remove(allocation.base) : std::nullopt;
    if (!removed) {
        // Freed twice at once by two threads: the other one gives it back.
        if (const DriverTable* table = driver_table_if_ready(); table && fence)
            table->cuEventDestroy_v2(reinterpret_cast<CUevent>(static_cast<uintptr_t>(fence)));
        return CUDA_ERROR_INVALID_VALUE;
    }
    // The next block placed there is a GPU home.
    if (const DriverTable* table = driver_table_if_ready(); table && removed->homed_in_place)
        unadvise_host_home(*table, removed->base, removed->size, removed->device);
    t_slab_events.clear();
    const auto bytes = pools_.free(allocation.device, *book, allocation.base, stream, fence, now_ns(), t_slab_events);
    if (bytes) release_converted(*removed, *bytes);
    // After the block's removal reaches the planner: a slab that this free gave
    // back takes the block's dead bytes with it.
    record_slab_events(allocation.device, t_slab_events);
    if (!bytes) {
        UVMP_WARN_ONCE("a converted allocation at {:#x} was not in its device's pool; its bytes stay counted",
                       static_cast<unsigned long long>(allocation.base));
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult Interceptor::free(CUdeviceptr ptr, const DriverTable& table) {
    if (auto allocation = registry_.find_base(ptr)) {
        // The driver's cuMemFree waits for the work that may use memory from
        // cuMemAlloc; a stream-ordered allocation's owes no such wait (its user
        // must have seen the accesses complete), as with CUDA's own pools.
        if (!allocation->stream_ordered && table.cuCtxSynchronize) {
            ScopedContext in(table, static_cast<CUcontext>(allocation->context));
            if (const CUresult r = table.cuCtxSynchronize(); r != CUDA_SUCCESS) return r;
        }
        return give_back(*allocation, pool::kNoStream, 0);
    }
    if (pools_.holds_slab(ptr)) return CUDA_ERROR_INVALID_VALUE;
    const CUresult r = table.cuMemFree_v2(ptr);
    if (r == CUDA_SUCCESS) passthrough_.forget_allocation(ptr);
    return r;
}

CUresult Interceptor::free_async(CUdeviceptr ptr, CUstream stream, StreamFlavor flavor,
                                 const DriverTable& table) {
    auto allocation = registry_.find_base(ptr);
    if (!allocation) {
        if (pools_.holds_slab(ptr)) return CUDA_ERROR_INVALID_VALUE;
        auto real = flavor == StreamFlavor::PerThread ? table.cuMemFreeAsync_ptsz : table.cuMemFreeAsync;
        const CUresult r = real(ptr, stream);
        if (r == CUDA_SUCCESS) passthrough_.forget_allocation(ptr);
        return r;
    }
    // Stream-ordered free: the block is reusable at once in this stream, and in
    // others once the work queued before this point has run, which an event
    // recorded here tells. The caller never blocks, but where there is no event
    // (none to be had, or it cannot be recorded): the stream is waited for here,
    // and the block is free for all. Only that wait failing (the application's
    // stream failing) reaches the caller, and the allocation stays live then.
    auto free_after_waiting = [&] {
        const CUstream waited = !stream && flavor == StreamFlavor::PerThread ? CU_STREAM_PER_THREAD : stream;
        if (const CUresult r = table.cuStreamSynchronize(waited); r != CUDA_SUCCESS) return r;
        return give_back(*allocation, pool::kNoStream, 0);
    };
    CUevent event = nullptr;
    if (table.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return free_after_waiting();
    auto record = flavor == StreamFlavor::PerThread ? table.cuEventRecord_ptsz : table.cuEventRecord;
    // The pool takes a stream's frees in the order of their events: two threads
    // freeing on one stream must not record in one order and give back in the other.
    const pool::StreamKey key = stream_key(flavor, stream);
    // Handles are aligned pointers: their top bits after a multiplicative hash pick the lock.
    std::unique_lock in_order(free_order_[(key * 0x9E3779B97F4A7C15ull) >> 60]);
    if (record(event, stream) != CUDA_SUCCESS) {
        table.cuEventDestroy_v2(event);
        in_order.unlock();
        return free_after_waiting();
    }
    return give_back(*allocation, key, reinterpret_cast<pool::FenceKey>(event));
}

CUresult Interceptor::mem_pool_get_attribute(CUmemoryPool pool, CUmemPool_attribute attribute, void* value,
                                             const DriverTable& table) {
    // The driver checks the handle and the attribute; only its figures are replaced.
    const CUresult r = table.cuMemPoolGetAttribute(pool, attribute, value);
    if (r != CUDA_SUCCESS || !active_ || !value) return r;
    if (const auto ours = pools_.attribute(pool, attribute)) {
        const cuuint64_t figure = *ours;
        std::memcpy(value, &figure, sizeof figure);
    }
    return r;
}

CUresult Interceptor::mem_pool_set_attribute(CUmemoryPool pool, CUmemPool_attribute attribute, void* value,
                                             const DriverTable& table) {
    const CUresult r = table.cuMemPoolSetAttribute(pool, attribute, value);
    const bool high_mark = attribute == CU_MEMPOOL_ATTR_USED_MEM_HIGH || attribute == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH;
    if (r != CUDA_SUCCESS || !active_ || !value || !high_mark) return r;
    cuuint64_t written = 0;
    std::memcpy(&written, value, sizeof written);
    if (written == 0) pools_.reset_high(pool, attribute);
    return r;
}

CUresult Interceptor::mem_pool_trim_to(CUmemoryPool pool, size_t keep_bytes, const DriverTable& table) {
    if (active_) {
        t_slab_events.clear();
        if (const auto device = pools_.trim(pool, keep_bytes, t_slab_events))
            record_slab_events(*device, t_slab_events);
    }
    return table.cuMemPoolTrimTo(pool, keep_bytes);
}

void Interceptor::record_slab_events(int device, std::span<const pool::SlabEvent> events) {
    for (const pool::SlabEvent& e : events) {
        log::debug("device {}: slab {} ({} at {:#x}) {}", device, e.slab, format_size(e.bytes),
                   static_cast<unsigned long long>(e.base), e.released ? "given back" : "made");
        if (trace::TraceWriter* trace = this->trace()) {
            trace::Slab record;
            record.action = e.released ? trace::SlabAction::Released : trace::SlabAction::Created;
            record.id = e.slab;
            record.base = e.base;
            record.size = e.bytes;
            record.device = device;
            record.time_ns = now_ns();
            record.launches_before = launch_seq_.load(std::memory_order_relaxed);
            trace->slab(record);
        }
        // Whatever the planner remembered of dead bytes there no longer holds.
        if (planner_)
            executor_.post([this, device, base = e.base, bytes = e.bytes](Executor&) {
                planner_->slab_changed(device, base, bytes);
            });
    }
}

void Interceptor::adjust_pointer_attribute(CUpointer_attribute attribute, void* data,
                                           CUdeviceptr ptr) const {
    if (!active_ || !config_.hide_managed || !data || !registry_.contains(ptr)) return;
    if (attribute == CU_POINTER_ATTRIBUTE_IS_MANAGED) *static_cast<bool*>(data) = false;
    if (attribute == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
        *static_cast<CUmemorytype*>(data) = CU_MEMORYTYPE_DEVICE;
}

void Interceptor::note_ipc_failure(CUdeviceptr ptr, CUresult result) const {
    if (result == CUDA_SUCCESS || !registry_.contains(ptr)) return;
    UVMP_WARN_ONCE("cuIpcGetMemHandle failed ({}) on a converted allocation: CUDA IPC cannot share "
                   "managed memory between processes. Run jobs that share tensors across processes "
                   "with UVMP_ENABLE=0",
                   error_name(result));
}

} // namespace uvmp::driver

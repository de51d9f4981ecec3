#include "driver/interceptor.h"

#include "core/util/log.h"
#include "core/util/size_parse.h"
#include "driver/current_context.h"
#include "core/trace/recording/trace_tee.h"
#include "driver/kernel_timing.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <utility>

namespace uvmp::driver {
namespace {

std::atomic<Interceptor*> g_interceptor{nullptr};

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
// The same for the slab events of one pool call.
thread_local std::vector<pool::SlabEvent> t_slab_events;

// Keys of per-thread default streams: odd, so that no stream handle (a pointer)
// and neither the legacy stream's key (1) nor kNoStream is one of them.
std::atomic<uint64_t> g_next_thread_stream_key{3};

// The clock steady_clock reads, without the detour through the C++ runtime:
// recording reads it at every launch.
uint64_t monotonic_ns() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(now.tv_nsec);
}

} // namespace

Interceptor* interceptor() {
    // A driver the library cannot work with keeps every call as the program made it.
    if (const DriverTable* table = driver_table_if_ready(); table && !table->supported) return nullptr;
    return g_interceptor.load(std::memory_order_acquire);
}
void set_interceptor(Interceptor* instance) { g_interceptor.store(instance, std::memory_order_release); }

pool::StreamKey stream_key(StreamFlavor flavor, CUstream stream) {
    if (stream == CU_STREAM_PER_THREAD || (!stream && flavor == StreamFlavor::PerThread)) {
        thread_local uint64_t key = 0;
        if (!key) key = g_next_thread_stream_key.fetch_add(2, std::memory_order_relaxed) + 2;
        return key;
    }
    return reinterpret_cast<pool::StreamKey>(stream ? stream : CU_STREAM_LEGACY);
}

Interceptor::Interceptor(Config config, bool active)
    : config_(std::move(config)), active_(active),
      kernels_([this](const void* handle, KernelInfo& info) { describe_kernel(handle, info); }),
      pools_(config_, stats_), host_homes_(config_, stats_.host_homes), learner_(config_, host_homes_),
      start_ns_(monotonic_ns()) {
    planner_ = make_planner();
    if (active_ && !config_.trace_in.empty() && config_.policy != ResidencyPolicy::Learned &&
        config_.host_homes != HostHomes::On)
        log::warn("UVMP_TRACE_IN is used only with UVMP_POLICY=learned or UVMP_HOST_HOMES=on; ignored");
}

std::unique_ptr<Planner> Interceptor::make_planner() {
    if (!active_ || config_.policy == ResidencyPolicy::None) return nullptr;
    auto planner = std::make_unique<Planner>(config_.policy, config_.chunk_size, config_.trace_in, stats_, registry_,
                                             fences_, mover_);
    planner->count_budget_bound_in(&budget_bound_);
    // The device's pool exists by then: its blocks are what bound the budget.
    if (config_.pool_placement == PoolPlacement::OverDead)
        planner->on_dead_memory_known([this](CUdevice device, std::shared_ptr<const pool::PlacementHint> hint) {
            if (pool::PoolBook* book = pools_.existing_book(device)) book->set_placement_hint(std::move(hint));
        });
    return planner;
}

uint64_t Interceptor::now_ns() const { return monotonic_ns() - start_ns_; }

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
        // A wrong home costs speed, never a result: the GPU serves it.
        if (!host_homed)
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
        const PlannedAllocation planned{id, *dptr, bytes, device, context};
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
    if (table.cuCtxGetDevice(&device) != CUDA_SUCCESS || device < 0 ||
        static_cast<size_t>(device) >= passthrough_live_.size()) {
        // No device to charge: counted, and reported as the driver's own figures show it.
        stats_.passed_through(reason, bytes);
        return;
    }
    stats_.passed_through(reason, bytes, device);
    std::lock_guard lock(passthrough_mutex_);
    passthrough_[ptr] = PassthroughAllocation{bytes, device};
    passthrough_live_[static_cast<size_t>(device)] += bytes;
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
    pool::PoolBook* book = pools_.existing_book(
        allocation.device, allocation.host_homed ? placement::Home::Host : placement::Home::Gpu);
    // Forgotten before the block can serve another allocation, which may get its address.
    if (!book || !registry_.remove(allocation.base)) {
        // Freed twice at once by two threads: the other one gives it back.
        if (const DriverTable* table = driver_table_if_ready(); table && fence)
            table->cuEventDestroy_v2(reinterpret_cast<CUevent>(static_cast<uintptr_t>(fence)));
        return CUDA_ERROR_INVALID_VALUE;
    }
    t_slab_events.clear();
    const auto bytes = pools_.free(*book, allocation.base, stream, fence, now_ns(), t_slab_events);
    record_slab_events(allocation.device, t_slab_events);
    if (!bytes) {
        UVMP_WARN_ONCE("a converted allocation at {:#x} was not in its device's pool; its bytes stay counted",
                       static_cast<unsigned long long>(allocation.base));
        return CUDA_ERROR_INVALID_VALUE;
    }
    release_converted(allocation, *bytes);
    return CUDA_SUCCESS;
}

void Interceptor::forget_passthrough(CUdeviceptr ptr) {
    std::lock_guard lock(passthrough_mutex_);
    if (auto it = passthrough_.find(ptr); it != passthrough_.end()) {
        passthrough_live_[static_cast<size_t>(it->second.device)] -= it->second.bytes;
        stats_.passthrough_freed(it->second.device, it->second.bytes);
        passthrough_.erase(it);
    }
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
    if (r == CUDA_SUCCESS) forget_passthrough(ptr);
    return r;
}

CUresult Interceptor::free_async(CUdeviceptr ptr, CUstream stream, StreamFlavor flavor,
                                 const DriverTable& table) {
    auto allocation = registry_.find_base(ptr);
    if (!allocation) {
        if (pools_.holds_slab(ptr)) return CUDA_ERROR_INVALID_VALUE;
        auto real = flavor == StreamFlavor::PerThread ? table.cuMemFreeAsync_ptsz : table.cuMemFreeAsync;
        const CUresult r = real(ptr, stream);
        if (r == CUDA_SUCCESS) forget_passthrough(ptr);
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

namespace {

// This thread's launch hits as trace accesses (extent unknown).
std::span<const trace::Access> hits_as_accesses() {
    thread_local std::vector<trace::Access> accesses;
    accesses.clear();
    for (const AccessHit& h : t_hits) accesses.push_back({h.alloc_id, h.offset, 0});
    return accesses;
}

} // namespace

uint64_t Interceptor::observe_launch_untimed(const LaunchSite& site) {
    const KernelInfo& info = kernel_info(site.function);
    t_hits.clear();
    if (site.params) {
        scan_kernel_params(info, site.params, registry_, t_hits);
    } else if (site.extra) {
        const ParamBuffer buffer = param_buffer(site.extra);
        scan_param_buffer(buffer.data, buffer.bytes, registry_, t_hits);
    }
    if (!t_hits.empty()) {
        stats_.add(stats_.launches_with_access);
        stats_.add(stats_.access_entries, t_hits.size());
    }
    if (const CaptureState capture = capture_of(site.flavor, site.stream, !t_hits.empty()); capture.capturing) {
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
    if (!t_hits.empty() && planner_) post_to_planner(site, seq, info.id, t_hits);
    if (trace::TraceWriter* trace = this->trace())
        record_launch(*trace, seq, info.id, site.grid, site.block, site.stream, hits_as_accesses());
    return seq;
}

void Interceptor::record_launch(trace::TraceWriter& trace, uint64_t seq, uint32_t kernel_id,
                                const unsigned (&grid)[3], const unsigned (&block)[3], CUstream stream,
                                std::span<const trace::Access> accesses) {
    trace::Launch record;
    record.seq = seq;
    record.kernel_id = kernel_id;
    for (int i = 0; i < 3; ++i) {
        record.grid[i] = grid[i];
        record.block[i] = block[i];
    }
    record.stream = reinterpret_cast<uint64_t>(stream);
    record.time_ns = now_ns();
    trace.launch(record, accesses);
}

CaptureState Interceptor::capture_of(StreamFlavor flavor, CUstream stream, bool has_accesses) const {
    // A driver call: made only where a plan or a record depends on it, and once
    // some capture may have begun.
    if (!trace() && !(planner_ && has_accesses)) return {};
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
    thread_local CUcontext t_context = nullptr;
    thread_local CUdevice t_device = -1;
    if (origin.context != t_context) {
        if (table->cuCtxGetDevice(&t_device) != CUDA_SUCCESS) t_device = -1;
        t_context = origin.context;
    }
    origin.device = t_device;
    return origin;
}

void Interceptor::mark_iteration() {
    const uint64_t index = stats_.iterations.fetch_add(1, std::memory_order_relaxed);
    if (trace::TraceWriter* trace = this->trace()) {
        trace::Iteration record;
        record.index = index;
        record.launches_before = launch_seq_.load(std::memory_order_relaxed);
        record.time_ns = now_ns();
        trace->iteration(record);
    }
}

trace::Header Interceptor::trace_header(const DriverTable& table) const {
    trace::Header header;
    header.library_version = UVMP_VERSION_STRING;
    header.chunk_bytes = config_.chunk_size;
    header.pid = static_cast<int32_t>(getpid());
    header.start_time_ns = static_cast<uint64_t>(std::time(nullptr)) * 1000000000ull;
    for (const auto& [key, value] : config_.values) header.options[key] = value;
    CUdevice device = 0;
    if (table.cuCtxGetDevice(&device) == CUDA_SUCCESS) {
        char name[256] = {};
        if (table.cuDeviceGetName(name, sizeof name - 1, device) == CUDA_SUCCESS) header.device_name = name;
        size_t total = 0;
        if (table.cuDeviceTotalMem_v2(&total, device) == CUDA_SUCCESS) header.device_total_bytes = total;
        header.budget_bytes = budgets_[static_cast<size_t>(device) % budgets_.size()].budget();
    }
    int version = 0;
    if (table.cuDriverGetVersion(&version) == CUDA_SUCCESS) header.driver_version = version;
    header.rank = process_rank(&process_getenv).value_or(-1);
    return header;
}

void Interceptor::open_trace_if_needed(const DriverTable& table) {
    if (config_.trace_out.empty()) return;
    std::call_once(trace_once_, [&] {
        trace::TraceWriter::Options options;
        options.path = expand_path_pattern(config_.trace_out, getpid(), &uvmp::process_getenv);
        options.buffer_bytes = config_.trace_buffer;
        std::string error;
        trace_file_ = trace::TraceWriter::open(options, trace_header(table), error);
        if (!trace_file_) {
            log::warn("cannot record the trace: {}", error);
            return;
        }
        log::info("recording the access trace to {}", options.path);
        route_trace_records(nullptr);
        if (planner_) {
            trace::TraceWriter* writer = trace_file_.get();
            executor_.post([this, writer](Executor&) { planner_->set_trace(writer); });
        }
        if (config_.trace_timing && !start_kernel_timing(error)) log::warn("{}", error);
    });
}

void Interceptor::route_trace_records(trace::TraceWriter* recording) {
    std::lock_guard lock(trace_route_mutex_);
    trace::TraceWriter* file = trace_file_.get();
    if (file && recording) {
        if (!trace_tee_) trace_tee_ = std::make_unique<trace::TraceTee>(*file, *recording);
        trace_.store(trace_tee_.get(), std::memory_order_release);
    } else {
        trace_.store(file ? file : recording, std::memory_order_release);
    }
}

bool Interceptor::start_kernel_timing(std::string& error) {
    // Started once in the process, for the trace file, the learner or both.
    return KernelTiming::running() ||
           KernelTiming::start([this](uint64_t seq, uint64_t start, uint64_t duration) { kernel_timed(seq, start, duration); },
                               error);
}

void Interceptor::kernel_timed(uint64_t seq, uint64_t start_ns, uint64_t duration_ns) {
    if (config_.trace_timing && trace_file_) trace_file_->kernel_duration(seq, duration_ns);
    learner_.kernel_timed(seq, start_ns, duration_ns);
}

void Interceptor::learn_homes_if_over_budget(int device, const DeviceBudget& budget, const DriverTable& table) {
    if (!learner_.armed() || budget.converted_live() <= budget.budget()) return;
    std::call_once(learning_once_, [&] {
        std::vector<trace::Alloc> live;
        const uint64_t launches_before = launch_seq_.load(std::memory_order_relaxed);
        for (const Allocation& a : registry_.snapshot()) {
            trace::Alloc record;
            record.id = a.id;
            record.address = a.base;
            record.size = a.size;
            record.kind = a.host_homed ? trace::AllocKind::Host : trace::AllocKind::Pooled;
            record.device = a.device;
            record.launches_before = launches_before;
            live.push_back(record);
        }
        HomeLearner::Callbacks callbacks;
        callbacks.routing = [this] { stats_.host_homes.used_from(launch_seq_.load(std::memory_order_relaxed)); };
        callbacks.given_back = [this](uint64_t entries, uint64_t bytes, bool reverted) {
            stats_.host_homes.given_back(entries, bytes, reverted);
        };
        callbacks.trial_judged = [this](const HostHomeTrial& trial) { stats_.host_homes.trial_judged(trial); };
        callbacks.done = [this] {
            route_trace_records(nullptr);
            if (!config_.trace_timing) KernelTiming::stop();
        };
        trace::MemoryRecorder* recording =
            learner_.begin(device, budget.budget(), trace_header(table), live, std::move(callbacks));
        if (!recording) return;
        std::string error;
        if (!start_kernel_timing(error)) return learner_.give_up(error);
        route_trace_records(recording);
    });
}

void Interceptor::finish() {
    if (finished_.exchange(true)) return;
    executor_.stop();
    mover_.stop();
    // What the job freed goes back to the driver, so that the counts below are final.
    pools_.trim_all([this](int device, std::span<const pool::SlabEvent> events) { record_slab_events(device, events); });
    learner_.stop();
    if (trace_file_) {
        KernelTiming::flush();
        trace_file_->close();
        stats_.trace_records_written.store(trace_file_->records_written(), std::memory_order_relaxed);
        stats_.trace_records_dropped.store(trace_file_->records_dropped(), std::memory_order_relaxed);
    }
    const bool did_anything = stats_.launches_seen.load() || stats_.allocs_converted.load() ||
                              stats_.allocs_passed_through.load();
    host_homes_.report();
    if (config_.summary && did_anything) {
        for (const std::string& line : stats_.summary_lines()) log::raw_stderr_line(log::prefix() + line);
        if (planner_)
            log::raw_stderr_line(log::prefix() + "policy " + std::string(to_string(config_.policy)) +
                                 ", prediction hit rate " +
                                 std::to_string(planner_->prediction_hit_rate()));
    }
    if (!config_.stats_file.empty() && did_anything) {
        const std::string path = expand_path_pattern(config_.stats_file, getpid(), &uvmp::process_getenv);
        std::ofstream out(path);
        if (out) out << stats_.to_json(active_, getpid()) << "\n";
        else log::raw_stderr_line(log::prefix() + "cannot write the stats file '" + path + "'");
    }
}

} // namespace uvmp::driver

#include "driver/pool/managed_pool.h"

#include "core/util/elapsed.h"
#include "core/util/log.h"
#include "core/util/round_up.h"
#include "core/util/size_parse.h"
#include "driver/hostmem/host_page_maker.h"
#include "driver/pool/host_advice.h"
#include "driver/table/current_context.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>
#include <stdexcept>

namespace uvmp::driver {
namespace {

// What refused the slab the calling thread's allocation asked for. The pool asks
// for slabs on the allocating thread, inside PoolBook::allocate.
thread_local SlabRefusal t_refusal;

CUevent as_event(pool::FenceKey fence) { return reinterpret_cast<CUevent>(static_cast<uintptr_t>(fence)); }

bool is_used_attribute(CUmemPool_attribute attribute) {
    return attribute == CU_MEMPOOL_ATTR_USED_MEM_CURRENT || attribute == CU_MEMPOOL_ATTR_USED_MEM_HIGH;
}

bool is_reserved_attribute(CUmemPool_attribute attribute) {
    return attribute == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT || attribute == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH;
}

bool valid_device(int device) { return device >= 0 && static_cast<size_t>(device) < ManagedPools::kMaxDevices; }

// Slabs: managed allocations in the context current when each is made, counted
// against the device's physical guard before they are asked of the driver.
// Host-homed slabs (UVMP_HOST_HOMES) are managed allocations too, advised once
// when made to live on the host and be reached by the device. Their pages stay
// on the host, but the guard counts them all the same: it bounds the managed
// memory the library asks of the driver, which must never exceed what the
// device had free, wherever the driver would put its pages.
// A host-homed slab asks the host memory guard first: its pages take host RAM.
class SlabMaker final : public pool::SlabSource {
public:
    // `host_memory`: the guard a host-homed slab asks; nullptr for a GPU home.
    // `pages`: where a host-homed slab's pages are made ahead; nullptr: by the GPU's first writes.
    SlabMaker(int device, HostMemoryGuard* host_memory, HostPageMaker* pages, DeviceBudget& budget, Stats& stats,
              const std::atomic<bool>& finishing)
        : device_(device), host_memory_(host_memory), pages_(pages), budget_(budget), stats_(stats),
          finishing_(finishing) {}

    std::optional<uint64_t> create(uint64_t bytes) override {
        const uint64_t size = round_up(bytes, kSlabGranularity);
        if (host_memory_ && !host_memory_->admit_host_slab(size)) {
            t_refusal = {SlabRefusal::Reason::HostMemory, size, CUDA_SUCCESS};
            return std::nullopt;
        }
        if (!budget_.try_reserve(size)) {
            t_refusal = {SlabRefusal::Reason::Guard, size, CUDA_SUCCESS};
            return std::nullopt;
        }
        const DriverTable* table = driver_table_if_ready();
        CUdeviceptr base = 0;
        const CUresult r = table && table->cuMemAllocManaged
                               ? table->cuMemAllocManaged(&base, size, CU_MEM_ATTACH_GLOBAL)
                               : CUDA_ERROR_NOT_INITIALIZED;
        if (r != CUDA_SUCCESS) {
            budget_.release(size);
            t_refusal = {SlabRefusal::Reason::Driver, size, r};
            return std::nullopt;
        }
        // Advised per slab, never per block: blocks come and go inside it.
        if (host()) {
            if (const CUresult advised = advise_host_home(*table, base, size, device_); advised != CUDA_SUCCESS) {
                // Unadvised, the driver would migrate its pages like any other's:
                // it is no host home, and the allocation takes a GPU slab instead.
                // (Freed, its bytes leave the guard; else the driver may still hold them.)
                if (const CUresult freed = table->cuMemFree_v2(base); freed != CUDA_SUCCESS)
                    log::debug("device {}: freeing a host slab whose advice failed failed too ({})", device_,
                               error_name(freed));
                else budget_.release(size);
                t_refusal = {SlabRefusal::Reason::Advice, size, advised};
                return std::nullopt;
            }
        }
        // Managed allocations are page-aligned; the pool takes the base as chunk-aligned
        // either way, so a base off the 2 MiB grid only shifts chunks against pages.
        static std::atomic<bool> noted_unaligned{false};
        if (base % kSlabGranularity != 0 && !noted_unaligned.exchange(true, std::memory_order_relaxed))
            log::info("device {}: a managed slab starts off a 2 MiB boundary ({:#x}); the residency model's "
                      "chunks then straddle the driver's large pages",
                      device_, static_cast<unsigned long long>(base));
        CUcontext context = nullptr;
        if (table->cuCtxGetCurrent(&context) != CUDA_SUCCESS) context = nullptr;
        {
            std::lock_guard lock(mutex_);
            slabs_[base] = {size, context};
        }
        if (host()) stats_.host_slab_created(size);
        else stats_.slab_created(size);
        if (pages_) pages_->make(base, size);
        return base;
    }

    bool is_slab(uint64_t base) {
        std::lock_guard lock(mutex_);
        return slabs_.count(base) != 0;
    }

    void lock_for_fork() { mutex_.lock(); }
    void unlock_after_fork() { mutex_.unlock(); }

    void release(uint64_t base, uint64_t bytes) override {
        Slab slab{round_up(bytes, kSlabGranularity), nullptr};
        {
            std::lock_guard lock(mutex_);
            if (auto it = slabs_.find(base); it != slabs_.end()) {
                slab = it->second;
                slabs_.erase(it);
            }
        }
        // No thread of the page maker may be in its pages when it goes.
        if (pages_) pages_->forget(base);
        const DriverTable* table = driver_table_if_ready();
        if (!table) return;
        CUresult r = CUDA_SUCCESS;
        {
            ScopedContext in(*table, slab.context);
            // Timed: the free waits for the GPU's queued work, and launches from
            // every other thread wait with it (slab free run 2), so the
            // application loses its lead over the GPU for this long.
            const auto start = std::chrono::steady_clock::now();
            r = table->cuMemFree_v2(base);
            stats_.add(stats_.pool_slab_release_ns, nanoseconds_since(start));
        }
        if (r != CUDA_SUCCESS) {
            // At exit the runtime may have destroyed the context, and the slab with it.
            if (finishing_.load(std::memory_order_relaxed)) {
                log::debug("device {}: slab at {:#x} not freed at exit ({}): gone with its context", device_,
                           static_cast<unsigned long long>(base), error_name(r));
            } else {
                // The bytes stay counted against the guard: the driver may still hold them.
                UVMP_WARN_ONCE("device {}: freeing an idle managed slab failed ({}); its {} stay counted "
                               "against the physical guard",
                               device_, error_name(r), format_size(slab.bytes));
                return;
            }
        }
        budget_.release(slab.bytes);
        if (host()) stats_.host_slab_released(slab.bytes);
        else stats_.slab_released(slab.bytes);
    }

private:
    struct Slab {
        uint64_t bytes;
        CUcontext context;
    };
    bool host() const { return host_memory_ != nullptr; }

    int device_;
    HostMemoryGuard* host_memory_; // a host-homed slab's guard; nullptr for a GPU home
    HostPageMaker* pages_;
    DeviceBudget& budget_;
    Stats& stats_;
    const std::atomic<bool>& finishing_;
    std::mutex mutex_;
    std::unordered_map<uint64_t, Slab> slabs_;
};

// Fences are events recorded at a stream-ordered free. At exit the driver may
// already have torn the context down, and its errors are expected.
class EventFences final : public pool::FenceOracle {
public:
    explicit EventFences(const std::atomic<bool>& finishing) : finishing_(finishing) {}

    bool completed(pool::FenceKey fence) override {
        const DriverTable* table = driver_table_if_ready();
        if (!fence || !table || !table->cuEventQuery) return true;
        const CUresult r = table->cuEventQuery(as_event(fence));
        if (r == CUDA_SUCCESS) return true;
        if (r == CUDA_ERROR_NOT_READY) return false;
        // A context that fails its queries runs nothing more; waiting would never end.
        failed("cuEventQuery", r);
        return true;
    }

    void wait(pool::FenceKey fence) override {
        const DriverTable* table = driver_table_if_ready();
        if (!fence || !table) return;
        if (const CUresult r = table->cuEventSynchronize(as_event(fence)); r != CUDA_SUCCESS)
            failed("cuEventSynchronize", r);
    }

    void destroy(pool::FenceKey fence) override {
        const DriverTable* table = driver_table_if_ready();
        if (!fence || !table) return;
        if (const CUresult r = table->cuEventDestroy_v2(as_event(fence)); r != CUDA_SUCCESS)
            log::debug("cuEventDestroy on a free's fence failed ({})", error_name(r));
    }

private:
    void failed(const char* call, CUresult r) {
        if (finishing_.load(std::memory_order_relaxed)) {
            log::debug("{} on a free's fence failed at exit ({})", call, error_name(r));
            return;
        }
        UVMP_WARN_ONCE("{} on a free's fence failed ({}); the freed memory counts as reusable", call, error_name(r));
    }

    const std::atomic<bool>& finishing_;
};

pool::PoolConfig pool_config_from(const Config& config) {
    pool::PoolConfig p;
    p.slab_bytes = round_up(config.pool_slab_size, kSlabGranularity);
    p.chunk_bytes = config.chunk_size;
    p.retain_bytes = config.pool_retain;
    p.release_after_ns = config.pool_release_after;
    return p;
}

} // namespace

// One book of slabs of one home. Host-homed blocks get a book of their own
// rather than a home tag on each slab of one book: a block must never share a
// slab with blocks of the other home (advice holds per range, and a GPU-homed
// neighbour would be migrated with its pages), and a separate book keeps that
// by construction, leaving the pool's bookkeeping as it is.
struct ManagedPools::Slabs {
    // `host_memory`: for a book of host-homed slabs, the guard they ask; nullptr for the GPU's.
    // `pages_ahead`: a host book's slabs have their pages made by threads of their own.
    Slabs(int device, HostMemoryGuard* host_memory, bool pages_ahead, DeviceBudget& budget, Stats& stats,
          const std::atomic<bool>& finishing, const pool::PoolConfig& config)
        : pages(host_memory && pages_ahead ? std::make_unique<HostPageMaker>(HostPageMaker::default_threads(), stats)
                                           : nullptr),
          slabs(device, host_memory, pages.get(), budget, stats, finishing), fences(finishing),
          book(config, slabs, fences) {}
    std::unique_ptr<HostPageMaker> pages; // first: the book's last slabs go back before it stops
    SlabMaker slabs;
    EventFences fences;
    pool::PoolBook book; // last: it gives its slabs back and its fences up first
};

struct ManagedPools::Device {
    Device(int device, DeviceBudget& budget, Stats& stats, const std::atomic<bool>& finishing,
           const pool::PoolConfig& config)
        : budget(budget), gpu(device, nullptr, false, budget, stats, finishing, config), view(config.chunk_bytes) {}
    ~Device() { delete host.load(std::memory_order_acquire); }
    DeviceBudget& budget;
    Slabs gpu;
    std::atomic<Slabs*> host{nullptr}; // made on the first host-homed allocation
    // With host slabs, what the application allocated is both books' figures
    // together; their high marks are kept here, since the sum of each book's
    // marks would overstate them. They only rise when a block is allocated.
    std::mutex highs_mutex;
    std::unordered_map<pool::PoolTag, uint64_t> used_high;
    // The reserved figure frameworks read: the blocks of both homes as one pool.
    pool::SinglePoolView view;
    Device* next_parent = nullptr; // ManagedPools::parents_
    std::atomic<bool> arena_refused{false};
    // The GPU book's arena once made (0 before): a planned allocation then takes the book's lock once.
    std::atomic<uint64_t> arena_base{0};
};

ManagedPools::ManagedPools(const Config& config, Stats& stats, HostMemoryGuard& host_memory)
    : pool_config_(pool_config_from(config)), host_config_(pool_config_), host_pages_ahead_(config.host_pages_ahead),
      stats_(stats), host_memory_(host_memory) {
    host_config_.first_slab_id = kFirstHostSlabId;
}

ManagedPools::~ManagedPools() {
    for (auto& slot : devices_) delete slot.load(std::memory_order_acquire);
}

ManagedPools::Device* ManagedPools::device_of(int device) const {
    return valid_device(device) ? devices_[static_cast<size_t>(device)].load(std::memory_order_acquire) : nullptr;
}

pool::PoolBook* ManagedPools::book(int device, DeviceBudget& budget) {
    if (!valid_device(device)) return nullptr;
    auto& slot = devices_[static_cast<size_t>(device)];
    if (Device* d = slot.load(std::memory_order_acquire)) return &d->gpu.book;
    std::lock_guard lock(make_mutex_);
    if (Device* d = slot.load(std::memory_order_acquire)) return &d->gpu.book;
    try {
        auto* made = new Device(device, budget, stats_, finishing_, pool_config_);
        slot.store(made, std::memory_order_release);
        log::debug("device {}: managed pool of {} slabs ({} chunks, kept {}, idle ones given back after {} ms)",
                   device, format_size(pool_config_.slab_bytes), format_size(pool_config_.chunk_bytes),
                   format_size(pool_config_.retain_bytes), pool_config_.release_after_ns / 1'000'000);
        return &made->gpu.book;
    } catch (const std::exception& e) {
        UVMP_WARN_ONCE("the managed pool cannot be set up ({}); allocations use the driver's own allocator",
                       e.what());
        return nullptr;
    }
}

pool::PoolBook* ManagedPools::host_book(int device) {
    Device* d = device_of(device);
    if (!d) return nullptr;
    if (Slabs* h = d->host.load(std::memory_order_acquire)) return &h->book;
    std::lock_guard lock(make_mutex_);
    if (Slabs* h = d->host.load(std::memory_order_acquire)) return &h->book;
    try {
        auto* made = new Slabs(device, &host_memory_, host_pages_ahead_, d->budget, stats_, finishing_, host_config_);
        d->host.store(made, std::memory_order_release);
        log::debug("device {}: host-homed slabs of {} for allocations that live on the host", device,
                   format_size(host_config_.slab_bytes));
        return &made->book;
    } catch (const std::exception& e) {
        UVMP_WARN_ONCE("host-homed slabs cannot be set up ({}); allocations are homed on the GPU", e.what());
        return nullptr;
    }
}

pool::PoolBook* ManagedPools::existing_book(int device, placement::Home home) const {
    Device* d = device_of(device);
    if (!d) return nullptr;
    if (home == placement::Home::Gpu) return &d->gpu.book;
    Slabs* h = d->host.load(std::memory_order_acquire);
    return h ? &h->book : nullptr;
}

std::optional<pool::Block> ManagedPools::allocate(int device, pool::PoolBook& book, uint64_t bytes,
                                                  pool::StreamKey stream, pool::PoolTag tag, uint64_t now_ns,
                                                  std::vector<pool::SlabEvent>& events, SlabRefusal* why) {
    t_refusal = {};
    std::optional<pool::Block> block;
    try {
        block = book.allocate(bytes, stream, tag, now_ns, &events);
    } catch (const std::exception& e) {
        // The book's own memory, say: the allocation goes to the driver instead.
        UVMP_WARN_ONCE("the managed pool failed an allocation ({})", e.what());
        t_refusal = {SlabRefusal::Reason::Driver, 0, CUDA_ERROR_OUT_OF_MEMORY};
    }
    if (!block && why) *why = t_refusal;
    if (block)
        if (Device* d = device_of(device)) note_allocated(*d, tag, block->size);
    return block;
}

std::optional<pool::Block> ManagedPools::allocate_planned(int device, pool::PoolBook& book, uint64_t arena_bytes,
                                                          uint64_t offset, uint64_t bytes, pool::StreamKey stream,
                                                          pool::PoolTag tag, std::vector<pool::SlabEvent>& events) {
    Device* d = device_of(device);
    if (!d || arena_bytes == 0 || d->arena_refused.load(std::memory_order_relaxed)) return std::nullopt;
    std::optional<pool::Block> block;
    try {
        uint64_t base = d->arena_base.load(std::memory_order_acquire);
        if (base == 0) {
            t_refusal = {};
            const std::optional<uint64_t> made = book.make_arena(arena_bytes, &events);
            if (!made) {
                if (!d->arena_refused.exchange(true, std::memory_order_relaxed))
                    log::warn("device {}: no arena of {} for the layout planned for the step ({}); blocks are placed "
                              "as they come",
                              device, format_size(arena_bytes),
                              t_refusal.reason == SlabRefusal::Reason::Guard ? "the physical guard refused it"
                                                                              : error_name(t_refusal.result));
                return std::nullopt;
            }
            // make_arena gives every thread the one arena; the first to note it says so.
            if (d->arena_base.exchange(*made, std::memory_order_acq_rel) == 0)
                log::info("device {}: an arena of {} at {:#x} for the layout planned for the step", device,
                          format_size(arena_bytes), static_cast<unsigned long long>(*made));
            base = *made;
        }
        block = book.allocate_at(base + offset, bytes, stream, tag);
    } catch (const std::exception& e) {
        // The book's own memory, say: the pool places the block as it comes.
        UVMP_WARN_ONCE("the managed pool failed a planned allocation ({})", e.what());
        return std::nullopt;
    }
    if (block) note_allocated(*d, tag, block->size);
    return block;
}

void ManagedPools::note_allocated(Device& d, pool::PoolTag tag, uint64_t bytes) {
    d.view.allocated(bytes);
    Slabs* h = d.host.load(std::memory_order_acquire);
    if (!h) return;
    const pool::PoolFigures gpu = d.gpu.book.figures(tag), host = h->book.figures(tag);
    std::lock_guard lock(d.highs_mutex);
    uint64_t& used = d.used_high[tag];
    used = std::max(used, gpu.used + host.used);
}

uint64_t ManagedPools::held_bytes(const Device& d) {
    const Slabs* h = d.host.load(std::memory_order_acquire);
    return d.gpu.book.figures().reserved + (h ? h->book.figures().reserved : 0);
}

std::optional<uint64_t> ManagedPools::free(int device, pool::PoolBook& book, uint64_t address,
                                           pool::StreamKey stream, pool::FenceKey fence, uint64_t now_ns,
                                           std::vector<pool::SlabEvent>& events) {
    try {
        const std::optional<uint64_t> bytes = book.free(address, stream, fence, now_ns, &events);
        if (bytes)
            if (Device* d = device_of(device)) d->view.freed(*bytes);
        return bytes;
    } catch (const std::exception& e) {
        UVMP_WARN_ONCE("the managed pool failed a free ({}); the block stays in use", e.what());
        return std::nullopt;
    }
}

pool::PoolTag ManagedPools::tag_for(int device, CUmemoryPool pool, const DriverTable& table) {
    if (pool || !valid_device(device)) return reinterpret_cast<pool::PoolTag>(pool);
    const auto index = static_cast<size_t>(device);
    if (const uint64_t current = current_pool_[index].load(std::memory_order_acquire)) return current;
    CUmemoryPool current = nullptr, fallback = nullptr;
    if (table.cuDeviceGetMemPool && table.cuDeviceGetMemPool(&current, device) == CUDA_SUCCESS)
        note_current_pool(device, current);
    if (table.cuDeviceGetDefaultMemPool && table.cuDeviceGetDefaultMemPool(&fallback, device) == CUDA_SUCCESS)
        note_default_pool(device, fallback);
    return reinterpret_cast<pool::PoolTag>(current ? current : fallback);
}

void ManagedPools::mark_converted(int device, pool::PoolTag tag) {
    if (!valid_device(device) || tag == kNoPoolTag) return;
    auto& last = last_tag_[static_cast<size_t>(device)];
    if (last.load(std::memory_order_relaxed) == tag) return;
    {
        std::lock_guard lock(tags_mutex_);
        converted_tags_.emplace(tag, device);
    }
    last.store(tag, std::memory_order_relaxed);
}

bool ManagedPools::holds_slab(uint64_t base) const {
    for (const auto& slot : devices_) {
        Device* d = slot.load(std::memory_order_acquire);
        if (!d) continue;
        if (d->gpu.slabs.is_slab(base)) return true;
        if (Slabs* h = d->host.load(std::memory_order_acquire); h && h->slabs.is_slab(base)) return true;
    }
    return false;
}

void ManagedPools::note_default_pool(int device, CUmemoryPool pool) {
    if (valid_device(device) && pool)
        default_pool_[static_cast<size_t>(device)].store(reinterpret_cast<uint64_t>(pool), std::memory_order_release);
}

void ManagedPools::note_current_pool(int device, CUmemoryPool pool) {
    if (valid_device(device) && pool)
        current_pool_[static_cast<size_t>(device)].store(reinterpret_cast<uint64_t>(pool), std::memory_order_release);
}

std::optional<int> ManagedPools::converted_device(CUmemoryPool pool) const {
    std::lock_guard lock(tags_mutex_);
    auto it = converted_tags_.find(reinterpret_cast<pool::PoolTag>(pool));
    if (it == converted_tags_.end()) return std::nullopt;
    return it->second;
}

bool ManagedPools::is_device_pool(int device, pool::PoolTag tag) const {
    const auto index = static_cast<size_t>(device);
    return tag == default_pool_[index].load(std::memory_order_acquire) ||
           tag == current_pool_[index].load(std::memory_order_acquire);
}

// The application does not know where its memory lives: a pool's figures are
// those of its blocks of either home.
std::optional<uint64_t> ManagedPools::attribute(CUmemoryPool pool, CUmemPool_attribute attribute) const {
    if (!is_used_attribute(attribute) && !is_reserved_attribute(attribute)) return std::nullopt;
    const auto device = converted_device(pool);
    Device* d = device ? device_of(*device) : nullptr;
    if (!d) return std::nullopt;
    const auto tag = reinterpret_cast<pool::PoolTag>(pool);
    Slabs* h = d->host.load(std::memory_order_acquire);
    const bool current = attribute == CU_MEMPOOL_ATTR_USED_MEM_CURRENT ||
                         attribute == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
    std::lock_guard lock(d->highs_mutex);
    if (is_reserved_attribute(attribute) && is_device_pool(*device, tag)) {
        const uint64_t held = held_bytes(*d);
        return current ? d->view.reserved(held) : d->view.reserved_high(held);
    }
    const pool::PoolFigures gpu = d->gpu.book.figures(tag);
    const pool::PoolFigures host = h ? h->book.figures(tag) : pool::PoolFigures{};
    if (current) return gpu.used + host.used;
    const auto high = d->used_high.find(tag);
    return std::max(gpu.used_high, high == d->used_high.end() ? 0 : high->second);
}

uint64_t ManagedPools::cached_bytes(int device) const {
    Device* d = device_of(device);
    // A device that has converted for a pool has a last tag (mark_converted).
    if (!d || last_tag_[static_cast<size_t>(device)].load(std::memory_order_relaxed) == kNoPoolTag) return 0;
    const uint64_t live = d->view.live();
    std::lock_guard lock(d->highs_mutex);
    const uint64_t reserved = d->view.reserved(held_bytes(*d));
    return reserved > live ? reserved - live : 0;
}

void ManagedPools::reset_high(CUmemoryPool pool, CUmemPool_attribute attribute) {
    if (attribute != CU_MEMPOOL_ATTR_USED_MEM_HIGH && attribute != CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) return;
    const auto device = converted_device(pool);
    Device* d = device ? device_of(*device) : nullptr;
    if (!d) return;
    const auto tag = reinterpret_cast<pool::PoolTag>(pool);
    Slabs* h = d->host.load(std::memory_order_acquire);
    std::lock_guard lock(d->highs_mutex);
    // A pool other than the device's reports its used bytes as reserved (see attribute()).
    if (attribute == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH && is_device_pool(*device, tag)) {
        d->view.reset_high(held_bytes(*d));
    } else {
        d->gpu.book.reset_used_high(tag);
        if (!h) return;
        h->book.reset_used_high(tag);
        d->used_high[tag] = d->gpu.book.figures(tag).used + h->book.figures(tag).used;
    }
}

std::optional<int> ManagedPools::trim(CUmemoryPool pool, uint64_t keep_bytes, std::vector<pool::SlabEvent>& events) {
    const auto device = converted_device(pool);
    Device* d = device ? device_of(*device) : nullptr;
    if (!d) return std::nullopt;
    d->gpu.book.trim(keep_bytes, &events);
    if (Slabs* h = d->host.load(std::memory_order_acquire)) {
        const uint64_t kept = d->gpu.book.figures().reserved;
        h->book.trim(keep_bytes > kept ? keep_bytes - kept : 0, &events);
    }
    d->view.trimmed(keep_bytes);
    return device;
}

void ManagedPools::trim_all(const std::function<void(int, std::span<const pool::SlabEvent>)>& report) {
    finishing_.store(true, std::memory_order_relaxed);
    std::vector<pool::SlabEvent> events;
    for (size_t i = 0; i < devices_.size(); ++i) {
        Device* d = devices_[i].load(std::memory_order_acquire);
        if (!d) continue;
        events.clear();
        d->gpu.book.trim(0, &events);
        if (Slabs* h = d->host.load(std::memory_order_acquire)) {
            // The driver may tear down the slabs still live after this.
            if (h->pages) h->pages->stop();
            h->book.trim(0, &events);
        }
        report(static_cast<int>(i), events);
    }
}

// In the order the code takes them: the pool is made under make_mutex_ before any
// of its locks is taken, and a book's lock is never held while a slab is made.
void ManagedPools::lock_for_fork() {
    make_mutex_.lock();
    for (auto& slot : devices_)
        if (Device* d = slot.load(std::memory_order_acquire)) {
            // Held around the books' figures: taken before their locks.
            d->highs_mutex.lock();
            for (Slabs* s : {&d->gpu, d->host.load(std::memory_order_acquire)})
                if (s) {
                    s->book.lock_for_fork();
                    s->slabs.lock_for_fork();
                }
        }
    tags_mutex_.lock();
}

void ManagedPools::unlock_after_fork() {
    tags_mutex_.unlock();
    for (auto& slot : devices_)
        if (Device* d = slot.load(std::memory_order_acquire)) {
            for (Slabs* s : {d->host.load(std::memory_order_acquire), &d->gpu})
                if (s) {
                    s->slabs.unlock_after_fork();
                    s->book.unlock_after_fork();
                }
            d->highs_mutex.unlock();
        }
    make_mutex_.unlock();
}

void ManagedPools::forget_after_fork() {
    // Not deleted: a book gives its slabs back when destroyed, and they are the parent's.
    for (auto& slot : devices_)
        if (Device* d = slot.exchange(nullptr, std::memory_order_relaxed)) {
            d->next_parent = parents_;
            parents_ = d;
        }
    for (auto& p : default_pool_) p.store(0, std::memory_order_relaxed);
    for (auto& p : current_pool_) p.store(0, std::memory_order_relaxed);
    for (auto& p : last_tag_) p.store(0, std::memory_order_relaxed);
    converted_tags_.clear();
}

} // namespace uvmp::driver

// The managed pool in the driver: one PoolBook (core/pool/pool_book.h) per
// device, whose slabs are managed allocations made under the device's physical
// guard and whose fences are events, and one more for the device's host-homed
// slabs where some allocation lives on the host (UVMP_HOST_HOMES); and the CUDA
// memory-pool handles whose allocations the library converted, so that pool
// queries answer from the pool's own figures.
#pragma once

#include "core/accounting/device_budget.h"
#include "core/accounting/stats.h"
#include "core/config/options.h"
#include "core/placement/home_choice.h"
#include "core/pool/pool_book.h"
#include "core/pool/single_pool_view.h"
#include "driver/hostmem/host_memory_guard.h"
#include "driver/table/driver_table.h"

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace uvmp::driver {

// Slabs are asked of the driver in multiples of this: the GPU maps managed memory
// in 2 MiB pieces, and the residency model's chunks are as large by default.
inline constexpr uint64_t kSlabGranularity = 2ull << 20;

// The tag of allocations that no CUDA memory pool made (cuMemAlloc, cuMemAllocPitch).
inline constexpr pool::PoolTag kNoPoolTag = 0;

// Host-homed slabs' ids start here, so that a trace tells them from the GPU's.
inline constexpr uint32_t kFirstHostSlabId = 1u << 31;

// Why an allocation got no block.
struct SlabRefusal {
    // Advice: a host slab's advice was refused; HostMemory: the host memory guard refused a host slab.
    enum class Reason { None, Guard, Driver, Advice, HostMemory };
    Reason reason = Reason::None;
    uint64_t bytes = 0;             // the slab that was asked for
    CUresult result = CUDA_SUCCESS; // the driver's answer, for Reason::Driver
};

class ManagedPools {
public:
    static constexpr size_t kMaxDevices = 64;

    // `host_memory`: asked before each host-homed slab is made.
    ManagedPools(const Config& config, Stats& stats, HostMemoryGuard& host_memory);
    ~ManagedPools();
    ManagedPools(const ManagedPools&) = delete;
    ManagedPools& operator=(const ManagedPools&) = delete;

    // The device's pool, made on the device's first conversion with `budget` as
    // its physical guard; nullptr when it cannot be made (said once).
    pool::PoolBook* book(int device, DeviceBudget& budget);
    // The device's host-homed slabs, made on first use once book() made the
    // device's pool; nullptr before that or when they cannot be made (said once).
    // Their slabs are advised to live on the host, accessed by the device, and
    // never count against the physical guard.
    pool::PoolBook* host_book(int device);
    pool::PoolBook* existing_book(int device, placement::Home home = placement::Home::Gpu) const;

    // A block of `book`, one of the device's; when there is none, *why says what refused.
    std::optional<pool::Block> allocate(int device, pool::PoolBook& book, uint64_t bytes, pool::StreamKey stream,
                                        pool::PoolTag tag, uint64_t now_ns, std::vector<pool::SlabEvent>& events,
                                        SlabRefusal* why);

    // A block of the device's GPU book at `offset` of its arena (a layout
    // planned for the step, PoolBook::allocate_at), the arena of `arena_bytes`
    // made on first use; nullopt when the place is not free for `stream`, or no
    // arena can be had (said once; the pool places the block as it comes then).
    std::optional<pool::Block> allocate_planned(int device, pool::PoolBook& book, uint64_t arena_bytes, uint64_t offset,
                                                uint64_t bytes, pool::StreamKey stream, pool::PoolTag tag,
                                                std::vector<pool::SlabEvent>& events);

    // Frees the live block at `address` of `book`, one of the device's (see
    // PoolBook::free): its size, or nullopt when the book has no such block.
    std::optional<uint64_t> free(int device, pool::PoolBook& book, uint64_t address, pool::StreamKey stream,
                                 pool::FenceKey fence, uint64_t now_ns, std::vector<pool::SlabEvent>& events);

    // True when `base` starts one of the pools' slabs: a free of it that names no
    // live block (a block freed twice, say) must not reach the driver, which
    // would free the whole slab.
    bool holds_slab(uint64_t base) const;

    // The tag of a stream-ordered allocation on `device` from `pool`; nullptr means
    // the device's current pool (asked of the driver once, then kept up to date
    // by note_current_pool).
    pool::PoolTag tag_for(int device, CUmemoryPool pool, const DriverTable& table);
    // An allocation tagged `tag` was converted: queries on that pool answer from
    // the library's figures from now on.
    void mark_converted(int device, pool::PoolTag tag);
    void note_default_pool(int device, CUmemoryPool pool);
    void note_current_pool(int device, CUmemoryPool pool);

    // The library's answer to a memory-pool attribute query, or nullopt where it
    // has none: an attribute it does not keep, or a pool it never converted from.
    // Used bytes are the pool's live blocks of both homes; reserved bytes are, for
    // the device's default and current pool, what one native pool would hold for
    // the device's blocks (pool::SinglePoolView: never a book's slabs summed
    // with the other's), and a pool's used bytes for other pools (they share the
    // device's slabs). Host slabs show in the library's stats, not here.
    std::optional<uint64_t> attribute(CUmemoryPool pool, CUmemPool_attribute attribute) const;
    // Bytes a native stream-ordered pool would keep mapped on `device` beyond its
    // live blocks (the single-pool view's reserved less live), once the device's
    // pool has served a converted stream-ordered allocation; 0 before. The
    // device's memory report counts them as used, as the driver does natively.
    uint64_t cached_bytes(int device) const;
    // A zero written to a high mark: the library's mark starts again from now.
    void reset_high(CUmemoryPool pool, CUmemPool_attribute attribute);
    // cuMemPoolTrimTo: trims the device pool `pool` counts to. The device, or
    // nullopt for a pool the library never converted from.
    std::optional<int> trim(CUmemoryPool pool, uint64_t keep_bytes, std::vector<pool::SlabEvent>& events);

    // At exit: gives back every wholly free slab of every device and destroys the
    // fences still held; `report` gets each device's slab events. Failures of the
    // driver are expected by then (it may be going away) and not warned about.
    void trim_all(const std::function<void(int, std::span<const pool::SlabEvent>)>& report);

    // Around fork(): every lock of the pools, held while the process is copied.
    void lock_for_fork();
    void unlock_after_fork();
    // In a forked child, after unlock_after_fork: the slabs are the parent's;
    // forget them without giving them back.
    void forget_after_fork();

private:
    struct Slabs;
    struct Device;

    Device* device_of(int device) const;
    // After an allocation: the single-pool view, and on a device with host
    // slabs the used high marks of both books together.
    void note_allocated(Device& device, pool::PoolTag tag, uint64_t bytes);
    // What the device's books hold together: the most the single-pool view may read.
    static uint64_t held_bytes(const Device& device);

    // The device whose pool allocations tagged `pool` came from, if any.
    std::optional<int> converted_device(CUmemoryPool pool) const;
    bool is_device_pool(int device, pool::PoolTag tag) const;

    pool::PoolConfig pool_config_;
    pool::PoolConfig host_config_;
    bool host_pages_ahead_; // UVMP_HOST_PAGES_AHEAD
    Stats& stats_;
    HostMemoryGuard& host_memory_;
    std::atomic<bool> finishing_{false};
    std::array<std::atomic<Device*>, kMaxDevices> devices_{};
    std::mutex make_mutex_;
    // The parents' pools in a forked child: never used or destroyed there, kept
    // reachable all the same.
    Device* parents_ = nullptr;

    std::array<std::atomic<uint64_t>, kMaxDevices> default_pool_{};
    std::array<std::atomic<uint64_t>, kMaxDevices> current_pool_{};
    // The tag each device last converted for: the allocation path takes the lock
    // below only for a tag it has not just seen.
    std::array<std::atomic<uint64_t>, kMaxDevices> last_tag_{};
    mutable std::mutex tags_mutex_;
    std::unordered_map<pool::PoolTag, int> converted_tags_; // tag -> device
};

} // namespace uvmp::driver

// The converted allocations, as an interval map from device address to
// allocation. Read on every launch (parameter words are looked up here), written
// on allocation and free, so reads take a shared lock and a cheap range filter
// rejects most words before any lock is taken. A look-up goes through an index
// by 2 MiB granule of the address space (each granule to the allocations that
// overlap it, by base), not down the map: a framework's own work between two
// launches leaves the caches cold, and a tree walk of a few thousand
// allocations then missed the cache at every level, microseconds a launch
// (tests/integration/launch_hook_cold.cpp). A launch's words mostly name the
// allocations the thread's recent launches named: each thread keeps those it
// found lately, valid while the map's version is unchanged, and finds them there
// without the lock (whose shared count is a cache line every launching thread
// writes).
#pragma once

#include "core/util/flat_map.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>
#include <span>
#include <vector>

namespace uvmp {

struct Allocation {
    uint32_t id = 0;
    uint64_t base = 0;
    uint64_t size = 0;
    int32_t device = 0;
    void* context = nullptr; // the CUDA context it was made in (opaque here)
    // Made by a stream-ordered call: its cuMemFree owes no implicit synchronisation.
    bool stream_ordered = false;
    // A block of a host-homed slab: its pages live on the host and the GPU reaches
    // them remotely, so no residency policy ever moves or counts it.
    bool host_homed = false;
    // Homed on the host after it was made (an allocation made before the step
    // its home was learned in): its block stays in its GPU slab, whose range is
    // advised to live on the host. host_homed is set too.
    bool homed_in_place = false;
};

struct AccessHit {
    uint32_t alloc_id;
    uint64_t offset;
};

class Registry {
public:
    // Assigns and returns the allocation's id (1, 2, 3, ...; 0 is never used).
    uint32_t add(uint64_t base, uint64_t size, int32_t device, void* context, bool stream_ordered = false,
                 bool host_homed = false);
    // Removes the allocation that starts exactly at base.
    std::optional<Allocation> remove(uint64_t base);
    std::optional<Allocation> find_base(uint64_t base) const;
    // Homes the allocation that starts at base, if it is still allocation
    // `id`, on the host in place (or back on the GPU). nullopt where it is
    // gone, already there, or a block of a host slab. Returns it as it is now.
    std::optional<Allocation> home_in_place(uint64_t base, uint32_t id, bool on_host);
    // The allocation containing address, if any.
    std::optional<AccessHit> find(uint64_t address) const;
    // False when no live allocation can contain the address: a check without the lock.
    bool may_contain(uint64_t address) const {
        return address >= low_.load(std::memory_order_relaxed) && address < high_.load(std::memory_order_relaxed);
    }
    // Appends, in order, a hit for each address that lies in an allocation. One
    // shared lock for all of them: a launch's parameter words are looked up together.
    void find_all(std::span<const uint64_t> addresses, std::vector<AccessHit>& hits) const;
    bool contains(uint64_t address) const { return find(address).has_value(); }

    size_t size() const;
    std::vector<Allocation> snapshot() const;
    void clear();

    // Around fork(): held while the process is copied, so that the child's copy
    // is never caught half changed. After it the parent releases the lock; the
    // child makes it anew, since a reader-writer lock knows its writer by thread
    // id, and the child's thread has another.
    void lock_for_fork() { mutex_.lock(); }
    void unlock_after_fork(bool in_child);

private:
    // An allocation as the index holds it.
    struct Span {
        uint64_t base = 0;
        uint64_t end = 0; // one past its last byte
        uint32_t id = 0;
    };
    static constexpr unsigned kGranuleBits = 21;

    const Span* holder_locked(uint64_t address) const;
    // The granule's list, made (or an emptied one taken again) where it has none.
    std::vector<Span>& granule_list_locked(uint64_t granule);
    void index_locked(const Allocation& a);
    void unindex_locked(const Allocation& a);
    // f(granule) for each granule the allocation overlaps (none for size 0, which
    // holds no address).
    template <class F>
    static void for_each_granule(const Allocation& a, F&& f) {
        if (a.size == 0) return;
        for (uint64_t g = a.base >> kGranuleBits; g <= (a.base + a.size - 1) >> kGranuleBits; ++g) f(g);
    }
    // A new version for a changed map: unique over every registry, so that what a
    // thread found in one is never taken for another's.
    void map_changed();

    mutable std::shared_mutex mutex_;
    std::map<uint64_t, Allocation> by_base_;
    // Granule (address >> kGranuleBits) -> its list in granule_lists_, the
    // allocations overlapping it sorted by base; lists emptied are reused.
    FlatMap<uint32_t> granules_;
    std::vector<std::vector<Span>> granule_lists_;
    std::vector<uint32_t> free_lists_;
    uint32_t next_id_ = 1;
    // Bounds of all live allocations: a word outside is not a pointer of ours.
    std::atomic<uint64_t> low_{UINT64_MAX};
    std::atomic<uint64_t> high_{0};
    // Changed, under the lock, with every change of which allocation holds an address.
    std::atomic<uint64_t> version_{0};
};

} // namespace uvmp

// What the pool may ask, when it places a block, about the free memory it could
// place it over: which of it still holds GPU pages that freed blocks left there
// (dead bytes resident on the GPU). A block placed over them takes them over at
// no cost; one placed elsewhere has pages made for it, and the dead bytes left
// idle hold the budget until they are evicted, which costs as much as evicting
// live bytes. Advisory only: an answer may be stale or empty, and the pool's
// blocks are correct whatever it says; only what moves changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace uvmp::pool {

struct Extent {
    uint64_t begin = 0;
    uint64_t end = 0; // one past the last byte
};

class PlacementHint {
public:
    virtual ~PlacementHint() = default;
    // The dead extents resident on the GPU that overlap [begin, end), clipped to
    // it, in address order, into `out`: how many were written (at most
    // out.size(); the first ones). Called with the pool's lock held, from any
    // thread: it must be thread-safe and must not call back into the pool.
    virtual size_t resident_dead(uint64_t begin, uint64_t end, std::span<Extent> out) const = 0;
    // Whether GPU room is short: room has been wanted past the budget, so dead
    // bytes left on the GPU will be evicted when room is wanted again, at the
    // cost of host page population. The pool then gives a slab back as soon as
    // it is wholly free, whatever release_after_ns says: freeing drops its pages
    // without moving them, and a later block populates fresh memory on the GPU,
    // which costs a small fraction of that eviction. Any thread, lock held.
    virtual bool room_is_short() const = 0;
    // The pool freed the block at [begin, end). Whoever answers resident_dead
    // may hear of the free later than the pool, which places the next block at
    // once: until then the block's memory may be taken as dead and resident
    // (it was most likely in use on the GPU just before). Any thread, the
    // pool's lock held; advisory like the rest.
    virtual void block_freed(uint64_t begin, uint64_t end) const {
        (void)begin;
        (void)end;
    }
};

} // namespace uvmp::pool

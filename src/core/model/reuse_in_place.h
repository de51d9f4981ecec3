// Reuse in place of dead GPU memory in the managed pool. A freed block's bytes
// are dead: nothing writes them back or fetches them again, and those that were
// on the GPU stay there until the pool places a later block over them, which
// then finds them resident at no cost. The residency model drops a removed
// allocation's chunks without a move; this remembers, by address, which of its
// bytes were resident, and hands them to the next allocation placed there.
//
// The budget counts live resident bytes only: a dead range counts nowhere. A new
// allocation placed over it takes its whole chunks as resident, since that is
// where its bytes are, even past a full budget: the next launch's plan then
// evicts other chunks back down to the budget (Residency::over_budget), which
// costs one eviction where counting the block missing would cost that eviction
// and a fetch of dead bytes. The planner (online) and the simulator (offline)
// use the same code, so that the simulator's prediction follows the library.
#pragma once

#include "core/model/residency.h"

#include <cstdint>
#include <map>

namespace uvmp {

class ReuseInPlace {
public:
    // Before residency.remove_allocation(alloc_id) of a block at `address`:
    // remembers the address ranges of its resident chunks (ranges that touch
    // become one).
    void note_removal(const Residency& residency, uint32_t alloc_id, uint64_t address);
    // After residency.add_allocation gave `chunks` to a block at `address` (of
    // the allocation's size): makes resident, without a move, the chunks that lie
    // wholly inside remembered ranges, with last use `step`, budget or not. The
    // bytes the block covers are forgotten however much of them it took (the
    // block is live there now). Returns the bytes made resident.
    uint64_t place(Residency& residency, ChunkRange chunks, uint64_t address, uint64_t step);
    // Memory that is not the dead memory it was, whatever was remembered of it
    // (a slab given back or made anew, an allocation from outside the pool).
    void forget(uint64_t address, uint64_t size);

    // Dead resident bytes remembered, and in how many ranges.
    uint64_t bytes() const { return bytes_; }
    size_t ranges() const { return ranges_.size(); }

private:
    // First byte -> one past the last; disjoint, none touching the next.
    std::map<uint64_t, uint64_t> ranges_;
    uint64_t bytes_ = 0;
};

// What becomes of a new block of the pool, online and in the simulator alike:
// it takes over the dead GPU chunks that freed blocks left where it lies, and
// the rest, when it fits the free budget, is made resident now and handed to
// `populate(run)` run by run (a prefetch of memory no kernel has written yet
// populates pages, or moves dead bytes at the link's rate: either is far cheaper
// than the kernel that writes it faulting them in). Returns the bytes reused.
template <class Populate>
uint64_t place_block(Residency& residency, ReuseInPlace& reuse, ChunkRange chunks, uint64_t address, uint64_t step,
                     Populate&& populate) {
    const uint64_t reused = reuse.place(residency, chunks, address, step);
    const uint64_t missing = residency.missing_bytes(chunks);
    if (missing == 0 || residency.over_budget(missing)) return reused;
    for (ChunkId c = residency.first_missing(chunks); c <= chunks.last; c = residency.first_missing({c, chunks.last})) {
        const ChunkRange run{c, residency.first_resident({c, chunks.last}) - 1};
        residency.make_resident(run, step);
        populate(run);
        c = run.last + 1;
    }
    return reused;
}

} // namespace uvmp

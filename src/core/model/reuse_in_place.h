// Reuse in place of freed memory in the managed pool. A freed block's bytes are
// dead: nothing writes them back or fetches them again. Those that were on the
// GPU stay there, until the pool places a later block over them, which then
// finds them resident at no cost. The residency model drops a removed
// allocation's chunks without a move; this remembers, by address, which of its
// bytes were resident, and hands them to the next allocation placed there.
//
// Dead bytes left on the GPU hold its memory as much as live ones do: a budget
// that stands for a smaller GPU counts them (bytes()), and a job whose memory
// does not fit the budget has its freed blocks discarded instead
// (core/model/discard_span.h): the driver takes their pages back, the free costs
// no move, and the next block placed there is refilled on the GPU in stream
// order before any kernel can touch it, which populates pages without copying
// (about 2 ms a GiB on the H200, against 13-16 GB/s for an eviction). Discarded
// memory counts nowhere; a block placed over it takes those chunks as resident,
// as over dead ones.
//
// A new allocation placed over dead or discarded memory takes those whole chunks
// as resident, since that is where its bytes are, even past a full budget: the
// next launch's plan then evicts other chunks back down to the budget
// (Residency::over_budget), which costs one eviction where counting the block
// missing would cost that eviction and a fetch of dead bytes. The planner
// (online) and the simulator (offline) use the same code, so that the
// simulator's prediction follows the library.
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
    // The same for a block whose whole chunks [begin, end) the free discarded
    // (discard_span): they are remembered as discarded, resident or not, and
    // only what lies outside them as dead.
    void note_discarded_removal(const Residency& residency, uint32_t alloc_id, uint64_t address, uint64_t begin,
                                uint64_t end);
    // After residency.add_allocation gave `chunks` to a block at `address` (of
    // the allocation's size): makes resident, without a move, the chunks that lie
    // wholly inside remembered ranges, dead or discarded, with last use `step`,
    // budget or not. The bytes the block covers are forgotten however much of
    // them it took (the block is live there now).
    struct Placed {
        uint64_t reused = 0;   // bytes made resident over dead memory
        uint64_t refilled = 0; // over discarded memory: the refill populates them
    };
    Placed place(Residency& residency, ChunkRange chunks, uint64_t address, uint64_t step);
    // Memory that is not the dead memory it was, whatever was remembered of it
    // (a slab given back or made anew, an allocation from outside the pool).
    void forget(uint64_t address, uint64_t size);

    // Dead resident bytes remembered, and in how many ranges.
    uint64_t bytes() const { return dead_.bytes; }
    size_t ranges() const { return dead_.ranges.size(); }
    // Discarded bytes remembered.
    uint64_t discarded_bytes() const { return discarded_.bytes; }

private:
    struct RangeSet {
        // First byte -> one past the last; disjoint, none touching the next.
        std::map<uint64_t, uint64_t> ranges;
        uint64_t bytes = 0;
        // Joined with the ranges it touches: a block placed later over two
        // freed neighbours finds one range.
        void add(uint64_t start, uint64_t end);
        void remove(uint64_t address, uint64_t size);
        // Makes resident the chunks of `chunks` (a block at `address` of `size`)
        // lying wholly inside the set's ranges; the bytes made so.
        uint64_t take(Residency& residency, ChunkRange chunks, uint64_t address, uint64_t size, uint64_t step) const;
    };
    void note_resident_runs(const Residency& residency, uint32_t alloc_id, uint64_t address, uint64_t skip_begin,
                            uint64_t skip_end);
    RangeSet dead_;
    RangeSet discarded_;
};

// What becomes of a new block of the pool, online and in the simulator alike:
// it takes over the dead GPU chunks that freed blocks left where it lies, and
// the rest, when it fits the free budget, is made resident now and handed to
// `populate(run)` run by run (a prefetch of memory no kernel has written yet
// populates pages, or moves dead bytes at the link's rate: either is far cheaper
// than the kernel that writes it faulting them in).
template <class Populate>
ReuseInPlace::Placed place_block(Residency& residency, ReuseInPlace& reuse, ChunkRange chunks, uint64_t address, uint64_t step,
                     Populate&& populate) {
    const ReuseInPlace::Placed placed = reuse.place(residency, chunks, address, step);
    const uint64_t missing = residency.missing_bytes(chunks);
    if (missing == 0 || residency.over_budget(missing)) return placed;
    for (ChunkId c = residency.first_missing(chunks); c <= chunks.last; c = residency.first_missing({c, chunks.last})) {
        const ChunkRange run{c, residency.first_resident({c, chunks.last}) - 1};
        residency.make_resident(run, step);
        populate(run);
        c = run.last + 1;
    }
    return placed;
}

} // namespace uvmp

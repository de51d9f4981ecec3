// Reuse in place of dead GPU memory in the managed pool. A freed block's bytes
// are dead: nothing writes them back or fetches them again, and those that were
// on the GPU stay there until the pool places a later block over them, which
// then finds them resident at no cost. The residency model drops a removed
// allocation's chunks without a move; this remembers, by address, which of its
// bytes were resident, and hands them to the next allocation placed there.
//
// The budget counts live resident bytes only: a dead range counts nowhere, and
// a new allocation takes resident chunks from it only while they fit the free
// budget. The planner (online) and the simulator (offline) use the same code,
// so that the simulator's prediction follows the library.
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
    // wholly inside remembered ranges, in ascending order while they fit the free
    // budget, with last use `step`. The bytes the block covers are forgotten
    // however much of them it took (the block is live there now). Returns the
    // bytes made resident.
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

} // namespace uvmp

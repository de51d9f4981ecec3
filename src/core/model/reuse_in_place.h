// Reuse in place of dead GPU memory in the managed pool. A freed block's bytes
// are dead: nothing writes them back or fetches them again, and those that were
// on the GPU stay there until the pool places a later block over them, which
// then finds them resident at no cost. The residency model drops a removed
// allocation's chunks without a move; this remembers, by address, which of its
// bytes were resident, and hands them to the next allocation placed there.
//
// Dead bytes hold the GPU's memory as much as live ones: the budget counts them
// (Residency::dead_bytes, kept here). A new allocation placed over a dead range
// takes its whole chunks as resident, since that is where its bytes are, at no
// cost and with no change to what is held. When room is needed, for a launch,
// to fetch ahead or to populate a new block, dead bytes are given up first
// (DeadRoom), the longest dead first (a training step reuses last what it freed
// first): evicting a dead byte costs what evicting a live one does (host page
// population), but nothing fetches it back. The planner (online) and the
// simulator (offline) use the same code, so that the simulator's prediction
// follows the library.
//
// It also tells the pool where dead bytes lie (pool::PlacementHint), so that a
// new block goes over them rather than beside them; but only once the budget
// has bound (room was wanted past it): until then no dead byte ever has to
// move, and best fit keeps the pool's memory smallest. That question comes from
// the allocating thread, so changes to the ranges take a lock that it takes too;
// everything else is one thread's. Online, the planner hears of a free after
// the pool has made it, and the application's next allocation often comes
// first: a block the pool freed counts as dead and resident for placement
// (presumed) until note_removal says which of its bytes really are.
#pragma once

#include "core/model/residency.h"
#include "core/pool/placement_hint.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace uvmp {

class ReuseInPlace final : public DeadRoom, public pool::PlacementHint {
public:
    size_t resident_dead(uint64_t begin, uint64_t end, std::span<pool::Extent> out) const override;
    // The pool freed [begin, end): presumed dead and resident until the removal
    // is noted, or a block placed there, or the memory forgotten. Only once
    // the budget binds. Any thread.
    void block_freed(uint64_t begin, uint64_t end) const override;
    // Whether room has been wanted past the budget (give_up called). Any thread.
    bool budget_binds() const { return budget_binds_.load(std::memory_order_relaxed); }
    bool room_is_short() const override { return budget_binds(); }

    // Dead bytes of `residency` are given up for room (Residency::room_from_dead)
    // through `evict(address, size)`, a call a piece; both must outlive this.
    void give_up_through(Residency& residency, std::function<void(uint64_t, uint64_t)> evict);
    uint64_t give_up(uint64_t bytes) override;

    // Before residency.remove_allocation(alloc_id) of a block at `address`, freed
    // at launch `step`: remembers the address ranges of its resident chunks
    // (ranges that touch become one, dead since the later step).
    void note_removal(Residency& residency, uint32_t alloc_id, uint64_t address, uint64_t step);
    // After residency.add_allocation gave `chunks` to a block at `address` (of
    // the allocation's size): makes resident, without a move, the chunks that lie
    // wholly inside remembered ranges, with last use `step`, budget or not. The
    // bytes the block covers are forgotten however much of them it took (the
    // block is live there now). Returns the bytes made resident.
    uint64_t place(Residency& residency, ChunkRange chunks, uint64_t address, uint64_t step);
    // Memory that is not the dead memory it was, whatever was remembered of it
    // (a slab given back or made anew, an allocation from outside the pool).
    void forget(Residency& residency, uint64_t address, uint64_t size);
    // Sheds at least `bytes` of dead memory, as far as there is, the longest
    // dead first: calls `evict(address, size)` for each piece and forgets it. A
    // range partly shed loses its top, in whole chunks counted from its start
    // (a block's chunks start there). Returns the bytes shed.
    template <class Evict>
    uint64_t shed(Residency& residency, uint64_t bytes, Evict&& evict);

    // Dead resident bytes remembered, and in how many ranges.
    uint64_t bytes() const { return bytes_; }
    size_t ranges() const { return ranges_.size(); }
    // Ranges freed by the pool whose removal is not noted yet.
    size_t presumed() const;

private:
    struct Range {
        uint64_t end = 0; // one past the last byte
        uint64_t dead_since = 0;
    };
    using Ranges = std::map<uint64_t, Range>;
    Ranges::iterator add(uint64_t start, Range range, Ranges::iterator hint);
    Ranges::iterator erase(Ranges::iterator it);
    void publish(Residency& residency) const { residency.set_dead_bytes(bytes_); }

    // First byte -> the rest; disjoint, none touching the next.
    Ranges ranges_;
    // The same, by (dead_since, first byte): the order ranges are shed in.
    std::set<std::pair<uint64_t, uint64_t>> by_age_;
    uint64_t bytes_ = 0;
    // Held by changes to ranges_ and presumed_, and by resident_dead().
    mutable std::mutex ranges_mutex_;
    // Freed by the pool, not yet noted: first byte -> one past the last;
    // disjoint. Placement only: never counted as held, never evicted. Written
    // by the pool's block_freed, which the pool may call through a const hint.
    mutable std::map<uint64_t, uint64_t> presumed_;
    // Drops [begin, end) from presumed_; ranges_mutex_ held.
    void drop_presumed_locked(uint64_t begin, uint64_t end) const;
    void drop_presumed(uint64_t begin, uint64_t end) {
        std::lock_guard lock(ranges_mutex_);
        drop_presumed_locked(begin, end);
    }
    std::atomic<bool> budget_binds_{false}; // give_up() has been called

    std::vector<ChunkRange> taken_; // place()'s, kept for its capacity
    Residency* room_of_ = nullptr;
    std::function<void(uint64_t, uint64_t)> evict_;
};

template <class Evict>
uint64_t ReuseInPlace::shed(Residency& residency, uint64_t bytes, Evict&& evict) {
    const uint64_t chunk = residency.chunk_bytes();
    uint64_t shed = 0;
    while (shed < bytes && !by_age_.empty()) {
        const auto it = ranges_.find(by_age_.begin()->second);
        const uint64_t start = it->first;
        const Range range = it->second;
        // The top of the range, whole chunks of it counted from its start (where
        // a block's chunks start), as much as is wanted; the rest keeps its age.
        const uint64_t size = range.end - start;
        const uint64_t wanted = bytes - shed;
        const uint64_t keep = size > wanted ? (size - wanted) / chunk * chunk : 0;
        evict(start + keep, size - keep);
        shed += size - keep;
        erase(it);
        if (keep) add(start, {start + keep, range.dead_since}, ranges_.end());
    }
    publish(residency);
    return shed;
}

// What becomes of a new block of the pool, online and in the simulator alike:
// it takes over the dead GPU chunks that freed blocks left where it lies, and
// the rest, when it fits the budget once dead bytes elsewhere are given up for
// it (a dead byte is evicted either way, and a block populated now is not
// fetched late by the kernel that first writes it), is made resident now and
// handed to `populate(run)` run by run (a prefetch of memory no kernel has written yet
// populates pages, or moves dead bytes at the link's rate: either is far cheaper
// than the kernel that writes it faulting them in). Returns the bytes reused.
template <class Populate>
uint64_t place_block(Residency& residency, ReuseInPlace& reuse, ChunkRange chunks, uint64_t address, uint64_t step,
                     Populate&& populate) {
    const uint64_t reused = reuse.place(residency, chunks, address, step);
    const uint64_t missing = residency.missing_bytes(chunks);
    if (missing == 0 || !residency.room_from_dead(missing)) return reused;
    for (ChunkId c = residency.first_missing(chunks); c <= chunks.last; c = residency.first_missing({c, chunks.last})) {
        const ChunkRange run{c, residency.first_resident({c, chunks.last}) - 1};
        residency.make_resident(run, step);
        populate(run);
        c = run.last + 1;
    }
    return reused;
}

} // namespace uvmp

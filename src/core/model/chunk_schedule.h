// A recorded trace in chunk terms: the chunk ids of its allocations and the
// chunks each launch touches. The simulator drives the residency model from it.
// When each chunk is touched next, which only the belady policy reads, is
// worked out on first request (ChunkNextUses): simulating another policy does
// not pay for it.
//
// Chunk ids are handed out as the library's residency model hands them out
// (ChunkIds::Reused): a freed allocation's ids go to a later one. A job that
// allocates anew every step then keeps its per-chunk state, here and in the
// simulation, as large as what is live at once.
#pragma once

#include "core/util/large_pages.h"
#include "core/model/residency.h"
#include "core/trace/format/model.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace uvmp {

class ChunkNextUses;

class ChunkSchedule {
public:
    // An allocation appearing or going away before launch `launches_before`.
    struct AllocEvent {
        uint64_t launches_before = 0;
        uint32_t alloc_id = 0;
        uint64_t size = 0;
        bool is_free = false;
        // For an allocation appearing: the chunk ids it gets (none: chunk_count 0).
        ChunkId first_chunk = kNoChunk;
        uint32_t chunk_count = 0;
        // The allocation's, for a free too (a free of an id never allocated: 0, Converted).
        uint64_t address = 0;
        trace::AllocKind kind = trace::AllocKind::Converted;
    };
    // Memory of the pool that is not the dead memory it was: a slab made or
    // given back, after the events before `before_event` (and before launch
    // `launches_before`, as they are).
    struct SlabChange {
        uint64_t launches_before = 0;
        size_t before_event = 0;
        uint64_t base = 0;
        uint64_t size = 0;
    };
    struct NoRemoval {
        void operator()(size_t) const {}
    };

    // Throws std::invalid_argument when the trace is inconsistent (an access list
    // out of range, an allocation id used twice), has 2^32 launches or more, or
    // chunk_bytes is not a power of two.
    ChunkSchedule(const trace::Trace& trace, uint64_t chunk_bytes);
    ~ChunkSchedule();
    ChunkSchedule(const ChunkSchedule&) = delete;
    ChunkSchedule& operator=(const ChunkSchedule&) = delete;

    uint64_t chunk_bytes() const { return chunk_bytes_; }
    uint64_t launch_count() const { return range_end_.size() - 1; }
    // The launch's chunks, as Residency::launch_ranges gives them: ascending,
    // overlapping and adjacent ranges merged.
    std::span<const ChunkRange> launch_ranges(uint64_t launch) const {
        return {ranges_.data() + range_end_[launch], range_end_[launch + 1] - range_end_[launch]};
    }
    // The ranges of all launches together.
    uint64_t range_count() const { return ranges_.size(); }
    // Bytes of the launch's chunks, all of them.
    uint64_t launch_bytes(uint64_t launch) const { return launch_bytes_[launch]; }
    // Every chunk id handed out is below this.
    uint32_t chunk_slots() const { return chunk_slots_; }

    // Replaying these into an empty Residency with ChunkIds::Reused, in order and
    // each before launch `launches_before`, hands out the chunk ids used here.
    std::span<const AllocEvent> events() const { return events_; }
    // Applies to `layout` the events from `next` on that come before launch
    // `launch`, in order, and moves `next` past them; `added(index, chunks)` is
    // called for each allocation that gets chunks, and `removing(index)` before
    // each free. A layout with ChunkIds::Given takes the ids worked out here
    // instead of looking for free ones.
    template <class Added, class Removing = NoRemoval>
    static void replay_events(std::span<const AllocEvent> events, size_t& next, uint64_t launch, Residency& layout,
                              Added&& added, Removing&& removing = {}) {
        const bool given = layout.chunk_ids() == ChunkIds::Given;
        for (; next < events.size() && events[next].launches_before <= launch; ++next) {
            const AllocEvent& e = events[next];
            if (e.is_free) {
                removing(next);
                layout.remove_allocation(e.alloc_id);
            } else if (const auto chunks = layout.add_allocation(e.alloc_id, e.size, given ? e.first_chunk : kNoChunk)) {
                added(next, *chunks);
            }
        }
    }
    // The trace's slab records among the events, in order (none before format 1.1).
    std::span<const SlabChange> slab_changes() const { return slab_changes_; }
    // When each chunk is touched next, built on the first call (safe from
    // any thread); it lives as long as the schedule.
    const ChunkNextUses& next_uses() const;

    // The most bytes live at once among chunks that are touched at all.
    uint64_t footprint_bytes() const { return footprint_bytes_; }
    // Bytes of the distinct chunk ids touched by launches [first, last): an id
    // that two allocations take in turn there counts once, as memory on the GPU
    // would (at its first size there).
    uint64_t touched_bytes(uint64_t first_launch, uint64_t last_launch) const;
    // Accesses naming an allocation that was unknown or freed at the time.
    uint64_t dangling_accesses() const { return dangling_accesses_; }

private:
    uint64_t chunk_bytes_;
    LargeVector<AllocEvent> events_;
    std::vector<SlabChange> slab_changes_;
    // Launch i's ranges are [range_end_[i], range_end_[i + 1]).
    LargeVector<ChunkRange> ranges_;
    LargeVector<uint32_t> range_end_; // accesses, and so ranges, are fewer than 2^32
    uint32_t chunk_slots_ = 0;
    LargeVector<uint64_t> launch_bytes_;
    uint64_t footprint_bytes_ = 0;
    uint64_t dangling_accesses_ = 0;
    mutable std::once_flag next_uses_built_;
    mutable std::unique_ptr<ChunkNextUses> next_uses_;
};

} // namespace uvmp

// The whole future of a recorded trace in chunk terms: for every launch, the
// chunks it touches and when each of them is touched next. The belady policy
// reads the future from it; the simulator drives the residency model from it.
//
// A launch's chunks are kept as pieces, runs of adjacent chunks touched next by
// the same launch: a launch names a few tensors of many chunks each, and one
// 12-byte piece stands for a tensor's chunks, which listed one by one with their
// next uses took 12 bytes each.
//
// Chunk ids are handed out as the library's residency model hands them out
// (ChunkIds::Reused): a freed allocation's ids go to a later one. A job that
// allocates anew every step then keeps its per-chunk state, here and in the
// simulation, as large as what is live at once. A chunk's next use is always its
// allocation's: past the allocation's last use it is never used again, even if
// a later allocation gets its id.
#pragma once

#include "core/large_pages.h"
#include "core/residency.h"
#include "core/trace_model.h"

#include <cstdint>
#include <span>
#include <vector>

namespace uvmp {

class ChunkSchedule {
public:
    static constexpr uint64_t kNever = UINT64_MAX;
    // kNever in a piece, which keeps launch indices in 32 bits.
    static constexpr uint32_t kNeverStored = UINT32_MAX;

    // An allocation appearing or going away before launch `launches_before`.
    struct AllocEvent {
        uint64_t launches_before = 0;
        uint32_t alloc_id = 0;
        uint64_t size = 0;
        bool is_free = false;
        // For an allocation appearing: the chunk ids it gets (none: chunk_count 0).
        ChunkId first_chunk = kNoChunk;
        uint32_t chunk_count = 0;
    };

    // Throws std::invalid_argument when the trace is inconsistent (an access list
    // out of range, an allocation id used twice), has 2^32 launches or more, or
    // chunk_bytes is not a power of two.
    ChunkSchedule(const trace::Trace& trace, uint64_t chunk_bytes);

    // Chunks first..last, all touched next by launch `next` (kNeverStored: never).
    struct Piece {
        ChunkId first;
        ChunkId last;
        uint32_t next;
        uint32_t count() const { return last - first + 1; }
        uint64_t next_use() const { return next == kNeverStored ? kNever : next; }
    };

    uint64_t chunk_bytes() const { return chunk_bytes_; }
    uint64_t launch_count() const { return piece_end_.size() - 1; }
    // Ascending; the chunks of all pieces are the launch's chunks, each once.
    std::span<const Piece> pieces(uint64_t launch) const {
        return {pieces_.data() + piece_end_[launch + 1], piece_end_[launch] - piece_end_[launch + 1]};
    }
    // The launch's chunks as ranges replacing what `out` held: its pieces,
    // adjacent ones merged (as Residency::launch_ranges gives them).
    void launch_ranges(uint64_t launch, std::vector<ChunkRange>& out) const;
    // Bytes of the launch's chunks, all of them.
    uint64_t launch_bytes(uint64_t launch) const { return launch_bytes_[launch]; }
    // Every chunk id handed out is below this.
    uint32_t chunk_slots() const { return chunk_slots_; }

    // Replaying these into an empty Residency with ChunkIds::Reused, in order and
    // each before launch `launches_before`, hands out the chunk ids used here.
    std::span<const AllocEvent> events() const { return events_; }
    // Applies to `layout` the events from `next` on that come before launch
    // `launch`, in order, and moves `next` past them; `added(index, chunks)` is
    // called for each allocation that gets chunks.
    template <class Added>
    static void replay_events(std::span<const AllocEvent> events, size_t& next, uint64_t launch, Residency& layout,
                              Added&& added) {
        for (; next < events.size() && events[next].launches_before <= launch; ++next) {
            const AllocEvent& e = events[next];
            if (e.is_free) layout.remove_allocation(e.alloc_id);
            else if (const auto chunks = layout.add_allocation(e.alloc_id, e.size)) added(next, *chunks);
        }
    }
    // Chunks first..last of an allocation that appears: first used by launch
    // `next`, and handed to another allocation before launch `reused_before`
    // (kNeverStored: never). From then on the schedule's uses of these ids are the
    // other allocation's.
    struct FirstUse {
        ChunkId first;
        ChunkId last;
        uint32_t next;
        uint32_t reused_before;
        uint64_t next_use() const { return next == kNeverStored ? kNever : next; }
    };
    // The chunks of event `event` (an allocation appearing), ascending, all of
    // them (none for a free).
    std::span<const FirstUse> first_uses(size_t event) const {
        return {first_uses_.data() + first_use_end_[event + 1], first_use_end_[event] - first_use_end_[event + 1]};
    }
    // Whether any allocation takes ids that another had.
    bool reuses_ids() const { return reuses_ids_; }

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
    // Built backward, so the last launch's pieces come first: launch i's pieces
    // are [piece_end_[i + 1], piece_end_[i]), and piece_end_[launch_count()] is 0.
    LargeVector<Piece> pieces_;
    LargeVector<uint64_t> piece_end_;
    // Built backward too: event k's are [first_use_end_[k + 1], first_use_end_[k]),
    // and first_use_end_[events_.size()] is 0.
    LargeVector<FirstUse> first_uses_;
    LargeVector<uint64_t> first_use_end_;
    uint32_t chunk_slots_ = 0;
    bool reuses_ids_ = false;
    LargeVector<uint64_t> launch_bytes_;
    uint64_t footprint_bytes_ = 0;
    uint64_t dangling_accesses_ = 0;
};

} // namespace uvmp

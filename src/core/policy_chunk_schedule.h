// The whole future of a recorded trace in chunk terms: for every launch, the
// chunks it touches and when each of them is touched next. The belady policy
// reads the future from it; the simulator drives the residency model from it.
//
// A launch's chunks are kept as pieces, runs of adjacent chunks touched next by
// the same launch: a launch names a few tensors of many chunks each, and one
// 12-byte piece stands for a tensor's chunks, which listed one by one with their
// next uses took 12 bytes each.
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
    uint64_t first_use(ChunkId chunk) const { return first_use_[chunk]; }
    uint32_t chunk_slots() const { return static_cast<uint32_t>(first_use_.size()); }

    // Replaying these into an empty Residency, in order and each before launch
    // `launches_before`, hands out the chunk ids used here.
    std::span<const AllocEvent> events() const { return events_; }

    // The most bytes live at once among chunks that are touched at all.
    uint64_t footprint_bytes() const { return footprint_bytes_; }
    // Bytes of the distinct chunks touched by launches [first, last).
    uint64_t touched_bytes(uint64_t first_launch, uint64_t last_launch) const;
    // Accesses naming an allocation that was unknown or freed at the time.
    uint64_t dangling_accesses() const { return dangling_accesses_; }

private:
    uint64_t chunk_bytes_;
    std::vector<AllocEvent> events_;
    // Built backward, so the last launch's pieces come first: launch i's pieces
    // are [piece_end_[i + 1], piece_end_[i]), and piece_end_[launch_count()] is 0.
    LargeVector<Piece> pieces_;
    LargeVector<uint64_t> piece_end_;
    std::vector<uint64_t> first_use_;
    std::vector<uint64_t> chunk_size_;
    LargeVector<uint64_t> launch_bytes_;
    uint64_t footprint_bytes_ = 0;
    uint64_t dangling_accesses_ = 0;
};

} // namespace uvmp

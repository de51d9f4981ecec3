// When each chunk of a ChunkSchedule is touched next: the future that the
// belady policy ranks chunks by.
//
// A launch's chunks are kept as pieces, runs of adjacent chunks touched next by
// the same launch: a launch names a few tensors of many chunks each, and one
// 12-byte piece stands for a tensor's chunks, which listed one by one with their
// next uses took 12 bytes each.
//
// A chunk's next use is always its allocation's: past the allocation's last use
// it is never used again, even if a later allocation gets its id.
#pragma once

#include "core/util/large_pages.h"
#include "core/model/residency.h"

#include <cstdint>
#include <span>

namespace uvmp {

class ChunkSchedule;

class ChunkNextUses {
public:
    static constexpr uint64_t kNever = UINT64_MAX;
    // kNever as stored, which keeps launch indices in 32 bits.
    static constexpr uint32_t kNeverStored = UINT32_MAX;

    explicit ChunkNextUses(const ChunkSchedule& schedule);

    // Chunks first..last, all touched next by launch `next` (kNeverStored: never).
    struct Piece {
        ChunkId first;
        ChunkId last;
        uint32_t next;
        uint32_t count() const { return last - first + 1; }
        uint64_t next_use() const { return next == kNeverStored ? kNever : next; }
    };
    // Ascending; the chunks of all pieces are the launch's chunks, each once.
    std::span<const Piece> pieces(uint64_t launch) const {
        return {pieces_.data() + piece_end_[launch + 1], piece_end_[launch] - piece_end_[launch + 1]};
    }

    // Chunks first..last of an allocation that appears: first used by launch
    // `next`, and handed to another allocation before launch `reused_before`
    // (kNeverStored: never). From then on the uses of these ids are the other
    // allocation's.
    struct FirstUse {
        ChunkId first;
        ChunkId last;
        uint32_t next;
        uint32_t reused_before;
        uint64_t next_use() const { return next == kNeverStored ? kNever : next; }
    };
    // The chunks of the schedule's event `event` (an allocation appearing),
    // ascending, all of them (none for a free).
    std::span<const FirstUse> first_uses(size_t event) const {
        return {first_uses_.data() + first_use_end_[event + 1], first_use_end_[event] - first_use_end_[event + 1]};
    }
    // Whether any allocation takes ids that another had.
    bool reuses_ids() const { return reuses_ids_; }

private:
    // Built backward, so the last launch's pieces come first: launch i's pieces
    // are [piece_end_[i + 1], piece_end_[i]), and piece_end_[launch count] is 0.
    LargeVector<Piece> pieces_;
    LargeVector<uint64_t> piece_end_;
    // Built backward too: event k's are [first_use_end_[k + 1], first_use_end_[k]),
    // and first_use_end_[event count] is 0.
    LargeVector<FirstUse> first_uses_;
    LargeVector<uint64_t> first_use_end_;
    bool reuses_ids_ = false;
};

} // namespace uvmp

// The whole future of a recorded trace in chunk terms: for every launch, the
// chunks it touches and when each of them is touched next. The belady policy
// reads the future from it; the simulator drives the residency model from it.
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

    uint64_t chunk_bytes() const { return chunk_bytes_; }
    uint64_t launch_count() const { return launch_begin_.size() - 1; }
    // Sorted, each chunk once.
    std::span<const ChunkId> chunks(uint64_t launch) const {
        return {chunks_.data() + launch_begin_[launch], launch_begin_[launch + 1] - launch_begin_[launch]};
    }
    // The next launch touching chunks(launch)[index], or kNever.
    uint64_t next_use(uint64_t launch, size_t index) const {
        const uint32_t next = next_use_[launch_begin_[launch] + index];
        return next == kNeverStored ? kNever : next;
    }
    // Bytes of chunks(launch), all of them.
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
    // Launch indices are kept in 32 bits: a chunk list entry is touched once per
    // use of a chunk, and there are tens of them per launch.
    static constexpr uint32_t kNeverStored = UINT32_MAX;

    uint64_t chunk_bytes_;
    std::vector<AllocEvent> events_;
    LargeVector<uint64_t> launch_begin_;
    LargeVector<ChunkId> chunks_;
    LargeVector<uint32_t> next_use_;
    std::vector<uint64_t> first_use_;
    std::vector<uint64_t> chunk_size_;
    LargeVector<uint64_t> launch_bytes_;
    uint64_t footprint_bytes_ = 0;
    uint64_t dangling_accesses_ = 0;
};

} // namespace uvmp

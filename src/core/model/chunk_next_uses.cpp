#include "core/model/chunk_next_uses.h"

#include "core/model/chunk_schedule.h"

#include <algorithm>
#include <vector>

namespace uvmp {

ChunkNextUses::ChunkNextUses(const ChunkSchedule& schedule) {
    const std::span<const ChunkSchedule::AllocEvent> events = schedule.events();
    const uint64_t launches = schedule.launch_count();
    // Backward over the launches, each chunk's next use so far, cutting the
    // launches' ranges into pieces where it changes. 32 bits while building: a
    // quarter of the memory traffic of the pass.
    std::vector<uint32_t> next_use(schedule.chunk_slots(), kNeverStored);
    // Going back past an allocation's appearance: its chunks' next uses so far are
    // its first uses; before it, the ids were another's or nobody's, and that
    // one's uses of them end there.
    std::vector<uint32_t> reused_before(schedule.chunk_slots(), kNeverStored);
    first_use_end_.assign(events.size() + 1, 0);
    size_t undone = events.size();
    auto undo_events_from = [&](uint64_t launches_before) {
        for (; undone > 0 && events[undone - 1].launches_before >= launches_before; --undone) {
            const ChunkSchedule::AllocEvent& e = events[undone - 1];
            if (e.chunk_count > 0) {
                const size_t end = size_t{e.first_chunk} + e.chunk_count;
                for (size_t c = e.first_chunk; c < end;) {
                    const uint32_t next = next_use[c], reused = reused_before[c];
                    size_t run_end = c + 1;
                    while (run_end < end && next_use[run_end] == next && reused_before[run_end] == reused) ++run_end;
                    first_uses_.push_back({static_cast<ChunkId>(c), static_cast<ChunkId>(run_end - 1), next, reused});
                    reuses_ids_ |= reused != kNeverStored;
                    c = run_end;
                }
                std::fill(next_use.begin() + e.first_chunk, next_use.begin() + static_cast<std::ptrdiff_t>(end), kNeverStored);
                // An event after the last launch is at the end (launches < 2^32).
                std::fill(reused_before.begin() + e.first_chunk, reused_before.begin() + static_cast<std::ptrdiff_t>(end),
                          static_cast<uint32_t>(std::min(e.launches_before, launches)));
            }
            first_use_end_[undone - 1] = first_uses_.size();
        }
    };
    // A range is cut into pieces where next uses differ: mostly fewer than 1.5
    // pieces a range. Reserved pages that are never written cost nothing, and
    // growing past the reservation copies the pieces.
    pieces_.reserve(2 * schedule.range_count());
    piece_end_.assign(launches + 1, 0);
    for (uint64_t i = launches; i-- > 0;) {
        undo_events_from(i + 1);
        for (const ChunkRange& r : schedule.launch_ranges(i)) {
            // A range may span the end of one allocation and the start of the next,
            // so the short last chunk of an allocation can sit inside it.
            const size_t range_end = size_t{r.last} + 1;
            for (size_t c = r.first; c < range_end;) {
                const uint32_t next = next_use[c];
                size_t end = c + 1;
                while (end < range_end && next_use[end] == next) ++end;
                pieces_.push_back({static_cast<ChunkId>(c), static_cast<ChunkId>(end - 1), next});
                c = end;
            }
            std::fill(next_use.begin() + r.first, next_use.begin() + r.last + 1, static_cast<uint32_t>(i));
        }
        piece_end_[i] = pieces_.size();
    }
    undo_events_from(0);
}

} // namespace uvmp

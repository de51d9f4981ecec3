#include "core/policy_chunk_schedule.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace uvmp {
namespace {

// Between two launches the recorded times order allocations and frees.
template <class A, class B>
bool recorded_before(const A& a, const B& b) {
    return a.launches_before != b.launches_before ? a.launches_before < b.launches_before : a.time_ns < b.time_ns;
}

// Record indices in that order, ties in recorded order. A trace records them in
// that order almost always, so the sort is mostly skipped.
template <class Record>
std::vector<uint32_t> event_order(const LargeVector<Record>& records) {
    std::vector<uint32_t> order(records.size());
    std::iota(order.begin(), order.end(), 0u);
    const auto earlier = [&](uint32_t x, uint32_t y) { return recorded_before(records[x], records[y]); };
    if (!std::is_sorted(order.begin(), order.end(), earlier)) std::stable_sort(order.begin(), order.end(), earlier);
    return order;
}

LargeVector<ChunkSchedule::AllocEvent> ordered_events(const trace::Trace& trace) {
    if (trace.allocs.size() >= UINT32_MAX || trace.frees.size() >= UINT32_MAX)
        throw std::invalid_argument("the trace has too many allocations to simulate (2^32 or more)");
    const std::vector<uint32_t> allocs = event_order(trace.allocs);
    const std::vector<uint32_t> frees = event_order(trace.frees);
    LargeVector<ChunkSchedule::AllocEvent> events;
    events.reserve(allocs.size() + frees.size());
    // An allocation comes before a free of the same instant.
    size_t a = 0, f = 0;
    while (a < allocs.size() || f < frees.size()) {
        const bool take_alloc =
            f == frees.size() || (a < allocs.size() && !recorded_before(trace.frees[frees[f]], trace.allocs[allocs[a]]));
        if (take_alloc) {
            const trace::Alloc& alloc = trace.allocs[allocs[a++]];
            events.push_back({alloc.launches_before, alloc.id, alloc.size, false});
        } else {
            const trace::Free& free = trace.frees[frees[f++]];
            events.push_back({free.launches_before, free.id, 0, true});
        }
    }
    return events;
}

} // namespace

ChunkSchedule::ChunkSchedule(const trace::Trace& trace, uint64_t chunk_bytes)
    : chunk_bytes_(chunk_bytes), events_(ordered_events(trace)) {
    Residency layout(0, chunk_bytes, ChunkIds::Reused);
    const uint64_t launches = trace.launches.size();
    if (launches >= kNeverStored) throw std::invalid_argument("the trace has too many launches to simulate (2^32 or more)");
    size_t next_event = 0;
    auto apply_events_until = [&](uint64_t launch) {
        replay_events(events_, next_event, launch, layout, [&](size_t k, ChunkRange chunks) {
            events_[k].first_chunk = chunks.first;
            events_[k].chunk_count = chunks.last - chunks.first + 1;
        });
    };
    // Forward, the launches' chunk ranges (the allocations live at each launch
    // decide them); then backward, each chunk's next use, cutting the ranges into
    // pieces where it changes.
    LargeVector<ChunkRange> ranges;
    ranges.reserve(trace.accesses.size());
    LargeVector<uint32_t> range_begin; // accesses, and so ranges, are fewer than 2^32
    range_begin.reserve(launches + 1);
    range_begin.push_back(0);
    launch_bytes_.resize(launches);
    std::vector<ChunkRange> launch_ranges;
    for (uint64_t i = 0; i < launches; ++i) {
        apply_events_until(i);
        const trace::Launch& launch = trace.launches[i];
        if (!trace.has_accesses_of(launch))
            throw std::invalid_argument("launch " + std::to_string(i) + " names accesses beyond the access table");
        const std::span<const trace::Access> accesses = trace.accesses_of(launch);
        layout.launch_ranges(accesses, launch_ranges, &dangling_accesses_);
        uint64_t bytes = 0;
        for (const ChunkRange& r : launch_ranges) bytes += layout.bytes_of(r);
        launch_bytes_[i] = bytes;
        ranges.insert(ranges.end(), launch_ranges.begin(), launch_ranges.end());
        range_begin.push_back(static_cast<uint32_t>(ranges.size()));
    }
    apply_events_until(kNever);
    chunk_slots_ = layout.chunk_slots();

    // Next uses in 32 bits while building: a quarter of the memory traffic of the pass.
    std::vector<uint32_t> next_use(chunk_slots_, kNeverStored);
    // Going back past an allocation's appearance: its chunks' next uses so far are
    // its first uses; before it, the ids were another's or nobody's, and that
    // one's uses of them end there.
    std::vector<uint32_t> reused_before(chunk_slots_, kNeverStored);
    LargeVector<uint64_t> touched_of_event(events_.size(), 0);
    first_use_end_.assign(events_.size() + 1, 0);
    size_t undone = events_.size();
    auto undo_events_from = [&](uint64_t launches_before) {
        for (; undone > 0 && events_[undone - 1].launches_before >= launches_before; --undone) {
            const AllocEvent& e = events_[undone - 1];
            if (e.chunk_count > 0) {
                const size_t end = size_t{e.first_chunk} + e.chunk_count;
                for (size_t c = e.first_chunk; c < end;) {
                    const uint32_t next = next_use[c], reused = reused_before[c];
                    size_t run_end = c + 1;
                    while (run_end < end && next_use[run_end] == next && reused_before[run_end] == reused) ++run_end;
                    first_uses_.push_back({static_cast<ChunkId>(c), static_cast<ChunkId>(run_end - 1), next, reused});
                    reuses_ids_ |= reused != kNeverStored;
                    if (next != kNeverStored)
                        for (size_t k = c - e.first_chunk; k < run_end - e.first_chunk; ++k)
                            touched_of_event[undone - 1] += std::min(chunk_bytes, e.size - k * chunk_bytes);
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
    pieces_.reserve(2 * ranges.size());
    piece_end_.assign(launches + 1, 0);
    for (uint64_t i = launches; i-- > 0;) {
        undo_events_from(i + 1);
        for (uint32_t k = range_begin[i]; k < range_begin[i + 1]; ++k) {
            // A range may span the end of one allocation and the start of the next,
            // so the short last chunk of an allocation can sit inside it.
            const ChunkRange r = ranges[k];
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
    // The footprint is the peak of live bytes that are ever touched: memory that
    // is freed and allocated again each step counts once per step, not per cycle.
    std::unordered_map<uint32_t, uint64_t> touched_of_live;
    uint64_t live_touched = 0;
    for (size_t k = 0; k < events_.size(); ++k) {
        const AllocEvent& e = events_[k];
        if (e.is_free) {
            const auto live = touched_of_live.find(e.alloc_id);
            if (live == touched_of_live.end()) continue;
            live_touched -= live->second;
            touched_of_live.erase(live);
        } else {
            touched_of_live[e.alloc_id] = touched_of_event[k];
            live_touched += touched_of_event[k];
            footprint_bytes_ = std::max(footprint_bytes_, live_touched);
        }
    }
}

void ChunkSchedule::launch_ranges(uint64_t launch, std::vector<ChunkRange>& out) const {
    out.clear();
    for (const Piece& p : pieces(launch)) {
        if (!out.empty() && out.back().last + 1 == p.first) out.back().last = p.last;
        else out.push_back({p.first, p.last});
    }
}

uint64_t ChunkSchedule::touched_bytes(uint64_t first_launch, uint64_t last_launch) const {
    // The events replayed up to each launch say how large its chunks are then.
    Residency layout(0, chunk_bytes_, ChunkIds::Reused);
    std::vector<bool> seen(chunk_slots_, false);
    uint64_t bytes = 0;
    last_launch = std::min(last_launch, launch_count());
    size_t next_event = 0;
    for (uint64_t i = 0; i < last_launch; ++i) {
        replay_events(events_, next_event, i, layout, [](size_t, ChunkRange) {});
        if (i < first_launch) continue;
        for (const Piece& p : pieces(i))
            for (ChunkId c = p.first; c <= p.last; ++c)
                if (!seen[c]) {
                    seen[c] = true;
                    bytes += layout.chunk_size(c);
                }
    }
    return bytes;
}

} // namespace uvmp

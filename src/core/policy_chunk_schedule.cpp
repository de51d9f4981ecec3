#include "core/policy_chunk_schedule.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace uvmp {
namespace {

constexpr uint64_t kMaxReservedSlots = uint64_t{1} << 26;

std::vector<ChunkSchedule::AllocEvent> ordered_events(const trace::Trace& trace) {
    struct Keyed {
        ChunkSchedule::AllocEvent event;
        uint64_t time_ns;
    };
    std::vector<Keyed> keyed;
    keyed.reserve(trace.allocs.size() + trace.frees.size());
    for (const trace::Alloc& a : trace.allocs) keyed.push_back({{a.launches_before, a.id, a.size, false}, a.time_ns});
    for (const trace::Free& f : trace.frees) keyed.push_back({{f.launches_before, f.id, 0, true}, f.time_ns});
    // Between two launches the recorded times order events; an allocation comes
    // before a free of the same instant.
    std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& x, const Keyed& y) {
        if (x.event.launches_before != y.event.launches_before) return x.event.launches_before < y.event.launches_before;
        if (x.time_ns != y.time_ns) return x.time_ns < y.time_ns;
        return !x.event.is_free && y.event.is_free;
    });
    std::vector<ChunkSchedule::AllocEvent> events;
    events.reserve(keyed.size());
    for (const Keyed& k : keyed) events.push_back(k.event);
    return events;
}

} // namespace

ChunkSchedule::ChunkSchedule(const trace::Trace& trace, uint64_t chunk_bytes)
    : chunk_bytes_(chunk_bytes), events_(ordered_events(trace)) {
    Residency layout(0, chunk_bytes);
    // Room for the chunks of every allocation, so that the per-chunk state is never
    // copied while it grows; past a bound, from a corrupt size, it grows as needed.
    uint64_t slots = 0;
    for (const trace::Alloc& a : trace.allocs) slots += std::min<uint64_t>(a.size / chunk_bytes + 1, kNoChunk);
    layout.reserve_chunk_slots(static_cast<uint32_t>(std::min<uint64_t>(slots, kMaxReservedSlots)));
    const uint64_t launches = trace.launches.size();
    if (launches >= kNeverStored) throw std::invalid_argument("the trace has too many launches to simulate (2^32 or more)");
    size_t next_event = 0;
    auto apply_events_until = [&](uint64_t launch) {
        for (; next_event < events_.size() && events_[next_event].launches_before <= launch; ++next_event) {
            const AllocEvent& e = events_[next_event];
            if (e.is_free) layout.remove_allocation(e.alloc_id);
            else layout.add_allocation(e.alloc_id, e.size);
        }
    };
    // Forward, the launches' chunk ranges (the allocations live at each launch
    // decide them); then backward, each chunk's next use, cutting the ranges into
    // pieces where it changes.
    LargeVector<ChunkRange> ranges;
    ranges.reserve(trace.accesses.size());
    LargeVector<uint32_t> range_begin; // accesses, and so ranges, are fewer than 2^32
    range_begin.reserve(launches + 1);
    range_begin.push_back(0);
    std::vector<ChunkRange> launch_ranges;
    for (uint64_t i = 0; i < launches; ++i) {
        apply_events_until(i);
        const trace::Launch& launch = trace.launches[i];
        if (!trace.has_accesses_of(launch))
            throw std::invalid_argument("launch " + std::to_string(i) + " names accesses beyond the access table");
        const std::span<const trace::Access> accesses = trace.accesses_of(launch);
        layout.launch_ranges(accesses, launch_ranges, &dangling_accesses_);
        ranges.insert(ranges.end(), launch_ranges.begin(), launch_ranges.end());
        range_begin.push_back(static_cast<uint32_t>(ranges.size()));
    }
    apply_events_until(kNever);

    chunk_size_.resize(layout.chunk_slots());
    for (ChunkId c = 0; c < layout.chunk_slots(); ++c) chunk_size_[c] = layout.chunk_size(c);
    // Next uses in 32 bits while building: a quarter of the memory traffic of the pass.
    std::vector<uint32_t> next_use(layout.chunk_slots(), kNeverStored);
    launch_bytes_.resize(launches);
    pieces_.reserve(ranges.size());
    piece_end_.assign(launches + 1, 0);
    for (uint64_t i = launches; i-- > 0;) {
        uint64_t bytes = 0;
        for (uint32_t k = range_begin[i]; k < range_begin[i + 1]; ++k) {
            const ChunkRange r = ranges[k];
            // A range may span the end of one allocation and the start of the next,
            // so the short last chunk of an allocation can sit inside it.
            const size_t range_end = size_t{r.last} + 1;
            for (size_t c = r.first; c < range_end; ++c) bytes += chunk_size_[c];
            for (size_t c = r.first; c < range_end;) {
                const uint32_t next = next_use[c];
                size_t end = c + 1;
                while (end < range_end && next_use[end] == next) ++end;
                pieces_.push_back({static_cast<ChunkId>(c), static_cast<ChunkId>(end - 1), next});
                std::fill(next_use.begin() + static_cast<std::ptrdiff_t>(c), next_use.begin() + static_cast<std::ptrdiff_t>(end),
                          static_cast<uint32_t>(i));
                c = end;
            }
        }
        launch_bytes_[i] = bytes;
        piece_end_[i] = pieces_.size();
    }
    first_use_.resize(layout.chunk_slots());
    for (ChunkId c = 0; c < layout.chunk_slots(); ++c)
        first_use_[c] = next_use[c] == kNeverStored ? kNever : next_use[c];
    // The footprint is the peak of live bytes that are ever touched: memory that
    // is freed and allocated again each step counts once per step, not per cycle.
    uint64_t live_touched = 0;
    for (const AllocEvent& e : events_) {
        const ChunkId first = layout.first_chunk(e.alloc_id);
        uint64_t touched = 0;
        for (ChunkId c = first; c < first + layout.chunk_count(e.alloc_id); ++c)
            if (first_use_[c] != kNever) touched += chunk_size_[c];
        if (e.is_free) live_touched -= std::min(live_touched, touched);
        else live_touched += touched;
        footprint_bytes_ = std::max(footprint_bytes_, live_touched);
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
    std::vector<bool> seen(first_use_.size(), false);
    uint64_t bytes = 0;
    last_launch = std::min(last_launch, launch_count());
    for (uint64_t i = first_launch; i < last_launch; ++i)
        for (const Piece& p : pieces(i))
            for (ChunkId c = p.first; c <= p.last; ++c)
                if (!seen[c]) {
                    seen[c] = true;
                    bytes += chunk_size_[c];
                }
    return bytes;
}

} // namespace uvmp

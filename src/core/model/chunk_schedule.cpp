#include "core/model/chunk_schedule.h"

#include "core/util/bit_words.h"
#include "core/model/chunk_next_uses.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

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

// The trace's allocations and frees in order, and where its slab records fall
// among them: a slab made at the instant of an allocation comes before it, one
// given back at the instant of a free after it.
void order_events(const trace::Trace& trace, LargeVector<ChunkSchedule::AllocEvent>& events,
                  std::vector<ChunkSchedule::SlabChange>& slab_changes, std::unordered_set<uint32_t>& host_ids) {
    if (trace.allocs.size() >= UINT32_MAX || trace.frees.size() >= UINT32_MAX)
        throw std::invalid_argument("the trace has too many allocations to simulate (2^32 or more)");
    const std::vector<uint32_t> allocs = event_order(trace.allocs);
    const std::vector<uint32_t> frees = event_order(trace.frees);
    const std::vector<uint32_t> slabs = event_order(trace.slabs);
    events.reserve(allocs.size() + frees.size());
    slab_changes.reserve(slabs.size());
    // A free names its allocation by id: the live ones, for their address and kind.
    std::unordered_map<uint32_t, const trace::Alloc*> live;
    if (!frees.empty()) live.reserve(allocs.size());
    size_t a = 0, f = 0, next_slab = 0;
    while (true) {
        // An allocation comes before a free of the same instant.
        const bool any = a < allocs.size() || f < frees.size();
        const bool take_alloc =
            f == frees.size() || (a < allocs.size() && !recorded_before(trace.frees[frees[f]], trace.allocs[allocs[a]]));
        for (; next_slab < slabs.size(); ++next_slab) {
            const trace::Slab& slab = trace.slabs[slabs[next_slab]];
            const auto due_before = [&](const auto& next) {
                return slab.action == trace::SlabAction::Created ? !recorded_before(next, slab) : recorded_before(slab, next);
            };
            if (any && !(take_alloc ? due_before(trace.allocs[allocs[a]]) : due_before(trace.frees[frees[f]]))) break;
            slab_changes.push_back({slab.launches_before, events.size(), slab.base, slab.size});
        }
        if (!any) break;
        if (take_alloc) {
            const trace::Alloc& alloc = trace.allocs[allocs[a++]];
            // Host memory is never on the GPU: it has no chunks to place or move.
            if (alloc.kind == trace::AllocKind::Host) {
                host_ids.insert(alloc.id);
                continue;
            }
            events.push_back({alloc.launches_before, alloc.id, alloc.size, false, kNoChunk, 0, alloc.address, alloc.kind});
            if (!frees.empty()) live[alloc.id] = &alloc;
        } else {
            const trace::Free& free = trace.frees[frees[f++]];
            if (host_ids.count(free.id)) continue;
            ChunkSchedule::AllocEvent& e = events.emplace_back();
            e.launches_before = free.launches_before;
            e.alloc_id = free.id;
            e.is_free = true;
            if (const auto found = live.find(free.id); found != live.end()) {
                e.address = found->second->address;
                e.kind = found->second->kind;
                live.erase(found);
            }
        }
    }
}

// One bit a chunk, the table growing with the chunks named. Most ranges a
// launch touches were touched before: the marks are tested 64 at a time.
class ChunkMarks {
public:
    void clear(ChunkRange range) {
        for_words(range, [](uint64_t& word, uint64_t mask) { word &= ~mask; });
    }
    // Marks the range's chunks, calling `first_mark(chunk)` for those not marked before.
    template <class F>
    void mark(ChunkRange range, F&& first_mark) {
        for_words(range, [&](uint64_t& word, uint64_t mask) {
            for (uint64_t unmarked = mask & ~word; unmarked != 0; unmarked &= unmarked - 1)
                first_mark(static_cast<ChunkId>((&word - bits_.data()) * 64 + std::countr_zero(unmarked)));
            word |= mask;
        });
    }

private:
    template <class F>
    void for_words(ChunkRange range, F&& f) {
        if (bits_.size() <= range.last / 64) bits_.resize(range.last / 64 + 1, 0);
        for_bit_words(bits_.data(), range.first, range.last, f);
    }
    std::vector<uint64_t> bits_;
};

} // namespace

ChunkSchedule::ChunkSchedule(const trace::Trace& trace, uint64_t chunk_bytes)
    : chunk_bytes_(chunk_bytes) {
    // Accesses to host memory name no chunk, and are not dangling either.
    std::unordered_set<uint32_t> host_ids;
    order_events(trace, events_, slab_changes_, host_ids);
    Residency layout(0, chunk_bytes, ChunkIds::Reused);
    const uint64_t launches = trace.launches.size();
    if (launches >= UINT32_MAX) throw std::invalid_argument("the trace has too many launches to simulate (2^32 or more)");
    // For the footprint: the bytes of each allocation's chunks that are touched
    // while it holds them, found by marking each chunk at its first touch.
    LargeVector<uint64_t> touched_of_event(events_.size(), 0);
    std::vector<uint32_t> holder; // the event that gave each chunk id out last
    ChunkMarks touched;           // whether that allocation touched it
    size_t next_event = 0;
    auto apply_events_until = [&](uint64_t launch) {
        replay_events(events_, next_event, launch, layout, [&](size_t k, ChunkRange chunks) {
            events_[k].first_chunk = chunks.first;
            events_[k].chunk_count = chunks.last - chunks.first + 1;
            if (holder.size() <= chunks.last) holder.resize(chunks.last + 1);
            std::fill(holder.begin() + chunks.first, holder.begin() + chunks.last + 1, static_cast<uint32_t>(k));
            touched.clear(chunks);
        });
    };
    // A range comes from one access at least. Launches can share access lists
    // (repeated iterations do), so the accesses they name are counted.
    uint64_t named_accesses = 0;
    for (const trace::Launch& launch : trace.launches) named_accesses += launch.access_count;
    ranges_.reserve(named_accesses);
    range_end_.reserve(launches + 1);
    range_end_.push_back(0);
    launch_bytes_.resize(launches);
    std::vector<ChunkRange> launch_ranges;
    for (uint64_t i = 0; i < launches; ++i) {
        apply_events_until(i);
        const trace::Launch& launch = trace.launches[i];
        if (!trace.has_accesses_of(launch))
            throw std::invalid_argument("launch " + std::to_string(i) + " names accesses beyond the access table");
        const uint64_t dangling_before = dangling_accesses_;
        layout.launch_ranges(trace.accesses_of(launch), launch_ranges, &dangling_accesses_);
        if (dangling_accesses_ != dangling_before && !host_ids.empty())
            for (const trace::Access& access : trace.accesses_of(launch)) dangling_accesses_ -= host_ids.count(access.alloc_id);
        uint64_t bytes = 0;
        for (const ChunkRange& r : launch_ranges) {
            bytes += layout.bytes_of(r);
            touched.mark(r, [&](ChunkId c) {
                const AllocEvent& e = events_[holder[c]];
                const bool last = c == e.first_chunk + e.chunk_count - 1; // only it can be short
                touched_of_event[holder[c]] += last ? e.size - uint64_t{e.chunk_count - 1} * chunk_bytes : chunk_bytes;
            });
        }
        launch_bytes_[i] = bytes;
        ranges_.insert(ranges_.end(), launch_ranges.begin(), launch_ranges.end());
        range_end_.push_back(static_cast<uint32_t>(ranges_.size()));
    }
    apply_events_until(UINT64_MAX);
    chunk_slots_ = layout.chunk_slots();

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

ChunkSchedule::~ChunkSchedule() = default;

const ChunkNextUses& ChunkSchedule::next_uses() const {
    std::call_once(next_uses_built_, [this] { next_uses_ = std::make_unique<ChunkNextUses>(*this); });
    return *next_uses_;
}

uint64_t ChunkSchedule::touched_bytes(uint64_t first_launch, uint64_t last_launch) const {
    // The events replayed up to each launch say how large its chunks are then.
    Residency layout(0, chunk_bytes_, ChunkIds::Given);
    ChunkMarks seen;
    uint64_t bytes = 0;
    last_launch = std::min(last_launch, launch_count());
    size_t next_event = 0;
    for (uint64_t i = 0; i < last_launch; ++i) {
        replay_events(events_, next_event, i, layout, [](size_t, ChunkRange) {});
        if (i < first_launch) continue;
        for (const ChunkRange& r : launch_ranges(i)) seen.mark(r, [&](ChunkId c) { bytes += layout.chunk_size(c); });
    }
    return bytes;
}

} // namespace uvmp

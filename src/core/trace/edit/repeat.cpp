#include "core/trace/edit/repeat.h"

#include "core/trace/analysis/iteration_bounds.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace uvmp {
namespace {

// The iteration copied, and the trace cut back to its end.
struct Repeat {
    uint64_t begin = 0, end = 0;
    uint64_t span_ns = 0;  // from its first launch's call to its last kernel's end
    uint64_t next_mark = 0;
    std::vector<uint64_t> lengthened; // the bounds, each copy's end appended
};

Repeat cut_after_last_iteration(trace::Trace& trace, std::span<const uint64_t> bounds) {
    const auto iteration = last_full_iteration(bounds);
    if (!iteration) throw std::invalid_argument("the trace holds no full iteration to repeat");
    Repeat r;
    r.begin = iteration->begin;
    r.end = iteration->end;
    // Launches after the last full iteration did not repeat in full: drop them.
    trace.launches.resize(r.end);
    // A mark at `end` starts the next, partial iteration: the first copy puts it back.
    std::erase_if(trace.iterations, [&](const trace::Iteration& m) { return m.launches_before >= r.end; });
    r.span_ns = trace.launches[r.end - 1].time_ns - trace.launches[r.begin].time_ns + trace.launches[r.end - 1].duration_ns;
    r.next_mark = trace.iterations.empty() ? 0 : trace.iterations.back().index + 1;
    r.lengthened.assign(bounds.begin(), bounds.end()); // the repeated iteration ends the last
    return r;
}

// Appends copy `copy` (from 1) of the iteration's launches. `accesses_for`,
// where given, writes a launch's accesses for the copy and says whether they
// differ from the original's (else the copy names the original's list).
void append_copy(trace::Trace& trace, Repeat& r, uint32_t copy,
                 const std::function<bool(std::span<const trace::Access>, std::vector<trace::Access>&)>& accesses_for) {
    const uint64_t first = trace.launches.size();
    const uint64_t shift_ns = r.span_ns * copy;
    std::vector<trace::Access> remapped;
    for (uint64_t i = r.begin; i < r.end; ++i) {
        trace::Launch launch = trace.launches[i];
        launch.seq = trace.launches.back().seq + 1; // launches dropped by the recorder keep their gap
        launch.time_ns += shift_ns;
        remapped.clear();
        if (accesses_for && trace.has_accesses_of(launch) && accesses_for(trace.accesses_of(launch), remapped)) {
            launch.first_access = static_cast<uint32_t>(trace.accesses.size());
            for (const trace::Access& a : remapped) trace.accesses.push_back(a);
        }
        trace.launches.push_back(launch);
    }
    if (!trace.iterations.empty()) trace.iterations.push_back({r.next_mark++, first, trace.launches[first].time_ns});
    r.lengthened.push_back(trace.launches.size());
}

// What came after the last full iteration (teardown) now comes after the
// copies: the records from launch `first_moved` on.
void move_after_copies(trace::Trace& trace, uint64_t first_moved) {
    const uint64_t new_end = trace.launches.size();
    for (trace::Alloc& a : trace.allocs)
        if (a.launches_before >= first_moved) a.launches_before = new_end;
    for (trace::Free& f : trace.frees)
        if (f.launches_before >= first_moved) f.launches_before = new_end;
    for (trace::Slab& s : trace.slabs)
        if (s.launches_before >= first_moved) s.launches_before = new_end;
}

} // namespace

std::vector<uint64_t> repeat_last_iteration(trace::Trace& trace, std::span<const uint64_t> bounds, uint32_t times) {
    if (times == 0) return {bounds.begin(), bounds.end()};
    const auto iteration = last_full_iteration(bounds);
    if (!iteration) throw std::invalid_argument("the trace holds no full iteration to repeat");
    const auto [begin, end] = *iteration;
    for (const trace::Alloc& a : trace.allocs)
        if (a.launches_before > begin && a.launches_before < end)
            throw std::invalid_argument("its last iteration allocates memory (before launch " +
                                        std::to_string(a.launches_before) + "): it cannot be repeated");
    for (const trace::Free& f : trace.frees)
        if (f.launches_before > begin && f.launches_before <= end)
            throw std::invalid_argument("its last iteration frees memory (before launch " +
                                        std::to_string(f.launches_before) + "): it cannot be repeated");
    for (const trace::Slab& s : trace.slabs)
        if (s.launches_before > begin && s.launches_before <= end)
            throw std::invalid_argument("its last iteration changes the pool's slabs (before launch " +
                                        std::to_string(s.launches_before) + "): it cannot be repeated");
    Repeat r = cut_after_last_iteration(trace, bounds);
    trace.launches.reserve(r.end + (r.end - r.begin) * times);
    for (uint32_t copy = 1; copy <= times; ++copy) append_copy(trace, r, copy, nullptr);
    move_after_copies(trace, r.end + 1);
    return r.lengthened;
}

std::vector<uint64_t> repeat_last_iteration_with_blocks(trace::Trace& trace, std::span<const uint64_t> bounds,
                                                        uint32_t times) {
    if (times == 0) return {bounds.begin(), bounds.end()};
    if (bounds.size() < 3)
        throw std::invalid_argument("a span before the iteration is needed to repeat one that makes blocks");
    const uint64_t before = bounds[bounds.size() - 3], begin = bounds[bounds.size() - 2], end = bounds.back();
    const auto within = [](uint64_t at, uint64_t lo, uint64_t hi) { return at >= lo && at < hi; };
    const auto by_time = [](const auto& x, const auto& y) {
        return x.launches_before != y.launches_before ? x.launches_before < y.launches_before : x.time_ns < y.time_ns;
    };
    std::stable_sort(trace.allocs.begin(), trace.allocs.end(), by_time);
    std::stable_sort(trace.frees.begin(), trace.frees.end(), by_time);

    // The pool's blocks the iteration and the one before it make, in order.
    const auto pooled = [](const trace::Alloc& a) {
        return a.kind == trace::AllocKind::Pooled || a.kind == trace::AllocKind::Host;
    };
    std::vector<trace::Alloc> made;
    std::unordered_map<uint32_t, size_t> made_at;
    std::vector<const trace::Alloc*> made_before;
    uint32_t next_id = 0;
    for (const trace::Alloc& a : trace.allocs) {
        next_id = std::max(next_id, a.id + 1);
        if (within(a.launches_before, begin, end)) {
            if (!pooled(a))
                throw std::invalid_argument("its last iteration makes memory outside the pool (before launch " +
                                            std::to_string(a.launches_before) + "): it cannot be repeated");
            made_at.emplace(a.id, made.size());
            made.push_back(a);
        } else if (within(a.launches_before, before, begin) && pooled(a)) {
            made_before.push_back(&a);
        }
    }
    // Which blocks the iteration frees: its own, and the one before's.
    std::unordered_set<uint32_t> freed_within;
    for (const trace::Free& f : trace.frees)
        if (within(f.launches_before, begin, end)) freed_within.insert(f.id);
    // A block of the span before that the iteration frees stands for the
    // iteration's block that outlives it, as it outlived its own: a copy frees,
    // and its launches name, the copy before's block there. They pair by size,
    // each size's blocks in order of making, the last with the last: the span
    // before may be part of a step (a recording begun within one), which
    // lacks its first blocks, or hold set-up blocks that no later step makes.
    // Any other block of the span before is what it was in every copy.
    std::map<uint64_t, std::vector<uint32_t>> freed_before_by_size; // ids
    std::map<uint64_t, std::vector<size_t>> outliving_by_size;      // places in `made`
    for (const trace::Alloc* a : made_before)
        if (freed_within.count(a->id)) freed_before_by_size[a->size].push_back(a->id);
    for (size_t own = 0; own < made.size(); ++own)
        if (!freed_within.count(made[own].id)) outliving_by_size[made[own].size].push_back(own);
    std::unordered_map<uint32_t, size_t> paired; // a block of the span before: its partner's place
    for (const auto& [size, ids] : freed_before_by_size) {
        const auto it = outliving_by_size.find(size);
        if (it == outliving_by_size.end()) continue;
        const std::vector<size_t>& owns = it->second;
        for (size_t k = 1; k <= std::min(ids.size(), owns.size()); ++k)
            paired.emplace(ids[ids.size() - k], owns[owns.size() - k]);
    }
    const auto counterpart = [&](uint32_t id) -> std::optional<size_t> {
        const auto it = paired.find(id);
        return it == paired.end() ? std::nullopt : std::optional<size_t>(it->second);
    };
    // The iteration's frees: of its own blocks, or of paired ones of the one before.
    struct CopiedFree {
        trace::Free free;
        size_t place = 0;
        bool own = false;
    };
    std::vector<CopiedFree> frees;
    for (const trace::Free& f : trace.frees) {
        if (!within(f.launches_before, begin, end)) continue;
        if (const auto it = made_at.find(f.id); it != made_at.end()) frees.push_back({f, it->second, true});
        else if (const auto place = counterpart(f.id)) frees.push_back({f, *place, false});
    }

    Repeat r = cut_after_last_iteration(trace, bounds);
    // The ids of the copy before's blocks, by place (the iteration's own for the first copy).
    std::vector<uint32_t> previous(made.size()), current(made.size());
    for (size_t p = 0; p < made.size(); ++p) previous[p] = made[p].id;
    std::unordered_set<uint32_t> freed_by_copies;
    std::vector<trace::Alloc> new_allocs;
    std::vector<trace::Free> new_frees;
    for (uint32_t copy = 1; copy <= times; ++copy) {
        const uint64_t shift = trace.launches.size() - begin, shift_ns = r.span_ns * copy;
        for (size_t p = 0; p < made.size(); ++p) {
            current[p] = next_id++;
            trace::Alloc a = made[p];
            a.id = current[p];
            a.launches_before += shift;
            a.time_ns += shift_ns;
            new_allocs.push_back(a);
        }
        const auto remap = [&](uint32_t id) {
            if (const auto it = made_at.find(id); it != made_at.end()) return current[it->second];
            if (const auto place = counterpart(id)) return previous[*place];
            return id;
        };
        append_copy(trace, r, copy, [&](std::span<const trace::Access> accesses, std::vector<trace::Access>& out) {
            bool changed = false;
            for (trace::Access a : accesses) {
                const uint32_t id = remap(a.alloc_id);
                changed |= id != a.alloc_id;
                a.alloc_id = id;
                out.push_back(a);
            }
            return changed;
        });
        for (const CopiedFree& c : frees) {
            trace::Free f = c.free;
            f.id = c.own ? current[c.place] : previous[c.place];
            if (copy == 1 && !c.own) freed_by_copies.insert(f.id);
            f.launches_before += shift;
            f.time_ns += shift_ns;
            new_frees.push_back(f);
        }
        previous.swap(current);
    }
    // The iteration's blocks that the first copy frees were freed after it in the
    // recording too: those frees go, the copy's stand for them. (The copies
    // place their blocks anew and make no slabs.)
    std::erase_if(trace.frees, [&](const trace::Free& f) { return f.launches_before >= end && freed_by_copies.count(f.id); });
    move_after_copies(trace, end);
    for (trace::Alloc& a : new_allocs) trace.allocs.push_back(a);
    for (trace::Free& f : new_frees) trace.frees.push_back(f);
    std::stable_sort(trace.allocs.begin(), trace.allocs.end(), by_time);
    std::stable_sort(trace.frees.begin(), trace.frees.end(), by_time);
    return r.lengthened;
}

} // namespace uvmp

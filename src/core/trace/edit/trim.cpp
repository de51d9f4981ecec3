#include "core/trace/edit/trim.h"

#include "core/config/options.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_set>

namespace uvmp::trace {

void keep_first_steps(Trace& trace, std::span<const uint64_t> bounds, uint64_t steps) {
    const uint64_t whole = bounds.size() < 2 ? 0 : bounds.size() - 1;
    if (steps == 0) throw std::invalid_argument("at least one step must be kept");
    if (steps > whole)
        throw std::invalid_argument("the trace has " + std::to_string(whole) + " whole steps, fewer than " +
                                    std::to_string(steps));
    const uint64_t cut = bounds[steps];
    std::optional<uint64_t> mark_ns; // of the mark that ends the last kept step
    for (const Iteration& mark : trace.iterations)
        if (mark.launches_before == cut) {
            mark_ns = mark.time_ns;
            break;
        }
    // Whether a record placed at `launches_before` came before the cut. At the cut,
    // one that `begins_step` (an allocation, a move, a new slab) is the next step's,
    // as a replay's steps have them, and so is what came after the mark there.
    auto kept = [&](uint64_t launches_before, uint64_t time_ns, bool begins_step) {
        if (launches_before != cut) return launches_before < cut;
        return !begins_step && (!mark_ns || time_ns <= *mark_ns);
    };
    // The teardown moves earlier by the time from the cut to the trace's end:
    // from mark to mark where both ends have one, else from launch to launch.
    const Launch& last_kept = trace.launches[cut - 1];
    uint64_t shift_ns = trace.launches.back().time_ns - last_kept.time_ns;
    if (mark_ns && !trace.iterations.empty() && trace.iterations.back().launches_before == trace.launches.size())
        shift_ns = trace.iterations.back().time_ns - *mark_ns;
    const uint64_t floor_ns = mark_ns ? *mark_ns + 1 : last_kept.time_ns;
    auto to_teardown = [&](uint64_t& launches_before, uint64_t& time_ns) {
        launches_before = cut;
        time_ns = std::max(time_ns > shift_ns ? time_ns - shift_ns : 0, floor_ns);
    };

    std::erase_if(trace.allocs, [&](const Alloc& a) { return !kept(a.launches_before, a.time_ns, true); });
    std::unordered_set<uint32_t> allocations;
    for (const Alloc& a : trace.allocs) allocations.insert(a.id);
    std::erase_if(trace.frees, [&](const Free& f) {
        return !kept(f.launches_before, f.time_ns, false) && !allocations.count(f.id);
    });
    for (Free& f : trace.frees)
        if (!kept(f.launches_before, f.time_ns, false)) to_teardown(f.launches_before, f.time_ns);

    // Slabs in order: a release after the cut stays when its slab was made before it.
    std::unordered_set<uint32_t> open_slabs;
    size_t slabs = 0;
    for (size_t i = 0; i < trace.slabs.size(); ++i) {
        Slab s = trace.slabs[i];
        const bool created = s.action == SlabAction::Created;
        if (kept(s.launches_before, s.time_ns, created)) {
            if (created) open_slabs.insert(s.id);
            else open_slabs.erase(s.id);
        } else {
            if (created || !open_slabs.erase(s.id)) continue;
            to_teardown(s.launches_before, s.time_ns);
        }
        trace.slabs[slabs++] = s;
    }
    trace.slabs.resize(slabs);

    std::erase_if(trace.moves, [&](const Move& m) { return !kept(m.launches_before, m.time_ns, true); });
    std::erase_if(trace.iterations, [&](const Iteration& m) { return !kept(m.launches_before, m.time_ns, false); });
    trace.launches.resize(cut);
    uint64_t accesses = 0;
    for (const Launch& l : trace.launches) accesses = std::max<uint64_t>(accesses, uint64_t{l.first_access} + l.access_count);
    if (accesses < trace.accesses.size()) trace.accesses.resize(accesses);
}

void strip_option_directories(Header& header) {
    for (auto& [key, value] : header.options) {
        const OptionSpec* spec = find_option(key);
        const bool path = spec ? spec->type == OptionType::Path : value.starts_with('/');
        if (path && !value.empty()) value = std::filesystem::path(value).filename().string();
    }
}

} // namespace uvmp::trace

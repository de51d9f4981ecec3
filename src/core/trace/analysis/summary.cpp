#include "core/trace/analysis/summary.h"

#include "core/trace/analysis/iteration_bounds.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace uvmp::trace {
namespace {

bool counts_as_device_memory(AllocKind kind) { return is_managed(kind) || kind == AllocKind::PassedThrough; }

// A change of live device bytes, placed among the launches and in time.
struct LiveChange {
    uint64_t launches_before = 0;
    uint64_t time_ns = 0;
    int64_t delta = 0;
};

std::vector<LiveChange> device_memory_changes(const Trace& trace) {
    std::unordered_map<uint32_t, const Alloc*> device_allocs;
    std::vector<LiveChange> changes;
    for (const Alloc& alloc : trace.allocs) {
        if (!counts_as_device_memory(alloc.kind)) continue;
        device_allocs[alloc.id] = &alloc;
        changes.push_back({alloc.launches_before, alloc.time_ns, static_cast<int64_t>(alloc.size)});
    }
    for (const Free& free : trace.frees) {
        auto found = device_allocs.find(free.id);
        if (found == device_allocs.end()) continue;
        changes.push_back({free.launches_before, free.time_ns, -static_cast<int64_t>(found->second->size)});
        device_allocs.erase(found); // a second free of the same id frees nothing
    }
    // At equal positions frees go first: memory freed and reused by the next
    // allocation is never live twice.
    std::stable_sort(changes.begin(), changes.end(), [](const LiveChange& a, const LiveChange& b) {
        if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
        return a.delta < b.delta;
    });
    return changes;
}

IterationFootprint measure_iteration(const Trace& trace, const IterationPeriod& period,
                                     const std::vector<LiveChange>& changes) {
    IterationFootprint footprint;
    uint64_t launches = trace.launches.size();
    // The last full period is the steady state the prefetcher works in.
    uint64_t full = (launches - period.first_launch) / period.period;
    footprint.first_launch = period.first_launch + (full > 0 ? full - 1 : 0) * period.period;
    uint64_t end = std::min(launches, footprint.first_launch + period.period);

    std::unordered_map<uint32_t, uint64_t> size_of;
    for (const Alloc& alloc : trace.allocs) size_of[alloc.id] = alloc.size;
    std::unordered_set<uint32_t> touched;
    for (uint64_t i = footprint.first_launch; i < end; ++i) {
        const Launch& launch = trace.launches[i];
        for (uint32_t a = 0; a < launch.access_count; ++a) {
            uint64_t index = uint64_t{launch.first_access} + a;
            if (index >= trace.accesses.size()) break;
            touched.insert(trace.accesses[index].alloc_id);
        }
    }
    footprint.accessed_allocs = touched.size();
    for (uint32_t id : touched) {
        auto found = size_of.find(id);
        if (found != size_of.end()) footprint.accessed_bytes += found->second;
    }

    // Live bytes as launches go by: what was live when the period began, then
    // the highest point reached before its last launch.
    std::vector<LiveChange> by_launch = changes;
    std::stable_sort(by_launch.begin(), by_launch.end(), [](const LiveChange& a, const LiveChange& b) {
        if (a.launches_before != b.launches_before) return a.launches_before < b.launches_before;
        return a.delta < b.delta;
    });
    int64_t live = 0;
    size_t next = 0;
    while (next < by_launch.size() && by_launch[next].launches_before <= footprint.first_launch) {
        live += by_launch[next++].delta;
    }
    int64_t peak = live;
    while (next < by_launch.size() && by_launch[next].launches_before < end) {
        live += by_launch[next++].delta;
        peak = std::max(peak, live);
    }
    footprint.peak_live_bytes = static_cast<uint64_t>(std::max<int64_t>(peak, 0));
    return footprint;
}

PoolTotals pool_totals(const Trace& trace) {
    PoolTotals totals;
    std::unordered_set<uint32_t> pooled;
    for (const Alloc& alloc : trace.allocs)
        if (alloc.kind == AllocKind::Pooled) pooled.insert(alloc.id);
    for (const Free& free : trace.frees) totals.pooled_frees += pooled.erase(free.id);
    for (const SlabStep& step : slab_history(trace)) {
        ++(step.slab->action == SlabAction::Created ? totals.slabs_created : totals.slabs_released);
        totals.peak_slab_bytes = std::max(totals.peak_slab_bytes, step.held_bytes);
    }
    return totals;
}

GraphTotals graph_totals(const Trace& trace) {
    GraphTotals totals;
    std::unordered_set<uint32_t> graphs;
    for (const GraphLaunch& launch : trace.graph_launches) {
        if (launch.flags & kGraphLaunchCaptured) {
            ++totals.captured_graph_launches;
            continue;
        }
        ++totals.graph_launches;
        graphs.insert(launch.graph_id);
        totals.replayed_launches += launch.replayed;
        totals.unknown_launches += (launch.flags & kGraphLaunchUnknown) != 0;
    }
    totals.graphs = graphs.size();
    totals.captured_launches = trace.captured_launches.size();
    return totals;
}

} // namespace

ReplayIndex::ReplayIndex(const Trace& trace) {
    for (const GraphLaunch& launch : trace.graph_launches)
        if (launch.replayed != 0) by_first_seq_.push_back(&launch);
    std::stable_sort(by_first_seq_.begin(), by_first_seq_.end(), [](const GraphLaunch* a, const GraphLaunch* b) {
        return a->launches_before < b->launches_before;
    });
}

const GraphLaunch* ReplayIndex::graph_launch_of(uint64_t seq) const {
    // Replays never overlap: each takes its own run of sequence numbers.
    auto after = std::upper_bound(by_first_seq_.begin(), by_first_seq_.end(), seq,
                                  [](uint64_t s, const GraphLaunch* launch) { return s < launch->launches_before; });
    if (after == by_first_seq_.begin()) return nullptr;
    const GraphLaunch* launch = *(after - 1);
    return seq < launch->launches_before + launch->replayed ? launch : nullptr;
}

AllocTotals TraceSummary::all_allocs() const {
    AllocTotals total;
    for (const AllocTotals& kind : allocs_by_kind) {
        total.count += kind.count;
        total.bytes += kind.bytes;
    }
    return total;
}

TraceSummary summarize(const Trace& trace) {
    TraceSummary summary;
    uint64_t last_ns = 0;
    for (const Alloc& alloc : trace.allocs) {
        AllocTotals& totals = summary.allocs_by_kind[static_cast<size_t>(alloc.kind)];
        ++totals.count;
        totals.bytes += alloc.size;
        last_ns = std::max(last_ns, alloc.time_ns);
    }
    for (const Free& free : trace.frees) last_ns = std::max(last_ns, free.time_ns);
    summary.frees = trace.frees.size();
    summary.pool = pool_totals(trace);
    summary.graphs = graph_totals(trace);
    for (const Slab& slab : trace.slabs) last_ns = std::max(last_ns, slab.time_ns);

    std::unordered_set<uint32_t> kernels;
    for (const Launch& launch : trace.launches) {
        kernels.insert(launch.kernel_id);
        last_ns = std::max(last_ns, launch.time_ns + launch.duration_ns);
    }
    summary.launches = trace.launches.size();
    summary.distinct_kernels = kernels.size();
    summary.accesses = trace.accesses.size();

    for (const Move& move : trace.moves) {
        MoveTotals& totals = summary.moves_by_kind[static_cast<size_t>(move.kind)];
        ++totals.count;
        totals.bytes += move.length;
        if (move.alloc_id == kNoAllocation) totals.dead_bytes += move.length;
        totals.duration_ns += move.duration_ns;
        last_ns = std::max(last_ns, move.time_ns + move.duration_ns);
    }
    for (const Iteration& mark : trace.iterations) last_ns = std::max(last_ns, mark.time_ns);
    for (const GraphLaunch& launch : trace.graph_launches) last_ns = std::max(last_ns, launch.time_ns);
    for (const CapturedLaunch& launch : trace.captured_launches) last_ns = std::max(last_ns, launch.time_ns);
    summary.duration_ns = last_ns;

    std::vector<LiveChange> changes = device_memory_changes(trace);
    int64_t live = 0;
    int64_t peak = 0;
    for (const LiveChange& change : changes) {
        live += change.delta;
        peak = std::max(peak, live);
    }
    summary.peak_live_bytes = static_cast<uint64_t>(peak);

    summary.period = detect_iteration_period(trace);
    if (summary.period && summary.period->period > 0 && summary.period->first_launch < trace.launches.size()) {
        summary.iteration = measure_iteration(trace, *summary.period, changes);
    }
    const std::vector<uint64_t> bounds = iteration_bounds(trace, summary.period);
    summary.step_times = summarize_step_times(uvmp::step_times(trace, bounds));
    summary.dropped_records = trace.dropped_records;
    return summary;
}

std::vector<SlabStep> slab_history(const Trace& trace) {
    std::vector<SlabStep> steps;
    steps.reserve(trace.slabs.size());
    for (const Slab& slab : trace.slabs) steps.push_back({&slab, 0});
    std::stable_sort(steps.begin(), steps.end(), [](const SlabStep& a, const SlabStep& b) {
        if (a.slab->launches_before != b.slab->launches_before) return a.slab->launches_before < b.slab->launches_before;
        return a.slab->time_ns < b.slab->time_ns;
    });
    std::unordered_map<uint32_t, uint64_t> held;
    uint64_t bytes = 0;
    for (SlabStep& step : steps) {
        const Slab& slab = *step.slab;
        if (slab.action == SlabAction::Created) {
            if (held.emplace(slab.id, slab.size).second) bytes += slab.size;
        } else if (const auto found = held.find(slab.id); found != held.end()) {
            bytes -= found->second;
            held.erase(found);
        }
        step.held_bytes = bytes;
    }
    return steps;
}

const char* alloc_kind_name(AllocKind kind) {
    switch (kind) {
    case AllocKind::Converted: return "converted";
    case AllocKind::PassedThrough: return "passed-through";
    case AllocKind::Vmm: return "vmm";
    case AllocKind::Host: return "host";
    case AllocKind::Pooled: return "pooled";
    }
    return "unknown";
}

const char* move_kind_name(MoveKind kind) {
    switch (kind) {
    case MoveKind::Populate: return "populate";
    case MoveKind::Prefetch: return "prefetch";
    case MoveKind::Evict: return "evict";
    case MoveKind::Discard: return "discard";
    }
    return "unknown";
}

const char* slab_action_name(SlabAction action) {
    switch (action) {
    case SlabAction::Created: return "created";
    case SlabAction::Released: return "released";
    }
    return "unknown";
}

} // namespace uvmp::trace

// The numbers `uvmtrace info` reports about a trace, computed in one place so
// that the tool, its JSON output and the tests agree.
#pragma once

#include "core/trace/analysis/iteration_period.h"
#include "core/trace/analysis/step_times.h"
#include "core/trace/format/model.h"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace uvmp::trace {

struct AllocTotals {
    uint64_t count = 0;
    uint64_t bytes = 0;
};

struct MoveTotals {
    uint64_t count = 0;
    uint64_t bytes = 0;
    uint64_t duration_ns = 0;
    uint64_t dead_bytes = 0; // of dead memory (Move::alloc_id kNoAllocation)
};

struct IterationFootprint {
    uint64_t first_launch = 0;     // the period measured: the last full one
    uint64_t accessed_allocs = 0;  // distinct allocations the period's launches touch
    uint64_t accessed_bytes = 0;   // their sizes added up (allocations of unknown size excluded)
    uint64_t peak_live_bytes = 0;  // device bytes live at once during the period
};

// The managed pool's slabs (format 1.1).
struct PoolTotals {
    uint64_t slabs_created = 0;
    uint64_t slabs_released = 0;
    uint64_t peak_slab_bytes = 0; // bytes of slabs held at once
    uint64_t pooled_frees = 0;    // frees of blocks of the pool
    bool any() const { return slabs_created != 0 || slabs_released != 0 || pooled_frees != 0; }
};

// CUDA graphs (format 1.2).
struct GraphTotals {
    uint64_t graphs = 0;                  // distinct executable graphs launched
    uint64_t graph_launches = 0;          // launches of them that ran
    uint64_t replayed_launches = 0;       // launch records of their replays (counted among the launches)
    uint64_t unknown_launches = 0;        // graph launches whose replay the library could not learn
    uint64_t captured_graph_launches = 0; // graph launches into another capture: nothing ran
    uint64_t captured_launches = 0;       // kernel launches into a capture: nothing ran
    bool any() const { return graph_launches != 0 || captured_graph_launches != 0 || captured_launches != 0; }
};

struct TraceSummary {
    uint64_t duration_ns = 0; // from the start of recording to the last recorded event
    std::array<AllocTotals, 5> allocs_by_kind{}; // indexed by AllocKind
    uint64_t frees = 0;
    PoolTotals pool;
    GraphTotals graphs;
    // Device bytes (converted and passed-through allocations) live at once.
    uint64_t peak_live_bytes = 0;
    uint64_t launches = 0;
    uint64_t distinct_kernels = 0;
    uint64_t accesses = 0;
    std::array<MoveTotals, 4> moves_by_kind{}; // indexed by MoveKind
    std::optional<IterationPeriod> period;
    std::optional<IterationFootprint> iteration;
    // Over the full steps (iteration_bounds()), where kernels were timed.
    std::optional<StepTimeSummary> step_times;
    uint64_t dropped_records = 0;

    AllocTotals all_allocs() const;
};

TraceSummary summarize(const Trace& trace);

// The trace's slab records in the order they happened (by launch, then time),
// each with the bytes of slabs held after it. A slab made or given back twice
// counts once.
struct SlabStep {
    const Slab* slab = nullptr;
    uint64_t held_bytes = 0;
};
std::vector<SlabStep> slab_history(const Trace& trace);

// The graph launch whose replay launch `seq` is part of, or nullptr for a direct launch.
class ReplayIndex {
public:
    explicit ReplayIndex(const Trace& trace);
    const GraphLaunch* graph_launch_of(uint64_t seq) const;

private:
    std::vector<const GraphLaunch*> by_first_seq_; // graph launches with a replay, by its first seq
};

const char* alloc_kind_name(AllocKind kind);
const char* move_kind_name(MoveKind kind);
const char* slab_action_name(SlabAction action); // "created", "released"

} // namespace uvmp::trace

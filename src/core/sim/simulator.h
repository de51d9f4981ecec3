// Replays a recorded trace against a policy and a GPU memory budget, offline,
// with a simple timing model: one copy engine that runs transfers while kernels
// compute, kernels that wait for their prefetched chunks and stall while their
// missing chunks fault in. docs/simulation.md describes the model and its limits.
#pragma once

#include "core/sim/link_model.h"
#include "core/policy/policy.h"
#include "core/model/chunk_schedule.h"
#include "core/learn/predictor.h"
#include "core/model/residency.h"
#include "core/trace/analysis/iteration_bounds.h"
#include "core/trace/format/model.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace uvmp {

// Who makes room for the data that kernels fault in.
enum class FaultRoom {
    // The library's own evictions on the copy engine keep the budget, and the
    // GPU's physical memory (larger than the budget) takes the faults: what
    // the library does under UVMP_BUDGET.
    CopyEngine,
    // The GPU is full: unified memory evicts in the fault path, chunk by chunk,
    // while the kernel waits (a job whose data exceeds the physical memory).
    FaultPath,
};

// Where the pool's blocks of a trace go.
enum class BlockPlacement : uint8_t {
    // Placed anew as the library's pool places them under a budget: over dead
    // bytes still on the GPU where it can (core/sim/replaced_blocks.h).
    OverDead,
    // Placed anew by the same pool with no regard to dead bytes (best fit):
    // what the library does with UVMP_POOL_PLACEMENT=best-fit.
    BestFit,
    // Where the recorded run placed them.
    Recorded,
    // The steps after the learned one by a layout planned for it
    // (core/sim/planned_blocks.h), what the plan leaves out as OverDead.
    Planned,
};

struct SimConfig {
    uint64_t budget_bytes = 0;
    BlockPlacement placement = BlockPlacement::OverDead;
    // The simulated pool's slab size; 0: the recorded run's (its pool_slab_size), else 1 GiB.
    uint64_t pool_slab_bytes = 0;
    FaultRoom fault_room = FaultRoom::CopyEngine;
    uint64_t chunk_bytes = kDefaultChunkBytes;
    PolicyKind policy = PolicyKind::Learned;
    LinkModel link;
    LookaheadConfig lookahead;
    PredictorConfig predictor;
};

struct SimResult {
    std::string policy;
    uint64_t budget_bytes = 0;
    uint64_t chunk_bytes = 0;
    uint64_t footprint_bytes = 0; // peak live bytes among chunks the trace touches
    uint64_t launches = 0;

    uint64_t prefetched_bytes = 0;
    uint64_t evicted_bytes = 0;
    uint64_t demand_bytes = 0; // faulted in by the kernels that missed them
    // Of prefetched_bytes: chunks a launch missed, fetched beside it (policies
    // that fetch demand, as the library's learned and belady do).
    uint64_t demand_fetched_bytes = 0;
    // Chunks fetched that no block had used before (memory fresh from a new
    // slab or arena): pages made on the GPU at the population rate, nothing
    // copied; not in prefetched_bytes.
    uint64_t populated_bytes = 0;
    uint64_t prefetch_calls = 0; // one per contiguous piece
    uint64_t evict_calls = 0;
    uint64_t transfer_calls() const { return prefetch_calls + evict_calls; }

    // Bytes of blocks of the pool found on the GPU where they were placed, left
    // there by freed blocks (moved by nobody).
    uint64_t reused_bytes = 0;
    // BlockPlacement::Planned: the learned step's layout (its blocks planned,
    // the arena and the least arena: the planned blocks' peak of live bytes),
    // and the later steps' blocks put by it or displaced (their place was taken).
    uint64_t layout_blocks = 0;
    uint64_t layout_arena_bytes = 0;
    uint64_t layout_peak_live_bytes = 0;
    uint64_t layout_placed = 0;
    uint64_t layout_displaced = 0;
    // Of evicted_bytes: dead bytes freed blocks left on the GPU, evicted to make
    // room for a launch (core/model/reuse_in_place.h).
    uint64_t dead_evicted_bytes = 0;

    // The most the GPU held at once: live resident bytes and the dead ones freed
    // blocks left there, which take its memory as much.
    uint64_t peak_resident_bytes = 0;
    // The most held while a launch runs (after its plan): within the budget
    // unless a launch alone exceeds it. (A block of the pool placed over dead
    // GPU memory turns dead bytes live: what is held does not change.)
    uint64_t peak_launch_resident_bytes = 0;
    // Launches whose own chunks alone do not fit the budget: the budget is exceeded there.
    uint64_t oversized_launches = 0;

    double total_seconds = 0;   // end of the last kernel
    double compute_seconds = 0; // sum of kernel durations, no stalls
    double copy_busy_seconds = 0;
    // Median over the steady iterations (all but the first); total_seconds when
    // the trace has fewer than two iterations.
    double step_seconds = 0;
    uint64_t steady_steps = 0;
    // Each steady iteration's time, in order: whether a policy settles, drifts
    // or alternates, which the median hides.
    std::vector<double> steady_step_seconds;
    uint64_t step_launches = 0;   // launches per iteration (0: no iterations found)
    uint64_t step_working_set_bytes = 0;
    // Bytes into the GPU (prefetched and faulted) and out of it in the steady
    // step whose time is the median: what the policy moves once it has learned.
    uint64_t step_in_bytes = 0;
    uint64_t step_out_bytes = 0;
    uint64_t step_dead_out_bytes = 0; // of step_out_bytes: dead bytes
    // No policy can beat this per iteration: compute, or the bytes that must
    // cross the link (working set beyond the budget, in and out) at full speed.
    double transfer_bound_step_seconds = 0;

    std::optional<double> prediction_hit_rate;
    double simulation_wall_seconds = 0;
    // CPU time of the calling thread spent in simulate(): the speed of the
    // simulator itself, unaffected by other work on a loaded machine.
    double simulation_cpu_seconds = 0;
};

// `schedule` must have been built from `trace` with config.chunk_bytes and
// `bounds` by iteration_bounds(trace); computing them once serves several
// simulations of the same trace (a sweep).
SimResult simulate(const trace::Trace& trace, const ChunkSchedule& schedule, const std::vector<uint64_t>& bounds,
                   const SimConfig& config);
SimResult simulate(const trace::Trace& trace, const SimConfig& config);

} // namespace uvmp

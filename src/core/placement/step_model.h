// A learned step in the terms the home choice reads: the allocations live in
// it, in the order the step makes them, with the launches between which each
// is live, how often the step names it, and whether every launch naming it
// tolerates it remote. Built from a trace (the simulator, `uvmtrace`) the same
// way the library will build it from what it saw of one step.
#pragma once

#include "core/placement/home_choice.h"
#include "core/placement/tolerance.h"
#include "core/trace/format/model.h"

#include <cstdint>
#include <vector>

namespace uvmp::placement {

struct StepModel {
    std::vector<StepAllocation> allocations;
    std::vector<uint32_t> alloc_ids; // the trace's id of each allocation, in the same order
    // The kernel of the first launch that names each allocation and is not
    // judged to tolerate it remote (kNoKernel: none): what keeps it on the GPU.
    static constexpr uint32_t kNoKernel = UINT32_MAX;
    std::vector<uint32_t> kept_by;
    uint32_t launches = 0;
    double compute_seconds = 0; // the step's kernel durations as recorded (0 for an untimed trace)
};

// Launches [begin, end) of the trace form the step. Managed allocations live
// in it (made before `end`, not freed before `begin`) come in the order they
// were made; one made before the step and kept spans it from its first launch.
// An allocation's access at position j of a launch of kernel k counts as
// tolerant when `tolerance` says Tolerant for (k, j); without `tolerance`, or
// for an allocation the step never names, it is not tolerant.
StepModel step_model(const trace::Trace& trace, uint64_t begin, uint64_t end,
                     const ToleranceSource* tolerance = nullptr);

} // namespace uvmp::placement

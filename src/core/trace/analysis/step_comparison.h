// Which kernels a step's time grew in between two runs of one program, both
// recorded with kernel timings (UVMP_TRACE_TIMING=1): a base (a run without a
// budget, say) and a run (under one). A kernel that reads an operand over the
// link, waits for a page fault or for data fetched late takes longer than it
// does with its data in place; set against the bytes it names, its growth
// tells one trip over the link (about the link's remote read rate) from a
// kernel that re-reads what it names (far below it). Kernels are matched by
// name: their ids are each trace's own.
#pragma once

#include "core/trace/analysis/step_times.h"
#include "core/trace/format/model.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace uvmp {

struct KernelStepTimes {
    std::string kernel; // the kernel's name
    uint64_t base_launches = 0;
    uint64_t run_launches = 0;
    uint64_t base_ns = 0; // its launches' recorded durations, added up
    uint64_t run_ns = 0;
    // The managed bytes the run's launches name (trace::ManagedBytes), added up.
    uint64_t run_named_bytes = 0;

    int64_t grown_ns() const { return static_cast<int64_t>(run_ns) - static_cast<int64_t>(base_ns); }
};

struct StepComparison {
    StepTime base;
    StepTime run;
    // Every kernel either step launched, the most grown first (the name breaks ties).
    std::vector<KernelStepTimes> kernels;
};

// `base_step` of `base` against `run_step` of `run`; each range must lie within
// its trace's launches.
StepComparison compare_steps(const trace::Trace& base, LaunchRange base_step, const trace::Trace& run,
                             LaunchRange run_step);

// The step a comparison takes where none is asked for: the last whose every
// launch is timed (in a run under a budget, its steady state) and that a later
// launch ends, so that its call time is known; else the last whose every launch
// is timed. nullopt where no step has every launch timed.
std::optional<size_t> last_timed_step(std::span<const StepTime> steps);

} // namespace uvmp

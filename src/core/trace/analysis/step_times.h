// Where a step's time went, from a trace recorded with kernel timings
// (UVMP_TRACE_TIMING=1): how long the application took from one step's first
// launch call to the next one's, and how long the step's kernels ran on the
// GPU. Kernels that ran for most of that span kept the GPU busy; a step whose
// kernels ran for a small part of it waited for the application's thread (its
// launches, allocations and frees, or the driver calls behind them), not for
// the GPU.
#pragma once

#include "core/trace/analysis/iteration_bounds.h"
#include "core/trace/format/model.h"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace uvmp {

struct StepTime {
    LaunchRange launches;
    uint64_t call_ns = 0;        // step_call_ns(): 0 where the step has no next launch to end it
    uint64_t kernel_ns = 0;      // the recorded durations of its launches, added up
    uint64_t timed_launches = 0; // launches with a recorded duration
};

// One entry for each full step `bounds` gives (iteration_bounds()).
std::vector<StepTime> step_times(const trace::Trace& trace, std::span<const uint64_t> bounds);

// The steps that have both a call time and every launch timed, summed up.
struct StepTimeSummary {
    size_t steps = 0;            // full steps
    size_t measured = 0;         // of them, with a call time and every launch timed
    uint64_t median_call_ns = 0; // of the measured ones
    uint64_t least_call_ns = 0;
    uint64_t most_call_ns = 0;
    uint64_t median_kernel_ns = 0;
    // The measured steps' kernel time over their call time, added up: about
    // 1 where the GPU set the pace, well below where the application's thread
    // did. Launch calls that run ahead of the GPU, or kernels of streams that
    // overlap, can take a step past 1.
    double kernel_share = 0;
};
// nullopt where no full step is measured (a trace without kernel timings, or
// with fewer than two full steps).
std::optional<StepTimeSummary> summarize_step_times(std::span<const StepTime> steps);

} // namespace uvmp

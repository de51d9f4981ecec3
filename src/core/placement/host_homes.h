// The tier model of the simulator: a recorded trace turned into the trace the
// library would produce with host homes. The home choice (home_choice.h) runs
// on one learned step of the trace; the choice maps onto every step by the
// order and size of the allocations made in it (as the library maps it onto
// later steps, allowing for a step that makes an allocation more or fewer),
// and allocations made before the step and kept into it keep theirs by
// identity, no part of the sequence of the step that made them.
// A host-homed allocation becomes host memory, which the residency model and
// every policy leave alone, and each launch naming it takes longer by its
// remote trips: the first launch of a step that names it writes it at the
// remote write rate, later ones read it at the remote read rate. Trips share
// nothing with the copy engine here, and a kernel is assumed to take its local
// time plus its trips: both make the estimate a lower bound on the step.
#pragma once

#include "core/placement/home_choice.h"
#include "core/placement/tolerance.h"
#include "core/trace/format/model.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace uvmp::placement {

struct HostHomesOutcome {
    trace::Trace trace;
    HomeChoice choice;             // for the learned step's allocations
    std::vector<HomeOrder::Step> order; // the order the choice takes a prefix of
    uint64_t step_begin = 0;       // the learned step: launches [step_begin, step_end)
    uint64_t step_end = 0;
    uint64_t host_allocations = 0; // of the whole trace
    // In the learned step.
    uint64_t step_remote_write_bytes = 0;
    uint64_t step_remote_read_bytes = 0;
    double step_remote_seconds = 0;
};

// Which allocations may be homed on the host. A trace learned from before the
// run begins (UVMP_TRACE_IN) can home any allocation live in the learned step,
// those made before it by identity. A run learning from itself has made those
// already, on the GPU, where they stay: only what the step makes is homed anew.
enum class HomeScope : uint8_t { LiveInStep, MadeInStep };

// `bounds`: the trace's iterations as iteration_bounds() gives them (at least
// one full iteration, std::invalid_argument otherwise). The learned step is the
// second iteration when there are two or more, as the simulator's reference
// step is, else the first. `taken`: how much of the home order to home on the
// host (all of it past its end); by default the prefix of least estimate.
HostHomesOutcome with_host_homes(const trace::Trace& trace, std::span<const uint64_t> bounds, uint64_t budget_bytes,
                                 const ToleranceSource& tolerance, const Rates& rates = {},
                                 std::optional<size_t> taken = std::nullopt, HomeScope scope = HomeScope::LiveInStep);

} // namespace uvmp::placement

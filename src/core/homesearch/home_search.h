// How much of the host-home order (core/placement/home_choice.h) to take,
// chosen by simulating the trace with each of a few prefixes rather than by the
// closed-form estimate: the estimate assumes migration reaches the link's rates
// beside the kernels, which the policies' own schedule does not always allow.
// The prefixes tried are those reaching 0, 1/8, ..., 8/8 of the order's host
// bytes, then the sixteenths beside the best; the least simulated step wins.
#pragma once

#include "core/placement/host_homes.h"
#include "core/sim/simulator.h"

#include <cstdint>
#include <span>
#include <vector>

namespace uvmp {

struct SearchedHomes {
    placement::HostHomesOutcome homes; // the winner's
    SimResult result;                  // its simulation
    struct Tried {
        size_t taken = 0;
        uint64_t host_bytes = 0;
        double step_seconds = 0;
    };
    std::vector<Tried> tried; // in the order tried
};

// `config`: the simulation's (its budget is the homes' budget). `bounds` as for
// with_host_homes.
SearchedHomes search_host_homes(const trace::Trace& trace, const std::vector<uint64_t>& bounds,
                                const SimConfig& config, const placement::ToleranceSource& tolerance,
                                const placement::Rates& rates,
                                placement::HomeScope scope = placement::HomeScope::LiveInStep);

// The prefix of the order whose host bytes come nearest `host_bytes` (the homes
// a run chose), simulated after every home on the GPU: `tried` holds both, the
// winner is the prefix whatever it gains.
SearchedHomes host_homes_nearest(const trace::Trace& trace, const std::vector<uint64_t>& bounds,
                                 const SimConfig& config, const placement::ToleranceSource& tolerance,
                                 const placement::Rates& rates, placement::HomeScope scope, uint64_t host_bytes);

} // namespace uvmp

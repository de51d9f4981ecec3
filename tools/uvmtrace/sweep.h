// `uvmtrace simulate --sweep`: step time against budget for every policy, and
// with --homes, for the learned policy with homes chosen at each budget.
#pragma once

#include "simulate_options.h"

#include "core/sim/simulator.h"

#include <cstdint>
#include <vector>

namespace uvmp::tools::simulation {

void run_sweep(const SimulateOptions& o, const trace::Trace& trace, const ChunkSchedule& schedule,
               const std::vector<uint64_t>& bounds, SimConfig config);

} // namespace uvmp::tools::simulation

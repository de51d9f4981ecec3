// `uvmtrace simulate --homes host|auto`: the tier model on a trace.
#pragma once

#include "simulate_options.h"

#include "core/placement/host_homes.h"
#include "core/homesearch/home_search.h"
#include "core/sim/simulator.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <vector>

namespace uvmp::tools::simulation {

// The tier model (core/placement/host_homes.h): the homes chosen on the trace's
// learned step, with each kernel's tolerance judged from its local timings,
// and the simulation of the trace they make.
struct HomedRun {
    placement::HostHomesOutcome homes;
    SimResult result;
    std::vector<SearchedHomes::Tried> tried; // with --home-choice simulate
    // With --homes auto: the share of the all-GPU step the homes save, and
    // whether that is enough for the library to use them (else `result` is
    // the all-GPU simulation).
    double gain = 0;
    bool used = true;
    bool chosen_by_bytes = false; // --host-bytes: used whatever its gain
    // With --placement auto: the step with the homes best for a layout planned
    // for the learned step, against the step as the library would run it with
    // blocks placed as they come; whether the layout won (core/homesearch/recorded_homes.h).
    std::optional<double> planned_seconds;
    uint64_t planned_out_bytes = 0;
    uint64_t budget_bytes = 0;
    double over_dead_seconds = 0;
    bool layout_used = false;
};

// With --homes host or auto, the tier model's run (nullopt with --homes gpu);
// with --homes auto, its homes are used only where the library's default would use them.
std::optional<HomedRun> homed_run(const SimulateOptions& o, const trace::Trace& trace,
                                  const std::vector<uint64_t>& bounds, const SimConfig& config);
nlohmann::json homes_json(const HomedRun& run);
void print_homes(const HomedRun& run);

} // namespace uvmp::tools::simulation

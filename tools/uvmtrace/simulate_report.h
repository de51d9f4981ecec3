// How `uvmtrace simulate` prints a simulation: as text, as JSON, and its own speed.
#pragma once

#include "core/sim/simulator.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace uvmp::tools::simulation {

std::string milliseconds(double seconds);
nlohmann::json to_json(const SimResult& r);
void print_result(const SimResult& r);
double millions_per_second(uint64_t launches, double seconds);
// The simulator's own speed; kept out of the default output, which must not
// change from run to run.
std::string timing_line(std::string_view policy, uint64_t launches, double cpu_seconds, double wall_seconds);

} // namespace uvmp::tools::simulation

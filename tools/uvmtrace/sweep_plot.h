// The SVG plot of `uvmtrace simulate --sweep`: step time against budget.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace uvmp::tools::simulation {

struct SweepLine {
    std::string label;
    std::vector<double> step_seconds; // one a budget, in the budgets' order
};

// `lines` in drawing order, each with its own colour, dash and marker shape;
// `bound` dashed grey without markers. A line whose every point is another's
// says so in the legend, and its markers still show around the other's.
std::string sweep_svg(const std::vector<uint64_t>& budgets, const std::vector<SweepLine>& lines, const SweepLine& bound,
                      uint64_t footprint, const std::string& title);

} // namespace uvmp::tools::simulation

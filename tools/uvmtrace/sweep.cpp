#include "sweep.h"

#include "homed_run.h"
#include "simulate_report.h"
#include "sweep_plot.h"

#include "core/policy/policy.h"
#include "core/util/size_parse.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>

namespace uvmp::tools::simulation {
namespace {

constexpr PolicyKind kPolicies[] = {PolicyKind::DemandLru, PolicyKind::Learned, PolicyKind::Belady};
constexpr size_t kLearned = 1;

struct SweepRow {
    uint64_t budget = 0;
    std::vector<SimResult> results; // one per policy, in kPolicies order
    // With --homes: the learned policy with the homes chosen at this budget,
    // and its result (learned's own where the homes are not used).
    std::optional<HomedRun> homed;
    const SimResult& homes_line() const { return homed && homed->used ? homed->result : results[kLearned]; }
};

// --homes auto with --placement auto is what the library does by default.
std::string homes_line_label(const SimulateOptions& o) {
    if (o.homes == "auto" && o.placement == "auto") return "default";
    return fmt::format("learned+homes {}", o.homes);
}

std::vector<uint64_t> sweep_budgets(const SimulateOptions& o, uint64_t footprint) {
    const uint64_t from = size_option("--sweep-from", o.sweep_from).resolve(footprint);
    const uint64_t to = size_option("--sweep-to", o.sweep_to).resolve(footprint);
    if (o.sweep_steps < 2) bad_usage("--sweep-steps must be at least 2");
    if (to <= from)
        bad_usage(fmt::format("--sweep-to ({}) must be larger than --sweep-from ({})", format_size(to), format_size(from)));
    std::vector<uint64_t> budgets;
    for (unsigned s = 0; s < o.sweep_steps; ++s)
        budgets.push_back(from + static_cast<uint64_t>(static_cast<double>(to - from) * s / (o.sweep_steps - 1)));
    return budgets;
}

SweepRow simulate_budget(const SimulateOptions& o, const trace::Trace& trace, const ChunkSchedule& schedule,
                         const std::vector<uint64_t>& bounds, SimConfig config, uint64_t budget) {
    SweepRow row;
    row.budget = budget;
    config.budget_bytes = budget;
    for (PolicyKind kind : kPolicies) {
        config.policy = kind;
        row.results.push_back(simulate(trace, schedule, bounds, config));
    }
    config.policy = PolicyKind::Learned;
    row.homed = homed_run(o, trace, bounds, config);
    return row;
}

// Where the homes line's homes were used: their bytes, and whether the step's layout was.
std::string homes_cell(const SweepRow& row) {
    if (!row.homed->used) return "none";
    return format_size(row.homed->homes.choice.host_bytes) + (row.homed->layout_used ? " +layout" : "");
}

void print_table(const SimulateOptions& o, const std::vector<SweepRow>& rows, uint64_t footprint, uint64_t chunk_bytes) {
    const bool homes = rows.front().homed.has_value();
    fmt::print("step time against budget (footprint {}, chunk {})\n", format_size(footprint), format_size(chunk_bytes));
    std::string header = fmt::format("{:>12} {:>6} {:>14} {:>14} {:>14}", "budget", "%", "demand-lru", "learned", "belady");
    if (homes) header += fmt::format(" {:>14} {:>18}", homes_line_label(o), "host homes");
    fmt::print("{} {:>14} {:>9}\n", header, "bound", "hit rate");
    for (const SweepRow& row : rows) {
        const double pct = footprint ? 100.0 * static_cast<double>(row.budget) / static_cast<double>(footprint) : 0.0;
        const auto& hit = row.results[kLearned].prediction_hit_rate;
        std::string line = fmt::format("{:>12} {:>5.0f}% {:>14} {:>14} {:>14}", format_size(row.budget), pct,
                                       milliseconds(row.results[0].step_seconds),
                                       milliseconds(row.results[1].step_seconds),
                                       milliseconds(row.results[2].step_seconds));
        if (homes) line += fmt::format(" {:>14} {:>18}", milliseconds(row.homes_line().step_seconds), homes_cell(row));
        fmt::print("{} {:>14} {:>8.1f}%\n", line, milliseconds(row.results[0].transfer_bound_step_seconds),
                   hit ? *hit * 100.0 : 0.0);
    }
}

nlohmann::json sweep_json(const SimulateOptions& o, const std::vector<SweepRow>& rows) {
    nlohmann::json out = nlohmann::json::array();
    for (const SweepRow& row : rows) {
        for (const SimResult& r : row.results) out.push_back(to_json(r));
        if (!row.homed) continue;
        nlohmann::json j = to_json(row.homes_line());
        j["line"] = homes_line_label(o);
        j["homes"] = homes_json(*row.homed);
        out.push_back(std::move(j));
    }
    return out;
}

void print_timing(const SimulateOptions& o, const std::vector<SweepRow>& rows) {
    for (size_t p = 0; p < std::size(kPolicies); ++p) {
        uint64_t launches = 0;
        double cpu = 0, wall = 0;
        for (const SweepRow& row : rows) {
            launches += row.results[p].launches;
            cpu += row.results[p].simulation_cpu_seconds;
            wall += row.results[p].simulation_wall_seconds;
        }
        (o.json ? std::cerr : std::cout) << timing_line(policy_kind_name(kPolicies[p]), launches, cpu, wall);
    }
}

void write_plot(const SimulateOptions& o, const std::vector<SweepRow>& rows, uint64_t footprint) {
    std::vector<uint64_t> budgets;
    std::vector<SweepLine> lines(std::size(kPolicies));
    SweepLine bound{"bound", {}};
    for (size_t p = 0; p < std::size(kPolicies); ++p) lines[p].label = policy_kind_name(kPolicies[p]);
    if (rows.front().homed) lines.push_back({homes_line_label(o), {}});
    for (const SweepRow& row : rows) {
        budgets.push_back(row.budget);
        for (size_t p = 0; p < std::size(kPolicies); ++p) lines[p].step_seconds.push_back(row.results[p].step_seconds);
        if (row.homed) lines.back().step_seconds.push_back(row.homes_line().step_seconds);
        bound.step_seconds.push_back(row.results[0].transfer_bound_step_seconds);
    }
    std::ofstream svg(o.plot);
    svg << sweep_svg(budgets, lines, bound, footprint, fmt::format("{}: step time against budget", o.file));
    if (!svg) throw std::runtime_error("cannot write the plot to " + o.plot);
    if (!o.json) fmt::print("plot written to {}\n", o.plot);
}

} // namespace

void run_sweep(const SimulateOptions& o, const trace::Trace& trace, const ChunkSchedule& schedule,
               const std::vector<uint64_t>& bounds, SimConfig config) {
    const uint64_t footprint = schedule.footprint_bytes();
    std::vector<SweepRow> rows;
    for (uint64_t budget : sweep_budgets(o, footprint))
        rows.push_back(simulate_budget(o, trace, schedule, bounds, config, budget));
    if (o.json) std::cout << sweep_json(o, rows).dump(2) << "\n";
    else print_table(o, rows, footprint, config.chunk_bytes);
    if (o.timing) print_timing(o, rows);
    write_plot(o, rows, footprint);
}

} // namespace uvmp::tools::simulation

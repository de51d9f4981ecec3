// `uvmtrace compare BASE RUN [--base-step K] [--step K] [--top N] [--json]`:
// which kernels a step's time grew in between two runs of one program, both
// recorded with kernel timings (core/trace/analysis/step_comparison.h).
#include "commands.h"
#include "trace_file.h"
#include "usage_errors.h"

#include "core/trace/analysis/iteration_bounds.h"
#include "core/trace/analysis/step_comparison.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace uvmp::tools {
namespace {

struct CompareArguments {
    std::string base_path;
    std::string run_path;
    std::optional<size_t> base_step;
    std::optional<size_t> run_step;
    size_t top = 12;
    bool json = false;
};

// A full step of one of the traces: the one asked for, else the last with every launch timed.
struct ChosenStep {
    std::string name; // the file's name, without its folders
    size_t index = 0;
    size_t full_steps = 0;
    LaunchRange launches;
};

ChosenStep choose_step(const trace::Trace& trace, const std::string& path, std::optional<size_t> asked,
                       const char* option) {
    const std::vector<uint64_t> bounds = iteration_bounds(trace);
    const std::vector<StepTime> steps = step_times(trace, bounds);
    if (steps.empty()) throw std::runtime_error(fmt::format("{}: no full step found to compare", path));
    ChosenStep chosen{std::filesystem::path(path).filename().string(), 0, steps.size(), {}};
    if (asked) {
        if (*asked >= steps.size())
            bad_usage("compare", fmt::format("{} {}: {} has {} full steps (0 to {})", option, *asked, path,
                                             steps.size(), steps.size() - 1));
        chosen.index = *asked;
    } else {
        const std::optional<size_t> timed = last_timed_step(steps);
        if (!timed)
            throw std::runtime_error(fmt::format(
                "{}: no full step has every launch timed: record it with UVMP_TRACE_TIMING=1", path));
        chosen.index = *timed;
    }
    chosen.launches = steps[chosen.index].launches;
    return chosen;
}

// Nanoseconds, counted or a signed difference, as milliseconds.
template <typename Nanoseconds>
double ms(Nanoseconds ns) {
    return static_cast<double>(ns) / 1e6;
}

// The named bytes over the time a kernel grew by: about the link's remote read
// rate where each named byte crossed it once, far below where a kernel re-read
// what it names or waited for moves.
std::string named_over_growth(const KernelStepTimes& k) {
    // A growth that the table shows as 0.0 ms gives no rate worth reading.
    constexpr int64_t kShownNs = 50'000;
    if (k.grown_ns() < kShownNs || k.run_named_bytes == 0) return "-";
    return fmt::format("{:.1f}", static_cast<double>(k.run_named_bytes) / static_cast<double>(k.grown_ns()));
}

std::string step_line(const ChosenStep& step, const StepTime& time) {
    const uint64_t launches = time.launches.end - time.launches.begin;
    std::string line = fmt::format("{}: step {} of {} full steps, launches {}-{} ({}): ", step.name, step.index,
                                   step.full_steps, time.launches.begin, time.launches.end - 1, launches);
    line += time.call_ns ? fmt::format("{:.1f} ms from its first launch call to the next step's", ms(time.call_ns))
                         : std::string("no launch after it to time it by");
    line += fmt::format(", kernels {:.1f} ms", ms(time.kernel_ns));
    if (time.timed_launches != launches) line += fmt::format(" ({} of its launches timed)", time.timed_launches);
    return line;
}

void print_text(const ChosenStep& base, const ChosenStep& run, const StepComparison& c, size_t top) {
    fmt::print("{:<10}{}\n", "base", step_line(base, c.base));
    fmt::print("{:<10}{}\n", "run", step_line(run, c.run));
    const int64_t grown = static_cast<int64_t>(c.run.kernel_ns) - static_cast<int64_t>(c.base.kernel_ns);
    const size_t shown = std::min(top, c.kernels.size());
    fmt::print("kernel time {:+.1f} ms over {} kernels; the {} that grew most (named GB/s: the bytes the run's "
               "launches name over the time they grew by):\n",
               ms(grown), c.kernels.size(), shown);
    fmt::print("{:>10} {:>10} {:>10} {:>9} {:>9} {:>10}  {}\n", "grown ms", "base ms", "run ms", "launches", "named GB",
               "named GB/s", "kernel");
    constexpr size_t kNameWidth = 70;
    for (size_t i = 0; i < shown; ++i) {
        const KernelStepTimes& k = c.kernels[i];
        fmt::print("{:>+10.1f} {:>10.1f} {:>10.1f} {:>9} {:>9.2f} {:>10}  {}\n", ms(k.grown_ns()), ms(k.base_ns),
                   ms(k.run_ns), k.base_launches == k.run_launches
                                     ? std::to_string(k.run_launches)
                                     : fmt::format("{}/{}", k.base_launches, k.run_launches),
                   static_cast<double>(k.run_named_bytes) / 1e9, named_over_growth(k),
                   std::string_view(k.kernel).substr(0, kNameWidth));
    }
    if (shown < c.kernels.size()) {
        int64_t rest = 0;
        for (size_t i = shown; i < c.kernels.size(); ++i) rest += c.kernels[i].grown_ns();
        fmt::print("{:>+10.1f} over the other {} kernels\n", ms(rest), c.kernels.size() - shown);
    }
}

nlohmann::ordered_json step_json(const ChosenStep& step, const StepTime& time) {
    return {{"file", step.name},
            {"step", step.index},
            {"full_steps", step.full_steps},
            {"first_launch", time.launches.begin},
            {"launches", time.launches.end - time.launches.begin},
            {"timed_launches", time.timed_launches},
            {"call_ns", time.call_ns},
            {"kernel_ns", time.kernel_ns}};
}

nlohmann::ordered_json to_json(const ChosenStep& base, const ChosenStep& run, const StepComparison& c) {
    nlohmann::ordered_json out;
    out["base"] = step_json(base, c.base);
    out["run"] = step_json(run, c.run);
    nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
    for (const KernelStepTimes& k : c.kernels)
        kernels.push_back({{"kernel", k.kernel},
                           {"base_launches", k.base_launches},
                           {"run_launches", k.run_launches},
                           {"base_ns", k.base_ns},
                           {"run_ns", k.run_ns},
                           {"grown_ns", k.grown_ns()},
                           {"run_named_bytes", k.run_named_bytes}});
    out["kernels"] = kernels;
    return out;
}

void run(const CompareArguments& a) {
    const trace::Trace base_trace = load_trace(a.base_path);
    const trace::Trace run_trace = load_trace(a.run_path);
    const ChosenStep base = choose_step(base_trace, a.base_path, a.base_step, "--base-step");
    const ChosenStep run = choose_step(run_trace, a.run_path, a.run_step, "--step");
    const StepComparison c = compare_steps(base_trace, base.launches, run_trace, run.launches);
    if (a.json)
        std::cout << to_json(base, run, c).dump(2) << "\n";
    else
        print_text(base, run, c, a.top);
}

} // namespace

void register_compare(CLI::App& app) {
    auto arguments = std::make_shared<CompareArguments>();
    CLI::App* command = app.add_subcommand(
        "compare", "which kernels a step's time grew in between two timed traces of one program (a base, a run)");
    command->add_option("BASE", arguments->base_path, "trace to compare against (a run without a budget, say)")
        ->required();
    command->add_option("RUN", arguments->run_path, "trace whose step grew (a run under a budget, say)")->required();
    command->add_option("--base-step", arguments->base_step,
                        "BASE's full step to take, from 0 as `info` counts them (default: the last with every "
                        "launch timed)");
    command->add_option("--step", arguments->run_step, "RUN's full step to take (default as for --base-step)");
    command->add_option("--top", arguments->top, "kernels to list, the most grown first")
        ->check(CLI::Range(size_t{1}, size_t{100'000}));
    command->add_flag("--json", arguments->json, "print one JSON object, every kernel in it, instead of text");
    command->callback([arguments] { run(*arguments); });
}

} // namespace uvmp::tools

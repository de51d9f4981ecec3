// `uvmtrace replay FILE [--budget SIZE] [--policy P] [--steps N] [--scale F]`:
// re-enacts a recorded trace on the GPU under the real library. It runs itself
// again with libuvmprefetch.so preloaded and the settings given, allocates and
// frees as the trace did and launches, for each recorded launch, a kernel that
// touches the recorded ranges for the recorded time; then prints each step's
// time against the recorded one (the library prints its summary at exit).
#include "commands.h"
#include "replay_driver.h"
#include "replay_kernel.h"
#include "replay_runner.h"
#include "trace_file.h"
#include "usage_errors.h"

#include "core/model/chunk_schedule.h"
#include "core/replay/replay_plan.h"
#include "core/sim/simulator.h"
#include "core/trace/analysis/access_extents.h"
#include "tools/common/job_environment.h"
#include "uvmprefetch/uvmprefetch.h"

#include <dlfcn.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace uvmp::tools {
namespace {

constexpr int kExitFailed = 1;
// Set in the process that runs under the library, so that a library that did
// not load cannot make the tool run itself again and again.
constexpr const char* kUnderLibraryVariable = "UVMTRACE_REPLAY_UNDER_LIBRARY";

struct ReplayOptions {
    std::string file;
    std::string budget;
    std::string policy;
    uint32_t steps = 0;
    double scale = 1.0;
    bool json = false;
    bool dry_run = false;
};

[[noreturn]] void bad_usage(const std::string& message) { tools::bad_usage("replay", message); }

[[noreturn]] void fail(const std::string& message) {
    std::cerr << "uvmtrace replay: " << message << "\n";
    throw CLI::RuntimeError(kExitFailed);
}

struct PreparedReplay {
    replay::Plan plan;
    uint64_t footprint_bytes = 0; // of the trace as recorded
    uint64_t budget_bytes = 0;    // on the replay (scaled); 0: none
};

PreparedReplay prepare(const ReplayOptions& o) {
    trace::Trace trace = load_trace(o.file);
    const std::vector<uint64_t> bounds = iteration_bounds(trace);
    // The lengths the kernels touch: the simulator's inference, one window a step.
    infer_access_extents(trace, bounds);
    PreparedReplay prepared;
    try {
        prepared.plan = replay::make_plan(trace, bounds, {o.scale, o.steps});
    } catch (const replay::PlanError& e) {
        bad_usage(fmt::format("{}: {}", o.file, e.what()));
    }
    prepared.footprint_bytes = ChunkSchedule(trace, trace.header.chunk_bytes).footprint_bytes();
    if (!o.budget.empty()) {
        const SizeOrPercent budget = size_option("replay", "--budget", o.budget);
        prepared.budget_bytes = static_cast<uint64_t>(static_cast<double>(budget.resolve(prepared.footprint_bytes)) * o.scale);
        if (prepared.budget_bytes == 0) bad_usage("--budget must be larger than zero");
    }
    return prepared;
}

// The command line this process was started with, to run it again.
std::vector<std::string> own_command_line() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::vector<std::string> words;
    for (std::string word; std::getline(in, word, '\0');) words.push_back(word);
    return words;
}

// Runs the same command again under the library; returns only when that fails.
void run_under_library(const ReplayOptions& o, const PreparedReplay& prepared) {
    if (std::getenv(kUnderLibraryVariable))
        fail("libuvmprefetch.so did not load into the replay (LD_PRELOAD); check UVMP_LIBRARY");
    JobEnvironment env;
    if (prepared.budget_bytes) env.set_option("budget", std::to_string(prepared.budget_bytes));
    if (!o.policy.empty()) env.set_option("policy", o.policy);
    if (!env.has("UVMP_SUMMARY")) env.set_option("summary", "1");
    if (auto error = env.validate()) bad_usage(*error);
    const std::string library = find_library(own_path("/proc/self/exe"));
    if (library.empty())
        fail("cannot find libuvmprefetch.so next to uvmtrace, in ../lib, or in the build tree; set UVMP_LIBRARY "
             "to its path");
    preload_library(env, library);
    env.set(kUnderLibraryVariable, "1");
    std::vector<std::string> command = own_command_line();
    if (command.empty()) fail("cannot read this process's command line to run it under the library");
    command[0] = "/proc/self/exe";
    exec_with(env, command);
    fail(fmt::format("cannot run itself under the library: {}", std::strerror(errno)));
}

double milliseconds(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

struct StepRecord {
    uint64_t replayed_ns = 0;
    uint64_t bytes_in = 0;  // prefetched and populated by the library during the step
    uint64_t bytes_out = 0; // evicted
};

uvmp_stats library_stats() {
    using GetStats = int (*)(uvmp_stats*);
    static const auto get = reinterpret_cast<GetStats>(dlsym(RTLD_DEFAULT, "uvmp_get_stats"));
    uvmp_stats stats{};
    stats.struct_size = sizeof stats;
    if (!get || get(&stats) != 0) stats = uvmp_stats{};
    return stats;
}

std::optional<double> ratio(uint64_t replayed, const std::optional<uint64_t>& recorded) {
    if (!recorded || *recorded == 0) return std::nullopt;
    return static_cast<double>(replayed) / static_cast<double>(*recorded);
}

// The median over the steps after the first (which learns and warms up), or the only step.
struct Steady {
    uint64_t replayed_ns = 0;
    std::optional<uint64_t> recorded_ns;
};
Steady steady_step(const replay::Plan& plan, const std::vector<StepRecord>& records) {
    const size_t first = records.size() > 1 ? 1 : 0;
    std::vector<uint64_t> replayed, recorded;
    for (size_t s = first; s < records.size(); ++s) {
        replayed.push_back(records[s].replayed_ns);
        if (plan.steps[s].recorded_ns) recorded.push_back(*plan.steps[s].recorded_ns);
    }
    auto median = [](std::vector<uint64_t> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    Steady steady;
    if (!replayed.empty()) steady.replayed_ns = median(replayed);
    if (!recorded.empty()) steady.recorded_ns = median(recorded);
    return steady;
}

void print_plan(const ReplayOptions& o, const PreparedReplay& prepared) {
    const replay::Plan& plan = prepared.plan;
    const uint64_t step_launches = plan.steps.empty() ? 0 : plan.steps.back().launches;
    fmt::print("replay of {}: {} launches ({} before the first step, {} steps of {} launches{}), {} allocations on {} "
               "streams\n",
               o.file, plan.launches.size(), plan.prologue_launches, plan.steps.size(), step_launches,
               o.steps ? fmt::format(", the last {} copies of the last recorded one", o.steps) : std::string(),
               plan.allocs.size(), plan.streams.size());
    fmt::print("scale {}: peak live {} (the trace's footprint {}); budget {}, policy {}\n", o.scale,
               format_size(plan.peak_live_bytes), format_size(prepared.footprint_bytes),
               prepared.budget_bytes ? format_size(prepared.budget_bytes) : std::string("none"),
               o.policy.empty() ? std::string("the library's default") : o.policy);
    if (plan.skipped_allocations || plan.skipped_accesses)
        fmt::print("left out: {} allocations the library did not convert (passed through, VMM, pinned host), {} "
                   "accesses to memory that is not a live converted allocation\n",
                   plan.skipped_allocations, plan.skipped_accesses);
}

void print_steps(const replay::Plan& plan, uint64_t prologue_ns, const std::vector<StepRecord>& records) {
    fmt::print("before the first step: {:.1f} ms\n", milliseconds(prologue_ns));
    fmt::print("{:>5} {:>9} {:>13} {:>13} {:>7} {:>12} {:>12}\n", "step", "launches", "recorded ms", "replayed ms",
               "ratio", "moved in", "moved out");
    for (size_t s = 0; s < records.size(); ++s) {
        const replay::Step& step = plan.steps[s];
        const auto r = ratio(records[s].replayed_ns, step.recorded_ns);
        fmt::print("{:>5} {:>9} {:>13} {:>13.2f} {:>7} {:>12} {:>12}\n", fmt::format("{}{}", s + 1, step.copy ? "*" : ""),
                   step.launches, step.recorded_ns ? fmt::format("{:.2f}", milliseconds(*step.recorded_ns)) : "-",
                   milliseconds(records[s].replayed_ns), r ? fmt::format("{:.3f}", *r) : "-",
                   format_size(records[s].bytes_in), format_size(records[s].bytes_out));
    }
    if (std::any_of(plan.steps.begin(), plan.steps.end(), [](const replay::Step& s) { return s.copy; }))
        fmt::print("* a copy of the last recorded step\n");
    if (records.empty()) return;
    const Steady steady = steady_step(plan, records);
    const auto r = ratio(steady.replayed_ns, steady.recorded_ns);
    fmt::print("steady step (median{}): recorded {}, replayed {:.2f} ms, ratio {}\n",
               records.size() > 1 ? " of the steps after the first" : "",
               steady.recorded_ns ? fmt::format("{:.2f} ms", milliseconds(*steady.recorded_ns)) : "unknown",
               milliseconds(steady.replayed_ns), r ? fmt::format("{:.3f}", *r) : "-");
}

nlohmann::json to_json(const ReplayOptions& o, const PreparedReplay& prepared, uint64_t prologue_ns,
                       const std::vector<StepRecord>& records) {
    const replay::Plan& plan = prepared.plan;
    nlohmann::json steps = nlohmann::json::array();
    for (size_t s = 0; s < records.size(); ++s) {
        const replay::Step& step = plan.steps[s];
        steps.push_back({{"launches", step.launches},
                         {"copy", step.copy},
                         {"recorded_ms", step.recorded_ns ? nlohmann::json(milliseconds(*step.recorded_ns)) : nullptr},
                         {"replayed_ms", milliseconds(records[s].replayed_ns)},
                         {"bytes_in", records[s].bytes_in},
                         {"bytes_out", records[s].bytes_out}});
    }
    const Steady steady = records.empty() ? Steady{} : steady_step(plan, records);
    const auto r = ratio(steady.replayed_ns, steady.recorded_ns);
    return {{"file", o.file},
            {"scale", o.scale},
            {"budget_bytes", prepared.budget_bytes},
            {"policy", o.policy.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.policy)},
            {"launches", plan.launches.size()},
            {"peak_live_bytes", plan.peak_live_bytes},
            {"footprint_bytes", prepared.footprint_bytes},
            {"steps_planned", plan.steps.size()},
            {"prologue_ms", milliseconds(prologue_ns)},
            {"steps", steps},
            {"steady_recorded_ms", steady.recorded_ns ? nlohmann::json(milliseconds(*steady.recorded_ns)) : nullptr},
            {"steady_replayed_ms", records.empty() ? nlohmann::json(nullptr) : nlohmann::json(milliseconds(steady.replayed_ns))},
            {"steady_ratio", r ? nlohmann::json(*r) : nullptr}};
}

void replay_here(const ReplayOptions& o, const PreparedReplay& prepared) {
    const replay::Plan& plan = prepared.plan;
    std::vector<StepRecord> records(plan.steps.size());
    uint64_t prologue_ns = 0, last_ns = 0;
    uvmp_stats last_stats = library_stats();
    using MarkIteration = void (*)(void);
    const auto mark = reinterpret_cast<MarkIteration>(dlsym(RTLD_DEFAULT, "uvmp_mark_iteration"));
    ReplayHooks hooks;
    if (mark) hooks.mark_iteration = mark;
    hooks.boundary = [&](uint32_t boundary, uint64_t elapsed_ns) {
        const uvmp_stats stats = library_stats();
        if (boundary == 0) prologue_ns = elapsed_ns;
        else {
            StepRecord& step = records[boundary - 1];
            step.replayed_ns = elapsed_ns - last_ns;
            step.bytes_in = stats.bytes_prefetched + stats.bytes_populated - last_stats.bytes_prefetched -
                            last_stats.bytes_populated;
            step.bytes_out = stats.bytes_evicted - last_stats.bytes_evicted;
        }
        last_ns = elapsed_ns;
        last_stats = stats;
    };
    try {
        const ReplayDriver driver;
        run_replay_plan(plan, driver, hooks);
    } catch (const DriverError& e) {
        fail(e.what());
    }
    if (o.json) std::cout << to_json(o, prepared, prologue_ns, records).dump() << "\n";
    else print_steps(plan, prologue_ns, records);
}

void run(const ReplayOptions& o) {
    if (!(o.scale > 0.0 && o.scale <= 1.0)) bad_usage("--scale must be more than 0 and at most 1");
    const PreparedReplay prepared = prepare(o);
    for (uint32_t accesses : prepared.plan.kernel_max_touches)
        if (accesses > replay_kernel_max_slots())
            fail(fmt::format("a launch of the trace passes {} accesses; the replay's kernel takes at most {}", accesses,
                             replay_kernel_max_slots()));
    if (!o.json) print_plan(o, prepared);
    if (o.dry_run) {
        if (o.json) std::cout << to_json(o, prepared, 0, {}).dump() << "\n";
        return;
    }
    if (!dlsym(RTLD_DEFAULT, "uvmp_get_stats")) run_under_library(o, prepared);
    replay_here(o, prepared);
}

} // namespace

void register_replay(CLI::App& app) {
    auto options = std::make_shared<ReplayOptions>();
    CLI::App* cmd = app.add_subcommand(
        "replay", "re-enact a trace on the GPU under the library: its allocations, frees and launches, with kernels "
                  "that touch the recorded memory for the recorded time");
    cmd->add_option("file", options->file, "trace file")->required();
    cmd->add_option("--budget", options->budget,
                    "the library's GPU memory budget: a size of the trace (24G) or a share of its footprint (66%); "
                    "scaled with --scale");
    cmd->add_option("--policy", options->policy, "the library's policy: none, demand-lru or learned (default: the "
                                                 "library's)");
    cmd->add_option("--steps", options->steps, "run this many copies of the trace's last whole step after it");
    cmd->add_option("--scale", options->scale,
                    "multiply every size and time by this (0 < F <= 1) to replay on a smaller GPU")
        ->capture_default_str();
    cmd->add_flag("--json", options->json, "print the step times as one line of JSON");
    cmd->add_flag("--dry-run", options->dry_run, "print what the replay would do, run nothing (no GPU needed)");
    cmd->callback([options] { run(*options); });
}

} // namespace uvmp::tools

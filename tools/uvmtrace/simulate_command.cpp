// `uvmtrace simulate FILE --budget SIZE [--policy NAME] [--json]`: replays a
// trace against a policy and budget, offline. With --sweep: step time against
// budget for every policy, as a table and an SVG plot (sweep.h).
#include "commands.h"
#include "homed_run.h"
#include "simulate_options.h"
#include "simulate_report.h"
#include "sweep.h"
#include "trace_file.h"

#include "core/trace/analysis/access_extents.h"
#include "core/placement/host_homes.h"
#include "core/placement/timing_prior.h"
#include "core/policy/policy.h"
#include "core/rates/streaming_line.h"
#include "core/sim/simulator.h"
#include "core/util/size_parse.h"
#include "core/trace/edit/repeat.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace uvmp::tools {
namespace {

using simulation::bad_usage;

// The rates the trace is simulated with: --rates FILE, else those the trace
// ran with (run() takes them once it is read), else the reference fallback.
rates::LinkRates link_rates(const SimulateOptions& o) {
    if (o.rates_file.empty()) return {};
    try {
        return rates::read_rates_file(o.rates_file);
    } catch (const rates::RatesFileError& e) {
        bad_usage(fmt::format("--rates: {}", e.what()));
    }
}

LinkModel link_model(const SimulateOptions& o) {
    LinkModel link(o.rates);
    auto check = [](const char* name, double value) {
        if (value < 0 || !std::isfinite(value)) bad_usage(fmt::format("{} must be a positive number of GB/s", name));
        return value > 0;
    };
    if (check("--link-prefetch-gbps", o.prefetch_gbps)) LinkModel::scale_to_peak(link.prefetch_curve, o.prefetch_gbps);
    if (check("--link-evict-gbps", o.evict_gbps)) LinkModel::scale_to_peak(link.evict_curve, o.evict_gbps);
    if (check("--link-fault-gbps", o.fault_gbps)) link.demand_fault_gbps = o.fault_gbps;
    if (check("--link-concurrent-gbps", o.concurrent_gbps)) link.concurrent_gbps = o.concurrent_gbps;
    if (check("--kernel-us", o.kernel_us)) link.default_kernel_ns = static_cast<uint64_t>(o.kernel_us * 1000.0);
    return link;
}

SimConfig config_from(const SimulateOptions& o) {
    SimConfig config;
    const auto chunk = parse_size(o.chunk);
    if (!chunk || *chunk == 0 || (*chunk & (*chunk - 1)) != 0)
        bad_usage(fmt::format("--chunk '{}' must be a power-of-two size such as 2M", o.chunk));
    config.chunk_bytes = *chunk;
    config.link = link_model(o);
    if (o.lookahead == 0) bad_usage("--lookahead must be at least 1 launch");
    config.lookahead.max_lookahead_launches = o.lookahead;
    const auto policy = parse_policy_kind(o.policy);
    if (!policy) bad_usage(fmt::format("unknown policy '{}': use demand-lru, learned or belady", o.policy));
    config.policy = *policy;
    config.fault_room = o.fault_room == "fault-path" ? FaultRoom::FaultPath : FaultRoom::CopyEngine;
    // (auto: over-dead, unless the homes' search finds the planned layout pays.)
    config.placement = o.placement == "recorded"  ? BlockPlacement::Recorded
                       : o.placement == "best-fit" ? BlockPlacement::BestFit
                       : o.placement == "planned"  ? BlockPlacement::Planned
                                                   : BlockPlacement::OverDead;
    if (!o.pool_slab_size.empty()) {
        if (config.placement == BlockPlacement::Recorded)
            bad_usage("--pool-slab-size sizes the slabs of a pool that places the blocks anew: it does not go with "
                      "--placement recorded, which keeps the recorded addresses");
        const auto slab = parse_size(o.pool_slab_size);
        if (!slab || *slab < config.chunk_bytes || *slab % config.chunk_bytes != 0)
            bad_usage(fmt::format("--pool-slab-size '{}' must be a whole number of chunks ({} bytes each)",
                                  o.pool_slab_size, config.chunk_bytes));
        config.pool_slab_bytes = *slab;
    }
    return config;
}

// The trace as the policies see it, and its iteration bounds.
struct PreparedTrace {
    trace::Trace trace;
    std::vector<uint64_t> bounds;
};

PreparedTrace prepare_trace(const SimulateOptions& o) {
    PreparedTrace prepared{load_trace(o.file), {}};
    trace::Trace& trace = prepared.trace;
    std::vector<uint64_t>& bounds = prepared.bounds;
    bounds = iteration_bounds(trace);
    // Before repeating: the copies name the repeated iteration's access lists,
    // so its inferred extents hold for them, and inferring over the copies
    // would redo that iteration's window once per copy.
    if (o.extents == "inferred") infer_access_extents(trace, bounds);
    if (o.repeat_last > 0) {
        try {
            bounds = repeat_last_iteration(trace, bounds, o.repeat_last);
        } catch (const std::invalid_argument& e) {
            bad_usage(fmt::format("--repeat-last: {}: {}", o.file, e.what()));
        }
    }
    return prepared;
}

void check_homes_options(const SimulateOptions& o) {
    if (!o.host_bytes.empty() && o.homes == "gpu") bad_usage("--host-bytes goes with --homes host or auto");
    if (o.homes == "auto" && o.home_choice != "simulate")
        bad_usage("--homes auto takes as much of the home order as simulating says, as the library does: it does not "
                  "go with --home-choice estimate");
    if (o.placement == "auto" && o.homes != "auto")
        bad_usage("--placement auto chooses with the homes as the library does: it goes with --homes auto");
}

void run_one_budget(const SimulateOptions& o, const PreparedTrace& prepared, const ChunkSchedule& schedule,
                    SimConfig config, const SizeOrPercent& budget) {
    config.budget_bytes = budget.resolve(schedule.footprint_bytes());
    if (config.budget_bytes == 0) bad_usage("--budget must be larger than zero");
    // The tier model simulates the trace as host homes would make it.
    const std::optional<simulation::HomedRun> homes = simulation::homed_run(o, prepared.trace, prepared.bounds, config);
    const SimResult result =
        homes && homes->used ? homes->result : simulate(prepared.trace, schedule, prepared.bounds, config);
    if (o.json) {
        nlohmann::json j = simulation::to_json(result);
        if (homes) j["homes"] = simulation::homes_json(*homes);
        j["rates"] = rates::to_json(o.rates);
        std::cout << j.dump(2) << "\n";
    } else {
        simulation::print_result(result);
        if (homes) simulation::print_homes(*homes);
        // Only measured rates are named: the output without them stays what it always was.
        if (o.rates.measured()) fmt::print("{:<22}{}\n", "rates", rates::describe(o.rates));
    }
    if (o.timing)
        (o.json ? std::cerr : std::cout) << simulation::timing_line(result.policy, result.launches,
                                                                    result.simulation_cpu_seconds,
                                                                    result.simulation_wall_seconds);
}

void run(const SimulateOptions& options) {
    SimulateOptions o = options;
    o.rates = link_rates(o);
    SimConfig config = config_from(o);
    std::optional<SizeOrPercent> budget;
    if (!o.budget.empty()) budget = simulation::size_option("--budget", o.budget);
    else if (!o.sweep) bad_usage("--budget is required (or --sweep)");

    const std::clock_t prepare_start = std::clock();
    const PreparedTrace prepared = prepare_trace(o);
    if (o.rates_file.empty() && prepared.trace.header.rates) {
        o.rates = *prepared.trace.header.rates;
        config.link = link_model(o);
    }
    const ChunkSchedule schedule(prepared.trace, config.chunk_bytes);
    // Built here, on the first call, for the timing to show it in preparation
    // (a sweep runs every policy).
    if (o.sweep || (reads_next_uses(config.policy) && o.homes == "gpu")) schedule.next_uses();
    if (o.timing) {
        // What comes before any policy runs, shared by all of them: reading the file and
        // turning accesses into chunks (for belady, each launch's with its next uses).
        const double cpu = static_cast<double>(std::clock() - prepare_start) / CLOCKS_PER_SEC;
        (o.json ? std::cerr : std::cout) << fmt::format(
            "{:<22}{} launches in {:.3f} s CPU: {:.2f} M launches/s (reading, extents, chunk schedule)\n", "prepared",
            prepared.trace.launches.size(), cpu, simulation::millions_per_second(prepared.trace.launches.size(), cpu));
    }
    if (schedule.dangling_accesses())
        std::cerr << "uvmtrace simulate: note: " << schedule.dangling_accesses()
                  << " accesses name an allocation that was not live; they are ignored\n";
    check_homes_options(o);
    if (o.sweep) return simulation::run_sweep(o, prepared.trace, schedule, prepared.bounds, config);
    run_one_budget(o, prepared, schedule, config, *budget);
}

} // namespace

void register_simulate(CLI::App& app) {
    auto options = std::make_shared<SimulateOptions>();
    CLI::App* cmd = app.add_subcommand("simulate", "replay a trace against a policy and a GPU memory budget, offline");
    cmd->add_option("file", options->file, "trace file")->required();
    cmd->add_option("--budget", options->budget, "GPU memory budget: a size (24G) or a share of the footprint (66%)");
    cmd->add_option("--policy", options->policy, "demand-lru, learned or belady")->capture_default_str();
    cmd->add_option("--chunk", options->chunk, "residency chunk size, a power of two")->capture_default_str();
    cmd->add_option("--link-prefetch-gbps", options->prefetch_gbps, "prefetch speed of large pieces (default 48; smaller pieces scale along)");
    cmd->add_option("--link-evict-gbps", options->evict_gbps, "eviction speed of large pieces (default 16)");
    cmd->add_option("--link-fault-gbps", options->fault_gbps, "demand-fault migration speed (default 9)");
    cmd->add_option("--link-concurrent-gbps", options->concurrent_gbps, "fetch plus evict when both run (default 23)");
    cmd->add_option("--kernel-us", options->kernel_us, "duration of launches recorded without one (default 20)");
    cmd->add_option("--lookahead", options->lookahead, "launches ahead that prefetching may reach")->capture_default_str();
    cmd->add_option("--extents", options->extents,
                    "lengths of accesses the trace leaves open: inferred from the pointers in use at the same time, "
                    "or raw (to the end of the allocation)")
        ->check(CLI::IsMember({"inferred", "raw"}))
        ->capture_default_str();
    cmd->add_option("--fault-room", options->fault_room,
                    "who makes room for faulted-in data: copy-engine (the library's evictions keep the budget, "
                    "as under UVMP_BUDGET) or fault-path (a full GPU evicts while the kernel waits)")
        ->check(CLI::IsMember({"copy-engine", "fault-path"}))
        ->capture_default_str();
    cmd->add_option("--placement", options->placement,
                    "where the pool's blocks go: over-dead (placed anew as the library places them, over dead "
                    "bytes still on the GPU where it can), best-fit (placed anew, best fit alone), recorded "
                    "(where the recorded run put them) or planned (the steps after the second by a layout "
                    "planned for the second, the rest over-dead) or auto (with --homes auto: what the library does by "
                    "default, planned with the homes best for it where that is at most 5% slower than over-dead with its "
                    "own and moves out at most 1/16 of the budget a step, else over-dead)")
        ->check(CLI::IsMember({"over-dead", "best-fit", "recorded", "planned", "auto"}))
        ->capture_default_str();
    cmd->add_option("--pool-slab-size", options->pool_slab_size,
                    "slab size of the pool that re-places the blocks (over-dead, best-fit, planned, auto); "
                    "default: the recorded run's pool_slab_size");
    cmd->add_option("--repeat-last", options->repeat_last,
                    "append this many copies of the trace's last iteration first, to see the steady state "
                    "of a long job from a few recorded steps");
    cmd->add_flag("--json", options->json, "print JSON");
    cmd->add_flag("--timing", options->timing,
                  "print how fast the simulator ran, in launches per second of CPU time (to standard error with --json)");
    cmd->add_flag("--sweep", options->sweep,
                  "step time against budget for every policy, with a plot; with --homes host or auto, one line "
                  "more: the learned policy with the homes chosen at each budget (--homes auto --placement auto: "
                  "'default', what the library does by default). Each line has its own colour, dash and marker "
                  "shape; a line on another's points is named beside it in the legend ('= learned')");
    cmd->add_option("--sweep-from", options->sweep_from, "smallest budget of the sweep")->capture_default_str();
    cmd->add_option("--sweep-to", options->sweep_to, "largest budget of the sweep")->capture_default_str();
    cmd->add_option("--sweep-steps", options->sweep_steps, "budgets in the sweep")->capture_default_str();
    cmd->add_option("--plot", options->plot, "where the sweep's SVG goes")->capture_default_str();
    cmd->add_option("--homes", options->homes,
                    "gpu: every allocation homed on the GPU, migration keeps the budget (with --sweep: no homes line); host: the tier model, "
                    "allocations whose readers stream them (judged from the trace's kernel timings) live on the host "
                    "where that lowers the step's moving time; auto: what the library does by default, learning in "
                    "the run: only allocations made within the step are candidates, and the homes are used only "
                    "where they shorten the simulated step by 10% or more")
        ->check(CLI::IsMember({"gpu", "host", "auto"}))
        ->capture_default_str();
    cmd->add_option("--home-choice", options->home_choice,
                    "with --homes host: how much of the home order to take: simulate (try prefixes of it on the trace, "
                    "keep the fastest) or estimate (the closed-form estimate's best)")
        ->check(CLI::IsMember({"simulate", "estimate"}))
        ->capture_default_str();
    cmd->add_option("--host-bytes", options->host_bytes,
                    "with --homes host or auto: home the prefix of the home order whose bytes come nearest SIZE "
                    "instead of choosing, and use it whatever it gains: to simulate the homes a run chose (its "
                    "stats file's host_homes.chosen_bytes)");
    cmd->add_option("--rates", options->rates_file,
                    "link rates measured on the device to simulate (JSON, as the library caches them); the "
                    "--link-*, --remote-* and --streaming-gbps flags override single figures. Without it: the "
                    "reference H200 figures, and the streaming line 600")
        ->check(CLI::ExistingFile);
    cmd->add_option("--remote-write-gbps", options->remote_write_gbps, "with --homes host: kernels writing host memory (default 52.6)");
    cmd->add_option("--remote-read-gbps", options->remote_read_gbps, "with --homes host: kernels reading host memory (default 51.2)");
    cmd->add_option("--streaming-gbps", options->streaming_gbps,
                    fmt::format("with --homes host: named bytes per second of local run time from which a kernel "
                                "counts as streaming its operands (default {:g})",
                                placement::kDefaultStreamingGbps));
    cmd->callback([options] { run(*options); });
}

} // namespace uvmp::tools

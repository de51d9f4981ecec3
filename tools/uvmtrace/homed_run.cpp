#include "homed_run.h"

#include "simulate_report.h"

#include "core/homesearch/recorded_homes.h"
#include "core/placement/timing_prior.h"
#include "core/rates/streaming_line.h"
#include "core/util/size_parse.h"

#include <fmt/format.h>

#include <cmath>

namespace uvmp::tools::simulation {
namespace {

HomedRun run_with_host_homes(const SimulateOptions& o, const trace::Trace& trace, const std::vector<uint64_t>& bounds,
                             const SimConfig& config, placement::HomeScope scope) {
    auto rate = [](const char* name, double value, double fallback) {
        if (value < 0 || !std::isfinite(value)) bad_usage(fmt::format("{} must be a positive number of GB/s", name));
        return value > 0 ? value : fallback;
    };
    placement::Rates rates = o.rates;
    rates.remote_write_gbps = rate("--remote-write-gbps", o.remote_write_gbps, rates.remote_write_gbps);
    rates.remote_read_gbps = rate("--remote-read-gbps", o.remote_read_gbps, rates.remote_read_gbps);
    if (o.prefetch_gbps > 0) rates.fetch_gbps = o.prefetch_gbps;
    if (o.evict_gbps > 0) rates.evict_gbps = o.evict_gbps;
    placement::TimingPriorConfig prior_config;
    prior_config.streaming_gbps = rate("--streaming-gbps", o.streaming_gbps, rates::streaming_line_gbps(rates));
    const auto prior = placement::TimingPrior::from_trace(trace, prior_config);
    if (prior.kernels_judged() == 0)
        bad_usage(fmt::format("--homes {}: {} has no kernel durations (record it with UVMP_TRACE_TIMING=1)", o.homes, o.file));
    if (bounds.size() < 2) bad_usage(fmt::format("--homes {}: {} has no full iteration to learn homes from", o.homes, o.file));
    if (!o.host_bytes.empty() || o.home_choice == "simulate") {
        std::optional<uint64_t> host_bytes;
        if (!o.host_bytes.empty() && !(host_bytes = parse_size(o.host_bytes)))
            bad_usage(fmt::format("--host-bytes '{}' must be a size such as 5.5G", o.host_bytes));
        // --host-bytes: the homes a run chose, used whatever they gain, as the run used them.
        // With --placement auto, on as many steps after the learned one as the library weighs a layout on.
        const std::optional<placement::LengthenedTrace> lengthened =
            o.placement == "auto" ? placement::lengthened_for_layout(trace, bounds) : std::nullopt;
        const trace::Trace& weighed = lengthened ? lengthened->trace : trace;
        const std::vector<uint64_t>& weighed_bounds = lengthened ? lengthened->bounds : bounds;
        const auto searched_run = [&](const SimConfig& c) {
            SearchedHomes searched =
                host_bytes ? host_homes_nearest(weighed, weighed_bounds, c, prior, rates, scope, *host_bytes)
                           : search_host_homes(weighed, weighed_bounds, c, prior, rates, scope);
            HomedRun run;
            run.homes = std::move(searched.homes);
            run.result = std::move(searched.result);
            run.tried = std::move(searched.tried);
            double all_gpu = run.result.step_seconds;
            for (const SearchedHomes::Tried& t : run.tried)
                if (t.taken == 0) all_gpu = t.step_seconds;
            run.gain = placement::simulated_gain(run.result.step_seconds, all_gpu);
            run.chosen_by_bytes = host_bytes.has_value();
            // The step the library would run with these homes, placed as blocks come.
            run.over_dead_seconds =
                run.chosen_by_bytes ? run.result.step_seconds
                                    : placement::effective_step_seconds(run.homes.choice.host_bytes > 0,
                                                                        run.result.step_seconds, all_gpu);
            return run;
        };
        HomedRun run = searched_run(config);
        if (o.placement != "auto") return run;
        // As the library chooses under UVMP_STEP_LAYOUT=auto: the homes searched again with
        // the layout, which wins where it shortens the step enough.
        SimConfig planned_config = config;
        planned_config.placement = BlockPlacement::Planned;
        HomedRun planned = searched_run(planned_config);
        const double planned_seconds = planned.result.step_seconds, over_dead = run.over_dead_seconds;
        HomedRun& chosen =
            placement::layout_pays(planned_seconds, over_dead, planned.result.step_out_bytes, config.budget_bytes)
                ? planned
                : run;
        chosen.layout_used = &chosen == &planned;
        chosen.planned_seconds = planned_seconds;
        chosen.planned_out_bytes = planned.result.step_out_bytes;
        chosen.budget_bytes = config.budget_bytes;
        chosen.over_dead_seconds = over_dead;
        return std::move(chosen);
    }
    HomedRun run;
    run.homes = placement::with_host_homes(trace, bounds, config.budget_bytes, prior, rates, std::nullopt, scope);
    const ChunkSchedule schedule(run.homes.trace, config.chunk_bytes);
    run.result = simulate(run.homes.trace, schedule, bounds, config);
    return run;
}

} // namespace

std::optional<HomedRun> homed_run(const SimulateOptions& o, const trace::Trace& trace,
                                  const std::vector<uint64_t>& bounds, const SimConfig& config) {
    if (o.homes == "gpu") return std::nullopt;
    if (o.homes != "auto") return run_with_host_homes(o, trace, bounds, config, placement::HomeScope::LiveInStep);
    // What the library's default does: homes only where they pay enough, searched
    // in the order the library searches them.
    const auto judged = [&](placement::HomeScope scope) {
        HomedRun r = run_with_host_homes(o, trace, bounds, config, scope);
        if (!r.chosen_by_bytes && !r.layout_used) r.used = placement::homes_pay(r.homes.choice.host_bytes > 0, r.gain);
        return std::optional<HomedRun>(std::move(r));
    };
    return placement::own_allocations_first(judged, [](const HomedRun& r) { return r.used || r.layout_used; },
                                            true);
}

nlohmann::json homes_json(const HomedRun& run) {
    const placement::HostHomesOutcome& h = run.homes;
    nlohmann::json j = {{"tolerance", "local-timing prior"},
                        {"learned_step_begin", h.step_begin},
                        {"learned_step_end", h.step_end},
                        {"host_bytes", h.choice.host_bytes},
                        {"host_allocations", h.host_allocations},
                        {"order_taken", h.choice.taken},
                        {"order_length", h.order.size()},
                        {"swapped_bytes", h.choice.swapped_bytes},
                        {"all_gpu_swapped_bytes", h.choice.all_gpu_swapped_bytes},
                        {"estimated_seconds", h.choice.estimated_seconds},
                        {"all_gpu_estimated_seconds", h.choice.all_gpu_seconds},
                        {"step_remote_write_bytes", h.step_remote_write_bytes},
                        {"step_remote_read_bytes", h.step_remote_read_bytes},
                        {"step_remote_seconds", h.step_remote_seconds}};
    j["used"] = run.used;
    j["simulated_gain"] = run.gain;
    if (run.planned_seconds)
        j["step_layout"] = {{"planned_step_seconds", *run.planned_seconds},
                            {"planned_step_out_bytes", run.planned_out_bytes},
                            {"over_dead_step_seconds", run.over_dead_seconds},
                            {"used", run.layout_used}};
    nlohmann::json tried = nlohmann::json::array();
    for (const SearchedHomes::Tried& t : run.tried)
        tried.push_back({{"taken", t.taken}, {"host_bytes", t.host_bytes}, {"step_seconds", t.step_seconds}});
    j["tried"] = tried;
    return j;
}

void print_homes(const HomedRun& run) {
    const placement::HostHomesOutcome& h = run.homes;
    auto line = [](const char* label, const std::string& value) { fmt::print("{:<22}{}\n", label, value); };
    line("host homes", fmt::format("{} of the learned step's allocations live on the host ({} allocations in the trace; "
                                   "tolerance from local timings)",
                                   format_size(h.choice.host_bytes), h.host_allocations));
    line("swap left", fmt::format("{} beyond the budget at the peak ({} with every home on the GPU)",
                                  format_size(h.choice.swapped_bytes), format_size(h.choice.all_gpu_swapped_bytes)));
    line("remote a step", fmt::format("{} written, {} read: {} of trips", format_size(h.step_remote_write_bytes),
                                      format_size(h.step_remote_read_bytes), milliseconds(h.step_remote_seconds)));
    if (!run.used)
        line("homes used", fmt::format("no: {:.1f}% shorter in simulation, under the {:.0f}% the library asks; the result "
                                       "above is every home on the GPU",
                                       100.0 * run.gain, 100.0 * placement::kMinSimulatedGain));
    if (run.planned_seconds)
        line("step layout", fmt::format("{}: {} with the layout and its best homes ({} out a step), {} with blocks "
                                        "placed as they come (the library {} it under UVMP_STEP_LAYOUT=auto, which "
                                        "asks at most {:.0f}% longer a step, and at most {} out)",
                                        run.layout_used ? "used" : "not used", milliseconds(*run.planned_seconds),
                                        format_size(run.planned_out_bytes), milliseconds(run.over_dead_seconds),
                                        run.layout_used ? "uses" : "would not use", 100.0 * placement::kLayoutMargin,
                                        format_size(static_cast<uint64_t>(placement::kLayoutOutShare *
                                                                          static_cast<double>(run.budget_bytes)))));
    if (run.tried.empty()) return;
    std::string tried;
    for (const SearchedHomes::Tried& t : run.tried)
        tried += fmt::format("{}{}: {}", tried.empty() ? "" : ", ", format_size(t.host_bytes), milliseconds(t.step_seconds));
    line("homes tried", fmt::format("host bytes: step time; {}", tried));
}

} // namespace uvmp::tools::simulation

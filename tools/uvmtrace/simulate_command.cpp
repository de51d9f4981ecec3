// `uvmtrace simulate FILE --budget SIZE [--policy NAME] [--json]`: replays a
// trace against a policy and budget, offline. With --sweep: step time against
// budget for every policy, as a table and an SVG plot.
#include "commands.h"
#include "trace_file.h"
#include "usage_errors.h"

#include "core/trace/analysis/access_extents.h"
#include "core/placement/host_homes.h"
#include "core/homesearch/recorded_homes.h"
#include "core/homesearch/home_search.h"
#include "core/placement/timing_prior.h"
#include "core/rates/streaming_line.h"
#include "core/policy/policy.h"
#include "core/sim/simulator.h"
#include "core/util/size_parse.h"
#include "core/trace/edit/repeat.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uvmp::tools {
namespace {

struct SimulateOptions {
    std::string file;
    std::string budget;
    std::string policy = "learned";
    std::string chunk = "2M";
    double prefetch_gbps = 0;
    double evict_gbps = 0;
    double fault_gbps = 0;
    double concurrent_gbps = 0;
    double kernel_us = 0;
    uint64_t lookahead = 4096;
    bool json = false;
    bool timing = false;
    bool sweep = false;
    std::string extents = "inferred";
    uint32_t repeat_last = 0;
    std::string fault_room = "copy-engine";
    std::string placement = "over-dead";
    std::string sweep_from = "30%";
    std::string sweep_to = "110%";
    unsigned sweep_steps = 10;
    std::string plot = "simulate-sweep.svg";
    std::string homes = "gpu";
    std::string home_choice = "simulate";
    double remote_write_gbps = 0;
    double remote_read_gbps = 0;
    double streaming_gbps = 0;
    std::string host_bytes; // with --homes host or auto: take the prefix of the order nearest this many bytes
    std::string rates_file; // --rates: measured link rates (core/rates/link_rates.h); else the reference's
};

[[noreturn]] void bad_usage(const std::string& message) { tools::bad_usage("simulate", message); }

SizeOrPercent size_option(const std::string& name, const std::string& text) {
    return tools::size_option("simulate", name, text);
}

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

LinkModel link_model(const SimulateOptions& o, const rates::LinkRates& rates) {
    LinkModel link(rates);
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

std::string milliseconds(double seconds) { return fmt::format("{:.3f} ms", seconds * 1e3); }

// Each steady step in ms, the first and last eight of a long run: whether the
// policy settles, drifts or alternates, which the median hides.
std::string steady_steps_text(const std::vector<double>& steps) {
    constexpr size_t kShown = 16;
    std::string text;
    for (size_t k = 0; k < steps.size(); ++k) {
        if (steps.size() > kShown && k == kShown / 2) {
            text += ", ...";
            k = steps.size() - kShown / 2;
        }
        text += fmt::format("{}{:.1f}", text.empty() ? "" : ", ", steps[k] * 1e3);
    }
    return text + " ms";
}

nlohmann::json to_json(const SimResult& r) {
    nlohmann::json j = {
        {"policy", r.policy},
        {"budget_bytes", r.budget_bytes},
        {"chunk_bytes", r.chunk_bytes},
        {"footprint_bytes", r.footprint_bytes},
        {"launches", r.launches},
        {"prefetched_bytes", r.prefetched_bytes},
        {"evicted_bytes", r.evicted_bytes},
        {"demand_bytes", r.demand_bytes},
        {"demand_fetched_bytes", r.demand_fetched_bytes},
        {"prefetch_calls", r.prefetch_calls},
        {"evict_calls", r.evict_calls},
        {"transfer_calls", r.transfer_calls()},
        {"reused_bytes", r.reused_bytes},
        {"layout_blocks", r.layout_blocks},
        {"layout_arena_bytes", r.layout_arena_bytes},
        {"layout_peak_live_bytes", r.layout_peak_live_bytes},
        {"layout_placed", r.layout_placed},
        {"layout_displaced", r.layout_displaced},
        {"dead_evicted_bytes", r.dead_evicted_bytes},
        {"step_dead_out_bytes", r.step_dead_out_bytes},
        {"peak_resident_bytes", r.peak_resident_bytes},
        {"peak_launch_resident_bytes", r.peak_launch_resident_bytes},
        {"oversized_launches", r.oversized_launches},
        {"total_seconds", r.total_seconds},
        {"compute_seconds", r.compute_seconds},
        {"copy_busy_seconds", r.copy_busy_seconds},
        {"step_seconds", r.step_seconds},
        {"steady_steps", r.steady_steps},
        {"steady_step_seconds", r.steady_step_seconds},
        {"step_launches", r.step_launches},
        {"step_working_set_bytes", r.step_working_set_bytes},
        {"step_in_bytes", r.step_in_bytes},
        {"step_out_bytes", r.step_out_bytes},
        {"transfer_bound_step_seconds", r.transfer_bound_step_seconds},
        {"simulation_wall_seconds", r.simulation_wall_seconds},
        {"simulation_cpu_seconds", r.simulation_cpu_seconds},
    };
    j["prediction_hit_rate"] = r.prediction_hit_rate ? nlohmann::json(*r.prediction_hit_rate) : nlohmann::json(nullptr);
    return j;
}

void print_result(const SimResult& r) {
    auto line = [](const char* label, const std::string& value) { fmt::print("{:<22}{}\n", label, value); };
    line("policy", r.policy);
    line("budget", fmt::format("{} ({:.0f}% of the {} footprint), chunk {}", format_size(r.budget_bytes),
                               r.footprint_bytes ? 100.0 * static_cast<double>(r.budget_bytes) / static_cast<double>(r.footprint_bytes) : 0.0,
                               format_size(r.footprint_bytes), format_size(r.chunk_bytes)));
    line("launches", std::to_string(r.launches));
    line("prefetched", r.demand_fetched_bytes
                           ? fmt::format("{} in {} calls ({} of it missed by the launch that needed it)",
                                         format_size(r.prefetched_bytes), r.prefetch_calls,
                                         format_size(r.demand_fetched_bytes))
                           : fmt::format("{} in {} calls", format_size(r.prefetched_bytes), r.prefetch_calls));
    line("evicted", fmt::format("{} in {} calls", format_size(r.evicted_bytes), r.evict_calls));
    line("demand-faulted", format_size(r.demand_bytes));
    // Only blocks of the pool are reused in place: traces without them print as before.
    if (r.reused_bytes) line("reused in place", fmt::format("{} left on the GPU by freed blocks", format_size(r.reused_bytes)));
    if (r.layout_blocks)
        line("planned layout", fmt::format("{} blocks of the learned step in a {} arena (their peak live {}); later steps "
                                           "put {} blocks by it, {} found their place taken",
                                           r.layout_blocks, format_size(r.layout_arena_bytes),
                                           format_size(r.layout_peak_live_bytes), r.layout_placed, r.layout_displaced));
    if (r.dead_evicted_bytes)
        line("dead evicted", fmt::format("{} of the evicted bytes were dead, left on the GPU by freed blocks",
                                         format_size(r.dead_evicted_bytes)));
    line("peak resident", format_size(r.peak_resident_bytes));
    if (r.oversized_launches)
        line("over budget", fmt::format("{} launches need more than the budget on their own", r.oversized_launches));
    line("total time", fmt::format("{} (compute {}, copy engine busy {})", milliseconds(r.total_seconds),
                                   milliseconds(r.compute_seconds), milliseconds(r.copy_busy_seconds)));
    if (r.step_launches)
        line("step time", fmt::format("{} median of {} steady steps of {} launches", milliseconds(r.step_seconds),
                                      r.steady_steps, r.step_launches));
    else
        line("step time", "no iterations found: see total time");
    if (r.step_launches && r.steady_step_seconds.size() > 1) line("steady steps", steady_steps_text(r.steady_step_seconds));
    if (r.step_launches)
        line("moved per step",
             fmt::format("{} in, {} out ({}the step closest to the median)", format_size(r.step_in_bytes),
                         format_size(r.step_out_bytes),
                         r.step_dead_out_bytes ? format_size(r.step_dead_out_bytes) + " of it dead; " : std::string()));
    line("bound per step", fmt::format("{} (working set {}: compute or link, whichever is longer)",
                                       milliseconds(r.transfer_bound_step_seconds), format_size(r.step_working_set_bytes)));
    if (r.prediction_hit_rate) line("prediction hit rate", fmt::format("{:.1f}%", *r.prediction_hit_rate * 100.0));
}

double millions_per_second(uint64_t launches, double seconds) {
    return seconds > 0 ? static_cast<double>(launches) / seconds / 1e6 : 0.0;
}

// The simulator's own speed; kept out of the default output, which must not
// change from run to run.
std::string timing_line(std::string_view policy, uint64_t launches, double cpu_seconds, double wall_seconds) {
    return fmt::format("{:<22}{} launches in {:.3f} s CPU, {:.3f} s wall: {:.2f} M launches/s per core ({:.2f} M/s wall)\n",
                       fmt::format("simulated {}", policy), launches, cpu_seconds, wall_seconds,
                       millions_per_second(launches, cpu_seconds), millions_per_second(launches, wall_seconds));
}

struct SweepRow {
    uint64_t budget = 0;
    std::vector<SimResult> results; // one per policy, in kPolicies order
};

constexpr PolicyKind kPolicies[] = {PolicyKind::DemandLru, PolicyKind::Learned, PolicyKind::Belady};
constexpr const char* kColours[] = {"#d62728", "#1f77b4", "#2ca02c"};

std::string xml_escaped(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '&') out += "&amp;";
        else if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else out += c;
    }
    return out;
}

// Rounds a span up to 1, 2 or 5 times a power of ten for tick spacing.
double nice_step(double span, int ticks) {
    const double raw = span / ticks;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (raw <= m * power) return m * power;
    return 10.0 * power;
}

std::string sweep_svg(const std::vector<SweepRow>& rows, uint64_t footprint, const std::string& title) {
    const double width = 760, height = 460, left = 80, right = 190, top = 40, bottom = 60;
    const double plot_w = width - left - right, plot_h = height - top - bottom;
    const double gib = 1024.0 * 1024.0 * 1024.0;
    const double x_min = static_cast<double>(rows.front().budget) / gib;
    double x_max = static_cast<double>(rows.back().budget) / gib;
    if (x_max <= x_min) x_max = x_min + 1e-9;
    double y_max = 0;
    for (const SweepRow& row : rows)
        for (const SimResult& r : row.results) y_max = std::max(y_max, r.step_seconds * 1e3);
    if (y_max <= 0) y_max = 1;
    const double y_step = nice_step(y_max, 6);
    y_max = std::ceil(y_max / y_step) * y_step;
    auto px = [&](double x) { return left + (x - x_min) / (x_max - x_min) * plot_w; };
    auto py = [&](double y) { return top + plot_h - y / y_max * plot_h; };

    std::string svg = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
        width, height);
    svg += fmt::format("<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n", left + plot_w / 2, xml_escaped(title));
    // Axes, grid and ticks.
    svg += fmt::format("<path d=\"M{0} {1} V{2} H{3}\" stroke=\"black\" fill=\"none\"/>\n", left, top, top + plot_h, left + plot_w);
    for (double y = 0; y <= y_max + y_step / 2; y += y_step) {
        svg += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>\n", left, py(y), left + plot_w);
        svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n", left - 6, py(y) + 4, y);
    }
    const double x_step = nice_step(x_max - x_min, 6);
    for (double x = std::ceil(x_min / x_step) * x_step; x <= x_max + x_step * 1e-6; x += x_step) {
        svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"black\"/>\n", px(x), top + plot_h, top + plot_h + 5);
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:g}</text>\n", px(x), top + plot_h + 18, x);
    }
    if (footprint > 0) {
        const double f = static_cast<double>(footprint) / gib;
        if (f >= x_min && f <= x_max)
            svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n"
                               "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\" fill=\"#555\">footprint</text>\n",
                               px(f), top, top + plot_h, top - 4);
    }
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">GPU memory budget (GiB)</text>\n", left + plot_w / 2, height - 18);
    svg += fmt::format("<text transform=\"translate(20 {}) rotate(-90)\" text-anchor=\"middle\">step time (ms)</text>\n", top + plot_h / 2);

    // One polyline per policy, then the bound, then the legend.
    std::vector<std::pair<std::string, std::string>> legend;
    for (size_t p = 0; p < std::size(kPolicies); ++p) {
        std::string points;
        for (const SweepRow& row : rows)
            points += fmt::format("{:.1f},{:.1f} ", px(static_cast<double>(row.budget) / gib), py(row.results[p].step_seconds * 1e3));
        svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", points, kColours[p]);
        legend.emplace_back(std::string(policy_kind_name(kPolicies[p])), kColours[p]);
    }
    std::string bound;
    for (const SweepRow& row : rows)
        bound += fmt::format("{:.1f},{:.1f} ", px(static_cast<double>(row.budget) / gib), py(row.results[0].transfer_bound_step_seconds * 1e3));
    svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"#555\" stroke-dasharray=\"6 4\"/>\n", bound);
    legend.emplace_back("bound", "#555");
    for (size_t i = 0; i < legend.size(); ++i) {
        const double y = top + 10 + 20.0 * static_cast<double>(i);
        svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"2\"{4}/>\n"
                           "<text x=\"{5}\" y=\"{6}\">{7}</text>\n",
                           left + plot_w + 20, y, left + plot_w + 50, legend[i].second,
                           legend[i].first == "bound" ? " stroke-dasharray=\"6 4\"" : "", left + plot_w + 56, y + 4, legend[i].first);
    }
    svg += "</svg>\n";
    return svg;
}

void run_sweep(const SimulateOptions& o, const trace::Trace& trace, const ChunkSchedule& schedule,
               const std::vector<uint64_t>& bounds, SimConfig config) {
    const uint64_t footprint = schedule.footprint_bytes();
    const uint64_t from = size_option("--sweep-from", o.sweep_from).resolve(footprint);
    const uint64_t to = size_option("--sweep-to", o.sweep_to).resolve(footprint);
    if (o.sweep_steps < 2) bad_usage("--sweep-steps must be at least 2");
    if (to <= from) bad_usage(fmt::format("--sweep-to ({}) must be larger than --sweep-from ({})", format_size(to), format_size(from)));

    std::vector<SweepRow> rows;
    for (unsigned s = 0; s < o.sweep_steps; ++s) {
        SweepRow row;
        row.budget = from + static_cast<uint64_t>(static_cast<double>(to - from) * s / (o.sweep_steps - 1));
        config.budget_bytes = row.budget;
        for (PolicyKind kind : kPolicies) {
            config.policy = kind;
            row.results.push_back(simulate(trace, schedule, bounds, config));
        }
        rows.push_back(std::move(row));
    }

    if (o.json) {
        nlohmann::json out = nlohmann::json::array();
        for (const SweepRow& row : rows)
            for (const SimResult& r : row.results) out.push_back(to_json(r));
        std::cout << out.dump(2) << "\n";
    } else {
        fmt::print("step time against budget (footprint {}, chunk {})\n", format_size(footprint), format_size(config.chunk_bytes));
        fmt::print("{:>12} {:>6} {:>14} {:>14} {:>14} {:>14} {:>9}\n", "budget", "%", "demand-lru", "learned", "belady", "bound", "hit rate");
        for (const SweepRow& row : rows) {
            const double pct = footprint ? 100.0 * static_cast<double>(row.budget) / static_cast<double>(footprint) : 0.0;
            const auto& hit = row.results[1].prediction_hit_rate;
            fmt::print("{:>12} {:>5.0f}% {:>14} {:>14} {:>14} {:>14} {:>8.1f}%\n", format_size(row.budget), pct,
                       milliseconds(row.results[0].step_seconds), milliseconds(row.results[1].step_seconds),
                       milliseconds(row.results[2].step_seconds), milliseconds(row.results[0].transfer_bound_step_seconds),
                       hit ? *hit * 100.0 : 0.0);
        }
    }
    if (o.timing) {
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
    std::ofstream svg(o.plot);
    svg << sweep_svg(rows, footprint, fmt::format("{}: step time against budget", o.file));
    if (!svg) throw std::runtime_error("cannot write the plot to " + o.plot);
    if (!o.json) fmt::print("plot written to {}\n", o.plot);
}

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
    // blocks placed as they come; whether the layout won (core/placement/recorded_homes.h).
    std::optional<double> planned_seconds;
    uint64_t planned_out_bytes = 0;
    uint64_t budget_bytes = 0;
    double over_dead_seconds = 0;
    bool layout_used = false;
};

HomedRun run_with_host_homes(const SimulateOptions& o, const trace::Trace& trace, const std::vector<uint64_t>& bounds,
                             const SimConfig& config, placement::HomeScope scope, const rates::LinkRates& measured) {
    auto rate = [](const char* name, double value, double fallback) {
        if (value < 0 || !std::isfinite(value)) bad_usage(fmt::format("{} must be a positive number of GB/s", name));
        return value > 0 ? value : fallback;
    };
    placement::Rates rates = measured;
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

void run(const SimulateOptions& o) {
    SimConfig config;
    const auto chunk = parse_size(o.chunk);
    if (!chunk || *chunk == 0 || (*chunk & (*chunk - 1)) != 0)
        bad_usage(fmt::format("--chunk '{}' must be a power-of-two size such as 2M", o.chunk));
    config.chunk_bytes = *chunk;
    rates::LinkRates measured = link_rates(o);
    config.link = link_model(o, measured);
    if (o.lookahead == 0) bad_usage("--lookahead must be at least 1 launch");
    config.lookahead.max_lookahead_launches = o.lookahead;
    const auto policy = parse_policy_kind(o.policy);
    if (!policy) bad_usage(fmt::format("unknown policy '{}': use demand-lru, learned or belady", o.policy));
    config.policy = *policy;
    config.fault_room = o.fault_room == "fault-path" ? FaultRoom::FaultPath : FaultRoom::CopyEngine;
    config.placement = o.placement == "recorded"  ? BlockPlacement::Recorded
                       : o.placement == "best-fit" ? BlockPlacement::BestFit
                       : o.placement == "planned"  ? BlockPlacement::Planned
                                                   : BlockPlacement::OverDead;
    std::optional<SizeOrPercent> budget;
    if (!o.budget.empty()) budget = size_option("--budget", o.budget);
    else if (!o.sweep) bad_usage("--budget is required (or --sweep)");

    const std::clock_t prepare_start = std::clock();
    trace::Trace trace = load_trace(o.file);
    if (o.rates_file.empty() && trace.header.rates) {
        measured = *trace.header.rates;
        config.link = link_model(o, measured);
    }
    std::vector<uint64_t> bounds = iteration_bounds(trace);
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
    const ChunkSchedule schedule(trace, config.chunk_bytes);
    // Built here, on the first call, for the timing to show it in preparation
    // (a sweep runs every policy).
    if (o.sweep || (reads_next_uses(config.policy) && o.homes == "gpu")) schedule.next_uses();
    if (o.timing) {
        // What comes before any policy runs, shared by all of them: reading the file and
        // turning accesses into chunks (for belady, each launch's with its next uses).
        const double cpu = static_cast<double>(std::clock() - prepare_start) / CLOCKS_PER_SEC;
        (o.json ? std::cerr : std::cout) << fmt::format(
            "{:<22}{} launches in {:.3f} s CPU: {:.2f} M launches/s (reading, extents, chunk schedule)\n", "prepared",
            trace.launches.size(), cpu, millions_per_second(trace.launches.size(), cpu));
    }
    if (schedule.dangling_accesses())
        std::cerr << "uvmtrace simulate: note: " << schedule.dangling_accesses()
                  << " accesses name an allocation that was not live; they are ignored\n";
    if (o.sweep && o.homes != "gpu") bad_usage(fmt::format("--homes {} needs one --budget: it does not sweep", o.homes));
    if (!o.host_bytes.empty() && o.homes == "gpu") bad_usage("--host-bytes goes with --homes host or auto");
    if (o.homes == "auto" && o.home_choice != "simulate")
        bad_usage("--homes auto takes as much of the home order as simulating says, as the library does: it does not "
                  "go with --home-choice estimate");
    if (o.placement == "auto" && o.homes != "auto")
        bad_usage("--placement auto chooses with the homes as the library does: it goes with --homes auto");
    if (o.sweep) return run_sweep(o, trace, schedule, bounds, config);

    config.budget_bytes = budget->resolve(schedule.footprint_bytes());
    if (config.budget_bytes == 0) bad_usage("--budget must be larger than zero");
    // The tier model simulates the trace as host homes would make it.
    std::optional<HomedRun> homes;
    if (o.homes != "gpu")
        homes = run_with_host_homes(o, trace, bounds, config,
                                    o.homes == "auto" ? placement::HomeScope::MadeInStep : placement::HomeScope::LiveInStep,
                                    measured);
    // What the library's default does: homes only where they pay enough.
    if (homes && o.homes == "auto" && !homes->chosen_by_bytes && !homes->layout_used)
        homes->used = placement::homes_pay(homes->homes.choice.host_bytes > 0, homes->gain);
    const SimResult result =
        homes && homes->used ? homes->result : simulate(trace, schedule, bounds, config);
    if (o.json) {
        nlohmann::json j = to_json(result);
        if (homes) j["homes"] = homes_json(*homes);
        j["rates"] = rates::to_json(measured);
        std::cout << j.dump(2) << "\n";
    } else {
        print_result(result);
        if (homes) print_homes(*homes);
        // Only measured rates are named: the output without them stays what it always was.
        if (measured.measured()) fmt::print("{:<22}{}\n", "rates", rates::describe(measured));
    }
    if (o.timing)
        (o.json ? std::cerr : std::cout)
            << timing_line(result.policy, result.launches, result.simulation_cpu_seconds, result.simulation_wall_seconds);
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
    cmd->add_option("--repeat-last", options->repeat_last,
                    "append this many copies of the trace's last iteration first, to see the steady state "
                    "of a long job from a few recorded steps");
    cmd->add_flag("--json", options->json, "print JSON");
    cmd->add_flag("--timing", options->timing,
                  "print how fast the simulator ran, in launches per second of CPU time (to standard error with --json)");
    cmd->add_flag("--sweep", options->sweep, "step time against budget for every policy, with a plot");
    cmd->add_option("--sweep-from", options->sweep_from, "smallest budget of the sweep")->capture_default_str();
    cmd->add_option("--sweep-to", options->sweep_to, "largest budget of the sweep")->capture_default_str();
    cmd->add_option("--sweep-steps", options->sweep_steps, "budgets in the sweep")->capture_default_str();
    cmd->add_option("--plot", options->plot, "where the sweep's SVG goes")->capture_default_str();
    cmd->add_option("--homes", options->homes,
                    "gpu: every allocation homed on the GPU, migration keeps the budget; host: the tier model, "
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

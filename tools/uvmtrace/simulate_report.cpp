#include "simulate_report.h"

#include "core/util/size_parse.h"

#include <fmt/format.h>

#include <vector>

namespace uvmp::tools::simulation {
namespace {

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

} // namespace

std::string milliseconds(double seconds) { return fmt::format("{:.3f} ms", seconds * 1e3); }

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
        {"populated_bytes", r.populated_bytes},
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
    // Only re-placed pool blocks are told fresh: traces without them print as before.
    if (r.populated_bytes)
        line("populated", fmt::format("{} of fresh memory made on the GPU as it was first fetched",
                                      format_size(r.populated_bytes)));
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

std::string timing_line(std::string_view policy, uint64_t launches, double cpu_seconds, double wall_seconds) {
    return fmt::format("{:<22}{} launches in {:.3f} s CPU, {:.3f} s wall: {:.2f} M launches/s per core ({:.2f} M/s wall)\n",
                       fmt::format("simulated {}", policy), launches, cpu_seconds, wall_seconds,
                       millions_per_second(launches, cpu_seconds), millions_per_second(launches, wall_seconds));
}

} // namespace uvmp::tools::simulation

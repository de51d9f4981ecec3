// `uvmtrace info FILE [--json]`: what a trace holds, in a few lines.
#include "commands.h"
#include "trace_file.h"

#include "core/util/size_parse.h"
#include "core/trace/analysis/summary.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace uvmp::tools {
namespace {

using namespace uvmp::trace;

std::string seconds(uint64_t ns) { return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9); }

// Exact bytes next to the rounded size, for comparing with what a framework
// reports (PyTorch's peak reserved memory, for one).
std::string size_and_bytes(uint64_t bytes) { return fmt::format("{} ({} bytes)", format_size(bytes), bytes); }

std::string count_and_size(uint64_t count, uint64_t bytes) {
    return fmt::format("{} ({})", count, format_size(bytes));
}

void print_text(const Trace& trace, const TraceSummary& summary) {
    const Header& header = trace.header;
    auto line = [](const char* label, const std::string& value) { fmt::print("{:<20}{}\n", label, value); };

    line("format", fmt::format("{}.{}, written by uvmprefetch {}", header.format_major, header.format_minor,
                               header.library_version.empty() ? "(unknown)" : header.library_version));
    line("device", fmt::format("{}, {}, driver {}", header.device_name.empty() ? "(unknown)" : header.device_name,
                               format_size(header.device_total_bytes), header.driver_version));
    line("process", fmt::format("pid {}, rank {}", header.pid, header.rank));
    line("budget", header.budget_bytes == 0 ? std::string("none")
                                            : fmt::format("{}, chunk {}", format_size(header.budget_bytes),
                                                          format_size(header.chunk_bytes)));
    if (!header.options.empty()) {
        std::string options;
        for (const auto& [key, value] : header.options) options += fmt::format("{}{}={}", options.empty() ? "" : " ", key, value);
        line("options", options);
    }
    line("duration", seconds(summary.duration_ns));

    AllocTotals all = summary.all_allocs();
    std::string allocs = count_and_size(all.count, all.bytes);
    std::string by_kind;
    for (size_t kind = 0; kind < summary.allocs_by_kind.size(); ++kind) {
        const AllocTotals& totals = summary.allocs_by_kind[kind];
        if (totals.count == 0) continue;
        by_kind += fmt::format("{}{} {}", by_kind.empty() ? "" : ", ", alloc_kind_name(static_cast<AllocKind>(kind)),
                               count_and_size(totals.count, totals.bytes));
    }
    if (!by_kind.empty()) allocs += ": " + by_kind;
    line("allocations", allocs);
    const PoolTotals& pool = summary.pool;
    line("frees", pool.pooled_frees ? fmt::format("{} ({} of pooled blocks)", summary.frees, pool.pooled_frees)
                                    : std::to_string(summary.frees));
    // Traces of format 1.0 have no pool: their text stays as it was.
    if (pool.any())
        line("pool slabs", fmt::format("{} created, {} given back, peak {}", pool.slabs_created, pool.slabs_released,
                                       size_and_bytes(pool.peak_slab_bytes)));
    line("peak live", size_and_bytes(summary.peak_live_bytes) + " of device memory");
    line("launches", fmt::format("{}, {} distinct kernels, {} accesses", summary.launches, summary.distinct_kernels,
                                 summary.accesses));
    // Traces without graphs (all before format 1.2) keep their text as it was.
    if (const GraphTotals& graphs = summary.graphs; graphs.any()) {
        line("graph launches", fmt::format("{} of {} graphs, replaying {} of the launches; {} not known, {} captured",
                                           graphs.graph_launches, graphs.graphs, graphs.replayed_launches,
                                           graphs.unknown_launches, graphs.captured_graph_launches));
        line("captured launches", fmt::format("{} (made into a graph being captured: not run)",
                                              graphs.captured_launches));
    }
    if (summary.period) {
        const IterationPeriod& period = *summary.period;
        line("iteration", fmt::format("{} launches, from launch {}, {} full repeats ({})", period.period,
                                      period.first_launch, period.repeats,
                                      period.from_marks ? "from iteration marks" : "from the kernel sequence"));
    } else {
        line("iteration", "no repeating period found");
    }
    if (summary.iteration) {
        const IterationFootprint& footprint = *summary.iteration;
        line("iteration footprint",
             fmt::format("{} in {} allocations accessed, peak live {}, launches {}..{}",
                         format_size(footprint.accessed_bytes), footprint.accessed_allocs,
                         size_and_bytes(footprint.peak_live_bytes), footprint.first_launch,
                         footprint.first_launch + summary.period->period - 1));
    }
    if (const auto& steps = summary.step_times) {
        const double ms = 1e-6;
        line("step times",
             fmt::format("{} of {} full steps timed: {:.1f} ms from one's first launch call to the next's (median; "
                         "{:.1f}-{:.1f}), kernels {:.1f} ms (median), {:.0f}% of it",
                         steps->measured, steps->steps, static_cast<double>(steps->median_call_ns) * ms,
                         static_cast<double>(steps->least_call_ns) * ms, static_cast<double>(steps->most_call_ns) * ms,
                         static_cast<double>(steps->median_kernel_ns) * ms, steps->kernel_share * 100));
    }
    std::string moves;
    for (size_t kind = 0; kind < summary.moves_by_kind.size(); ++kind) {
        const MoveTotals& totals = summary.moves_by_kind[kind];
        if (totals.count == 0) continue;
        moves += fmt::format("{}{} {} in {}", moves.empty() ? "" : ", ", move_kind_name(static_cast<MoveKind>(kind)),
                             count_and_size(totals.count, totals.bytes), seconds(totals.duration_ns));
        if (totals.dead_bytes) moves += fmt::format(" ({} of dead memory)", format_size(totals.dead_bytes));
    }
    line("library moves", moves.empty() ? std::string("none") : moves);
    line("dropped records", std::to_string(summary.dropped_records));
}

nlohmann::ordered_json to_json(const Trace& trace, const TraceSummary& summary) {
    const Header& header = trace.header;
    nlohmann::ordered_json out;
    out["format"] = {{"major", header.format_major}, {"minor", header.format_minor}};
    out["library_version"] = header.library_version;
    out["device"] = {{"name", header.device_name},
                     {"total_bytes", header.device_total_bytes},
                     {"driver_version", header.driver_version}};
    out["pid"] = header.pid;
    out["rank"] = header.rank;
    out["budget_bytes"] = header.budget_bytes;
    out["chunk_bytes"] = header.chunk_bytes;
    out["options"] = header.options;
    out["duration_ns"] = summary.duration_ns;
    nlohmann::ordered_json allocs;
    for (size_t kind = 0; kind < summary.allocs_by_kind.size(); ++kind) {
        allocs[alloc_kind_name(static_cast<AllocKind>(kind))] = {{"count", summary.allocs_by_kind[kind].count},
                                                                 {"bytes", summary.allocs_by_kind[kind].bytes}};
    }
    out["allocations"] = allocs;
    out["frees"] = summary.frees;
    out["pool"] = {{"pooled_frees", summary.pool.pooled_frees},
                   {"slabs_created", summary.pool.slabs_created},
                   {"slabs_released", summary.pool.slabs_released},
                   {"peak_slab_bytes", summary.pool.peak_slab_bytes}};
    out["peak_live_bytes"] = summary.peak_live_bytes;
    out["launches"] = summary.launches;
    out["distinct_kernels"] = summary.distinct_kernels;
    out["accesses"] = summary.accesses;
    out["graphs"] = {{"graphs", summary.graphs.graphs},
                     {"graph_launches", summary.graphs.graph_launches},
                     {"replayed_launches", summary.graphs.replayed_launches},
                     {"unknown_launches", summary.graphs.unknown_launches},
                     {"captured_graph_launches", summary.graphs.captured_graph_launches},
                     {"captured_launches", summary.graphs.captured_launches}};
    if (summary.period) {
        out["iteration"] = {{"period", summary.period->period},
                            {"first_launch", summary.period->first_launch},
                            {"repeats", summary.period->repeats},
                            {"from_marks", summary.period->from_marks}};
    } else {
        out["iteration"] = nullptr;
    }
    if (summary.iteration) {
        out["iteration_footprint"] = {{"first_launch", summary.iteration->first_launch},
                                      {"accessed_allocations", summary.iteration->accessed_allocs},
                                      {"accessed_bytes", summary.iteration->accessed_bytes},
                                      {"peak_live_bytes", summary.iteration->peak_live_bytes}};
    } else {
        out["iteration_footprint"] = nullptr;
    }
    if (const auto& steps = summary.step_times) {
        out["step_times"] = {{"steps", steps->steps},
                             {"measured", steps->measured},
                             {"median_call_ns", steps->median_call_ns},
                             {"least_call_ns", steps->least_call_ns},
                             {"most_call_ns", steps->most_call_ns},
                             {"median_kernel_ns", steps->median_kernel_ns},
                             {"kernel_share", steps->kernel_share}};
    } else {
        out["step_times"] = nullptr;
    }
    nlohmann::ordered_json moves;
    for (size_t kind = 0; kind < summary.moves_by_kind.size(); ++kind) {
        const MoveTotals& totals = summary.moves_by_kind[kind];
        moves[move_kind_name(static_cast<MoveKind>(kind))] = {{"count", totals.count},
                                                              {"bytes", totals.bytes},
                                                              {"dead_bytes", totals.dead_bytes},
                                                              {"duration_ns", totals.duration_ns}};
    }
    out["library_moves"] = moves;
    out["dropped_records"] = summary.dropped_records;
    return out;
}

struct InfoArguments {
    std::string path;
    bool json = false;
};

} // namespace

void register_info(CLI::App& app) {
    auto arguments = std::make_shared<InfoArguments>();
    CLI::App* command = app.add_subcommand("info", "summarise a trace: allocations, launches, iteration, footprint");
    command->add_option("FILE", arguments->path, "trace file")->required();
    command->add_flag("--json", arguments->json, "print one JSON object instead of text");
    command->callback([arguments] {
        Trace trace = load_trace(arguments->path);
        TraceSummary summary = summarize(trace);
        if (arguments->json) {
            std::cout << to_json(trace, summary).dump(2) << "\n";
        } else {
            print_text(trace, summary);
        }
    });
}

} // namespace uvmp::tools

// `uvmtrace dump FILE [--json] [--limit N]`: every record, one a line, in the
// order the program produced them.
#include "commands.h"
#include "trace_file.h"

#include "core/trace/analysis/summary.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace uvmp::tools {
namespace {

using namespace uvmp::trace;

enum class EventType : uint8_t { Iteration, Slab, Alloc, Move, Free, CapturedLaunch, GraphLaunch, Launch };

// A record placed among the launches: everything recorded before launch k
// comes before it, and records between the same two launches go by time.
struct Event {
    uint64_t launches_before;
    uint64_t time_ns;
    EventType type;
    size_t index;
};

std::vector<Event> events_in_order(const Trace& trace) {
    std::vector<Event> events;
    events.reserve(trace.launches.size() + trace.allocs.size() + trace.frees.size() + trace.moves.size() +
                   trace.iterations.size() + trace.slabs.size() + trace.captured_launches.size() +
                   trace.graph_launches.size());
    for (size_t i = 0; i < trace.iterations.size(); ++i) {
        events.push_back({trace.iterations[i].launches_before, trace.iterations[i].time_ns, EventType::Iteration, i});
    }
    for (size_t i = 0; i < trace.slabs.size(); ++i) {
        events.push_back({trace.slabs[i].launches_before, trace.slabs[i].time_ns, EventType::Slab, i});
    }
    for (size_t i = 0; i < trace.allocs.size(); ++i) {
        events.push_back({trace.allocs[i].launches_before, trace.allocs[i].time_ns, EventType::Alloc, i});
    }
    for (size_t i = 0; i < trace.moves.size(); ++i) {
        events.push_back({trace.moves[i].launches_before, trace.moves[i].time_ns, EventType::Move, i});
    }
    for (size_t i = 0; i < trace.frees.size(); ++i) {
        events.push_back({trace.frees[i].launches_before, trace.frees[i].time_ns, EventType::Free, i});
    }
    for (size_t i = 0; i < trace.captured_launches.size(); ++i) {
        const CapturedLaunch& captured = trace.captured_launches[i];
        events.push_back({captured.launches_before, captured.time_ns, EventType::CapturedLaunch, i});
    }
    for (size_t i = 0; i < trace.graph_launches.size(); ++i) {
        const GraphLaunch& graph = trace.graph_launches[i];
        events.push_back({graph.launches_before, graph.time_ns, EventType::GraphLaunch, i});
    }
    auto before_launch = [](const Event& a, const Event& b) {
        if (a.launches_before != b.launches_before) return a.launches_before < b.launches_before;
        return a.time_ns < b.time_ns;
    };
    std::stable_sort(events.begin(), events.end(), before_launch);
    // Launches go after the records placed before them; merge rather than sort
    // them in, since they are already in order.
    std::vector<Event> merged;
    merged.reserve(events.size() + trace.launches.size());
    size_t next = 0;
    for (size_t i = 0; i < trace.launches.size(); ++i) {
        while (next < events.size() && events[next].launches_before <= i) merged.push_back(events[next++]);
        merged.push_back({i, trace.launches[i].time_ns, EventType::Launch, i});
    }
    while (next < events.size()) merged.push_back(events[next++]);
    return merged;
}

std::string kernel_name(const Trace& trace, uint32_t id) {
    if (id < trace.kernel_names.size() && !trace.kernel_names[id].empty()) return trace.kernel_names[id];
    return fmt::format("kernel#{}", id);
}

std::string accesses_text(std::span<const Access> accesses) {
    std::string text;
    for (const Access& access : accesses) {
        text += fmt::format("{}{}", text.empty() ? "" : " ", access.alloc_id);
        if (access.offset != 0 || access.length != 0) text += fmt::format("+{}:{}", access.offset, access.length);
    }
    return text;
}

nlohmann::ordered_json accesses_json(std::span<const Access> accesses) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const Access& access : accesses)
        list.push_back({{"id", access.alloc_id}, {"offset", access.offset}, {"length", access.length}});
    return list;
}

std::string graph_flags_text(uint8_t flags) {
    std::string text;
    if (flags & kGraphLaunchCaptured) text += " captured";
    if (flags & kGraphLaunchUnknown) text += " unknown";
    return text;
}

std::string text_line(const Trace& trace, const ReplayIndex& replays, const Event& event) {
    switch (event.type) {
    case EventType::Iteration: {
        const Iteration& mark = trace.iterations[event.index];
        return fmt::format("iteration {} t={} before={}", mark.index, mark.time_ns, mark.launches_before);
    }
    case EventType::Slab: {
        const Slab& slab = trace.slabs[event.index];
        return fmt::format("slab {} id={} base={:#x} size={} device={} t={} before={}", slab_action_name(slab.action),
                           slab.id, slab.base, slab.size, slab.device, slab.time_ns, slab.launches_before);
    }
    case EventType::Alloc: {
        const Alloc& alloc = trace.allocs[event.index];
        return fmt::format("alloc id={} size={} kind={} address={:#x} device={} t={} before={}{}", alloc.id, alloc.size,
                           alloc_kind_name(alloc.kind), alloc.address, alloc.device, alloc.time_ns,
                           alloc.launches_before,
                           alloc.kind == AllocKind::Pooled ? fmt::format(" slab={}", alloc.slab) : std::string());
    }
    case EventType::Free: {
        const Free& free = trace.frees[event.index];
        return fmt::format("free id={} t={} before={}", free.id, free.time_ns, free.launches_before);
    }
    case EventType::Move: {
        const Move& move = trace.moves[event.index];
        if (move.alloc_id == kNoAllocation)
            return fmt::format("move {} dead address={:#x} length={} t={} duration={} before={}",
                               move_kind_name(move.kind), move.offset, move.length, move.time_ns, move.duration_ns,
                               move.launches_before);
        return fmt::format("move {} id={} offset={} length={} t={} duration={} before={}", move_kind_name(move.kind),
                           move.alloc_id, move.offset, move.length, move.time_ns, move.duration_ns,
                           move.launches_before);
    }
    case EventType::CapturedLaunch: {
        const CapturedLaunch& captured = trace.captured_launches[event.index];
        return fmt::format("captured capture={} kernel={} grid={},{},{} block={},{},{} stream={:#x} t={} before={} "
                           "accesses=[{}]",
                           captured.capture_id, kernel_name(trace, captured.kernel_id), captured.grid[0],
                           captured.grid[1], captured.grid[2], captured.block[0], captured.block[1],
                           captured.block[2], captured.stream, captured.time_ns, captured.launches_before,
                           accesses_text(trace.accesses_of(captured)));
    }
    case EventType::GraphLaunch: {
        const GraphLaunch& graph = trace.graph_launches[event.index];
        return fmt::format("graph-launch graph={} stream={:#x} t={} before={} replayed={} skipped={}{}", graph.graph_id,
                           graph.stream, graph.time_ns, graph.launches_before, graph.replayed, graph.nodes_skipped,
                           graph_flags_text(graph.flags));
    }
    case EventType::Launch: {
        const Launch& launch = trace.launches[event.index];
        const GraphLaunch* graph = replays.graph_launch_of(launch.seq);
        return fmt::format("launch seq={} kernel={} grid={},{},{} block={},{},{} stream={:#x} t={} duration={} "
                           "accesses=[{}]{}",
                           launch.seq, kernel_name(trace, launch.kernel_id), launch.grid[0], launch.grid[1],
                           launch.grid[2], launch.block[0], launch.block[1], launch.block[2], launch.stream,
                           launch.time_ns, launch.duration_ns, accesses_text(trace.accesses_of(launch)),
                           graph ? fmt::format(" replay-of-graph={}", graph->graph_id) : std::string());
    }
    }
    return {};
}

nlohmann::ordered_json json_line(const Trace& trace, const ReplayIndex& replays, const Event& event) {
    switch (event.type) {
    case EventType::Iteration: {
        const Iteration& mark = trace.iterations[event.index];
        return {{"type", "iteration"}, {"index", mark.index}, {"time_ns", mark.time_ns},
                {"launches_before", mark.launches_before}};
    }
    case EventType::Slab: {
        const Slab& slab = trace.slabs[event.index];
        return {{"type", "slab"}, {"action", slab_action_name(slab.action)}, {"id", slab.id}, {"base", slab.base},
                {"size", slab.size}, {"device", slab.device}, {"time_ns", slab.time_ns},
                {"launches_before", slab.launches_before}};
    }
    case EventType::Alloc: {
        const Alloc& alloc = trace.allocs[event.index];
        nlohmann::ordered_json line = {{"type", "alloc"}, {"id", alloc.id}, {"size", alloc.size},
                                       {"kind", alloc_kind_name(alloc.kind)}, {"address", alloc.address},
                                       {"device", alloc.device}, {"time_ns", alloc.time_ns},
                                       {"launches_before", alloc.launches_before}};
        if (alloc.kind == AllocKind::Pooled) line["slab"] = alloc.slab;
        return line;
    }
    case EventType::Free: {
        const Free& free = trace.frees[event.index];
        return {{"type", "free"}, {"id", free.id}, {"time_ns", free.time_ns}, {"launches_before", free.launches_before}};
    }
    case EventType::Move: {
        const Move& move = trace.moves[event.index];
        return {{"type", "move"}, {"kind", move_kind_name(move.kind)}, {"id", move.alloc_id},
                {"offset", move.offset}, {"length", move.length}, {"time_ns", move.time_ns},
                {"duration_ns", move.duration_ns}, {"launches_before", move.launches_before}};
    }
    case EventType::CapturedLaunch: {
        const CapturedLaunch& captured = trace.captured_launches[event.index];
        return {{"type", "captured_launch"}, {"capture_id", captured.capture_id},
                {"kernel_id", captured.kernel_id}, {"kernel", kernel_name(trace, captured.kernel_id)},
                {"grid", {captured.grid[0], captured.grid[1], captured.grid[2]}},
                {"block", {captured.block[0], captured.block[1], captured.block[2]}}, {"stream", captured.stream},
                {"time_ns", captured.time_ns}, {"launches_before", captured.launches_before},
                {"accesses", accesses_json(trace.accesses_of(captured))}};
    }
    case EventType::GraphLaunch: {
        const GraphLaunch& graph = trace.graph_launches[event.index];
        return {{"type", "graph_launch"},
                {"graph_id", graph.graph_id},
                {"stream", graph.stream},
                {"time_ns", graph.time_ns},
                {"launches_before", graph.launches_before},
                {"replayed", graph.replayed},
                {"nodes_skipped", graph.nodes_skipped},
                {"captured", (graph.flags & kGraphLaunchCaptured) != 0},
                {"unknown", (graph.flags & kGraphLaunchUnknown) != 0}};
    }
    case EventType::Launch: {
        const Launch& launch = trace.launches[event.index];
        nlohmann::ordered_json line = {{"type", "launch"}, {"seq", launch.seq}, {"kernel_id", launch.kernel_id},
                                       {"kernel", kernel_name(trace, launch.kernel_id)},
                                       {"grid", {launch.grid[0], launch.grid[1], launch.grid[2]}},
                                       {"block", {launch.block[0], launch.block[1], launch.block[2]}},
                                       {"stream", launch.stream}, {"time_ns", launch.time_ns},
                                       {"duration_ns", launch.duration_ns},
                                       {"accesses", accesses_json(trace.accesses_of(launch))}};
        if (const GraphLaunch* graph = replays.graph_launch_of(launch.seq)) line["replay_of_graph"] = graph->graph_id;
        return line;
    }
    }
    return {};
}

struct DumpArguments {
    std::string path;
    bool json = false;
    uint64_t limit = std::numeric_limits<uint64_t>::max();
};

void dump(const DumpArguments& arguments) {
    Trace trace = load_trace(arguments.path);
    const Header& header = trace.header;
    if (arguments.json) {
        std::cout << nlohmann::ordered_json{{"type", "header"},
                                            {"format", fmt::format("{}.{}", header.format_major, header.format_minor)},
                                            {"library_version", header.library_version},
                                            {"device_name", header.device_name},
                                            {"device_total_bytes", header.device_total_bytes},
                                            {"driver_version", header.driver_version},
                                            {"chunk_bytes", header.chunk_bytes},
                                            {"budget_bytes", header.budget_bytes},
                                            {"start_time_ns", header.start_time_ns},
                                            {"pid", header.pid},
                                            {"rank", header.rank},
                                            {"options", header.options},
                                            {"kernel_names", trace.kernel_names},
                                            {"dropped_records", trace.dropped_records}}
                         .dump()
                  << "\n";
    } else {
        fmt::print("header format={}.{} library={} device=\"{}\" total={} driver={} chunk={} budget={} start={} "
                   "pid={} rank={} dropped={}\n",
                   header.format_major, header.format_minor, header.library_version, header.device_name,
                   header.device_total_bytes, header.driver_version, header.chunk_bytes, header.budget_bytes,
                   header.start_time_ns, header.pid, header.rank, trace.dropped_records);
        for (const auto& [key, value] : header.options) fmt::print("option {}={}\n", key, value);
        for (size_t id = 0; id < trace.kernel_names.size(); ++id) fmt::print("kernel {} {}\n", id, trace.kernel_names[id]);
    }
    uint64_t printed = 0;
    const ReplayIndex replays(trace);
    for (const Event& event : events_in_order(trace)) {
        if (printed++ == arguments.limit) break;
        if (arguments.json) {
            std::cout << json_line(trace, replays, event).dump() << "\n";
        } else {
            std::cout << text_line(trace, replays, event) << "\n";
        }
    }
    std::cout.flush();
}

} // namespace

void register_dump(CLI::App& app) {
    auto arguments = std::make_shared<DumpArguments>();
    CLI::App* command = app.add_subcommand("dump", "print every record of a trace, one a line");
    command->add_option("FILE", arguments->path, "trace file")->required();
    command->add_flag("--json", arguments->json, "one JSON object a line (header first)");
    command->add_option("--limit", arguments->limit, "print at most N records after the header")
        ->check(CLI::NonNegativeNumber);
    command->callback([arguments] { dump(*arguments); });
}

} // namespace uvmp::tools

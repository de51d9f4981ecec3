// `uvmtrace export FILE --format perfetto -o OUT.json`: the trace as Chrome
// trace-event JSON, which Perfetto (ui.perfetto.dev) and chrome://tracing open.
#include "commands.h"
#include "trace_file.h"

#include "core/trace/analysis/summary.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace uvmp::tools {
namespace {

using namespace uvmp::trace;
using Json = nlohmann::ordered_json;

// Launches recorded without timing are drawn this long so that they stay visible.
constexpr uint64_t kUnknownDurationNs = 1000;
// Track ids: streams take 1, 2, ... in order of first use; these follow none of them.
constexpr uint64_t kMovesTrack = 1'000'000;
constexpr uint64_t kIterationsTrack = 1'000'001;
constexpr uint64_t kSlabsTrack = 1'000'002;

double microseconds(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

// Writes the events array one event at a time, so a trace of millions of
// launches never exists as one JSON document in memory.
class EventStream {
public:
    EventStream(std::ostream& out, int pid) : out_(out), pid_(pid) { out_ << "{\"traceEvents\":[\n"; }

    void add(Json event) {
        event["pid"] = pid_;
        out_ << (first_ ? "" : ",\n") << event.dump();
        first_ = false;
    }

    void finish(const Json& metadata) {
        out_ << "\n],\"displayTimeUnit\":\"ns\",\"metadata\":" << metadata.dump() << "}\n";
    }

private:
    std::ostream& out_;
    int pid_;
    bool first_ = true;
};

void name_track(EventStream& events, uint64_t tid, const std::string& name, uint64_t sort_index) {
    events.add({{"ph", "M"}, {"name", "thread_name"}, {"tid", tid}, {"args", {{"name", name}}}});
    events.add({{"ph", "M"}, {"name", "thread_sort_index"}, {"tid", tid}, {"args", {{"sort_index", sort_index}}}});
}

std::string hex(uint64_t value) {
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
    return text;
}

void export_launches(const Trace& trace, EventStream& events) {
    std::unordered_map<uint64_t, uint64_t> track_of_stream;
    std::unordered_map<uint64_t, uint64_t> stream_busy_until;
    for (const Launch& launch : trace.launches) {
        auto [track, added] = track_of_stream.emplace(launch.stream, track_of_stream.size() + 1);
        if (added) name_track(events, track->second, "stream " + hex(launch.stream), track->second);
        // A kernel starts on the GPU no earlier than its launch call and no
        // earlier than the previous kernel of its stream has finished.
        uint64_t& busy_until = stream_busy_until[launch.stream];
        uint64_t start = std::max(launch.time_ns, busy_until);
        uint64_t duration = launch.duration_ns != 0 ? launch.duration_ns : kUnknownDurationNs;
        busy_until = start + duration;
        const std::string& name = launch.kernel_id < trace.kernel_names.size() &&
                                          !trace.kernel_names[launch.kernel_id].empty()
                                      ? trace.kernel_names[launch.kernel_id]
                                      : "kernel#" + std::to_string(launch.kernel_id);
        Json accesses = Json::array();
        for (const trace::Access& access : trace.accesses_of(launch)) accesses.push_back(access.alloc_id);
        events.add({{"ph", "X"},
                    {"cat", "kernel"},
                    {"name", name},
                    {"tid", track->second},
                    {"ts", microseconds(start)},
                    {"dur", microseconds(duration)},
                    {"args",
                     {{"seq", launch.seq},
                      {"launched_at_us", microseconds(launch.time_ns)},
                      {"duration_known", launch.duration_ns != 0},
                      {"grid", {launch.grid[0], launch.grid[1], launch.grid[2]}},
                      {"block", {launch.block[0], launch.block[1], launch.block[2]}},
                      {"allocations", accesses}}}});
    }
}

void export_live_bytes(const Trace& trace, EventStream& events) {
    struct Change {
        uint64_t time_ns;
        int64_t delta;
    };
    std::unordered_map<uint32_t, uint64_t> live_size;
    std::vector<Change> changes;
    for (const Alloc& alloc : trace.allocs) {
        live_size[alloc.id] = alloc.size;
        changes.push_back({alloc.time_ns, static_cast<int64_t>(alloc.size)});
    }
    for (const Free& free : trace.frees) {
        auto found = live_size.find(free.id);
        if (found == live_size.end()) continue;
        changes.push_back({free.time_ns, -static_cast<int64_t>(found->second)});
        live_size.erase(found);
    }
    std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) { return a.time_ns < b.time_ns; });
    int64_t live = 0;
    for (size_t i = 0; i < changes.size(); ++i) {
        live += changes[i].delta;
        // One counter sample per instant: the value after every change at that time.
        if (i + 1 < changes.size() && changes[i + 1].time_ns == changes[i].time_ns) continue;
        events.add({{"ph", "C"}, {"name", "live allocated bytes"}, {"ts", microseconds(changes[i].time_ns)},
                    {"args", {{"bytes", live}}}});
    }
}

void export_moves(const Trace& trace, EventStream& events) {
    if (trace.moves.empty()) return;
    name_track(events, kMovesTrack, "library moves", kMovesTrack);
    for (const Move& move : trace.moves) {
        events.add({{"ph", "X"},
                    {"cat", "move"},
                    {"name", move_kind_name(move.kind)},
                    {"tid", kMovesTrack},
                    {"ts", microseconds(move.time_ns)},
                    {"dur", microseconds(std::max<uint64_t>(move.duration_ns, 1))},
                    {"args", {{"allocation", move.alloc_id}, {"offset", move.offset}, {"bytes", move.length}}}});
    }
}

// The managed pool's slabs: one instant a change, and the bytes of slabs held.
void export_slabs(const Trace& trace, EventStream& events) {
    if (trace.slabs.empty()) return;
    name_track(events, kSlabsTrack, "pool slabs", kSlabsTrack);
    for (const SlabStep& step : slab_history(trace)) {
        const Slab& slab = *step.slab;
        events.add({{"ph", "i"}, {"s", "t"}, {"name", std::string("slab ") + slab_action_name(slab.action)},
                    {"tid", kSlabsTrack}, {"ts", microseconds(slab.time_ns)},
                    {"args", {{"slab", slab.id}, {"base", hex(slab.base)}, {"bytes", slab.size}, {"device", slab.device}}}});
        events.add({{"ph", "C"}, {"name", "pool slab bytes"}, {"ts", microseconds(slab.time_ns)},
                    {"args", {{"bytes", step.held_bytes}}}});
    }
}

void export_iterations(const Trace& trace, EventStream& events) {
    if (trace.iterations.empty()) return;
    name_track(events, kIterationsTrack, "iterations", kIterationsTrack);
    for (const Iteration& mark : trace.iterations) {
        events.add({{"ph", "i"}, {"s", "p"}, {"name", "iteration " + std::to_string(mark.index)},
                    {"tid", kIterationsTrack}, {"ts", microseconds(mark.time_ns)}});
    }
}

struct ExportArguments {
    std::string path;
    std::string format;
    std::string output;
};

void export_trace(const ExportArguments& arguments) {
    Trace trace = load_trace(arguments.path);
    std::ofstream out(arguments.output, std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write '" + arguments.output + "': " + std::strerror(errno));
    const Header& header = trace.header;
    EventStream events(out, header.pid);
    events.add({{"ph", "M"}, {"name", "process_name"}, {"tid", 0},
                {"args", {{"name", "pid " + std::to_string(header.pid) + " on " + header.device_name}}}});
    export_launches(trace, events);
    export_live_bytes(trace, events);
    export_moves(trace, events);
    export_slabs(trace, events);
    export_iterations(trace, events);
    events.finish({{"source", arguments.path},
                   {"format", std::to_string(header.format_major) + "." + std::to_string(header.format_minor)},
                   {"start_time_ns", header.start_time_ns},
                   {"dropped_records", trace.dropped_records}});
    out.flush();
    if (!out) throw std::runtime_error("cannot write '" + arguments.output + "': " + std::strerror(errno));
}

} // namespace

void register_export(CLI::App& app) {
    auto arguments = std::make_shared<ExportArguments>();
    CLI::App* command = app.add_subcommand("export", "convert a trace for a viewer (Perfetto / Chrome trace JSON)");
    command->add_option("FILE", arguments->path, "trace file")->required();
    command->add_option("--format", arguments->format, "output format")
        ->required()
        ->check(CLI::IsMember({"perfetto"}));
    command->add_option("-o,--output", arguments->output, "file to write (JSON)")->required();
    command->callback([arguments] { export_trace(*arguments); });
}

} // namespace uvmp::tools

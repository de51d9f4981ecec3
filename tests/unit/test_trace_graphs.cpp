// Format 1.2: launches captured into graphs and graph launches, in the trace and
// in what reads it (the summary, the simulator), and as a reader of 1.1 sees them.
#include "trace_fixtures.h"

#include "core/sim/simulator.h"
#include "core/trace/format/format.h"
#include "core/trace/format/reader.h"
#include "core/trace/analysis/summary.h"
#include "core/trace/format/writer.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace uvmp;
using namespace uvmp::trace;

namespace {

constexpr uint64_t kMiB = 1ull << 20;

// A training loop whose steps from the second on are launches of a graph
// captured during the first: the kernels of the first step are also recorded
// as captured, and each later step is a graph launch replaying them.
Trace graph_loop(uint32_t steps) {
    Trace t = fixtures::loop_trace(3, 64, steps, 100);
    t.kernel_names = {"k0", "k1", "k2"};
    for (uint32_t k = 0; k < 3; ++k) {
        CapturedLaunch captured;
        captured.capture_id = 5;
        captured.kernel_id = k;
        captured.grid[1] = 2; // a launch of 3-D shape among them
        captured.stream = 0x77;
        captured.time_ns = 10 + k;
        captured.launches_before = 3; // after the first step's launches
        captured.first_access = static_cast<uint32_t>(t.captured_accesses.size());
        captured.access_count = 1;
        t.captured_accesses.push_back({k, 4096, 0});
        t.captured_launches.push_back(captured);
    }
    for (uint32_t step = 1; step < steps; ++step) {
        GraphLaunch g;
        g.graph_id = 1;
        g.stream = 0x77;
        g.time_ns = 1000 * step;
        g.launches_before = 3 * step;
        g.replayed = 3;
        g.nodes_skipped = step == 1 ? 1 : 0;
        t.graph_launches.push_back(g);
    }
    GraphLaunch unknown;
    unknown.graph_id = 2;
    unknown.flags = kGraphLaunchUnknown;
    unknown.launches_before = t.launches.size();
    t.graph_launches.push_back(unknown);
    return t;
}

std::vector<std::byte> written(const Trace& t, const std::string& name) {
    const std::string path = fixtures::scratch_path(name);
    REQUIRE(write_trace_file(t, path) == 0);
    return fixtures::read_file(path);
}

// The file as a reader of 1.1 takes it in: records of the types it does not know left out.
std::vector<std::byte> without_records_of_1_2(const std::vector<std::byte>& bytes) {
    std::vector<std::byte> out(bytes.begin(), bytes.begin() + format::kPreambleBytes);
    size_t at = format::kPreambleBytes;
    while (at < bytes.size()) {
        const size_t start = at;
        const auto type = static_cast<format::RecordType>(bytes[at++]);
        uint64_t length = 0;
        for (unsigned shift = 0;; shift += 7) {
            const auto byte = static_cast<uint8_t>(bytes.at(at++));
            length |= uint64_t{byte & 0x7fu} << shift;
            if (byte < 0x80) break;
        }
        at += length;
        if (type != format::RecordType::CapturedLaunch && type != format::RecordType::GraphLaunch)
            out.insert(out.end(), bytes.begin() + static_cast<long>(start), bytes.begin() + static_cast<long>(at));
    }
    return out;
}

void check_same_launches(const Trace& a, const Trace& b) {
    REQUIRE(a.launches.size() == b.launches.size());
    for (size_t i = 0; i < a.launches.size(); ++i) {
        const Launch& x = a.launches[i];
        const Launch& y = b.launches[i];
        CHECK((x.seq == y.seq && x.kernel_id == y.kernel_id && x.stream == y.stream && x.time_ns == y.time_ns &&
               x.access_count == y.access_count));
    }
    CHECK(a.accesses.size() == b.accesses.size());
}

} // namespace

TEST_CASE("captured launches and graph launches read back field by field", "[trace_io][graph]") {
    const Trace original = graph_loop(4);
    const Trace read = read_trace_bytes(written(original, "graph_round_trip.uvmt"));
    CHECK(read.header.format_minor >= 2); // the version that added them, or a later one
    check_same_launches(read, original);
    REQUIRE(read.captured_launches.size() == original.captured_launches.size());
    for (size_t i = 0; i < read.captured_launches.size(); ++i) {
        const CapturedLaunch& a = read.captured_launches[i];
        const CapturedLaunch& b = original.captured_launches[i];
        CHECK((a.capture_id == b.capture_id && a.kernel_id == b.kernel_id && a.stream == b.stream &&
               a.time_ns == b.time_ns && a.launches_before == b.launches_before && a.access_count == 1));
        CHECK(std::equal(std::begin(a.grid), std::end(a.grid), std::begin(b.grid)));
        CHECK(std::equal(std::begin(a.block), std::end(a.block), std::begin(b.block)));
        const Access& access = read.accesses_of(a).front();
        CHECK((access.alloc_id == b.kernel_id && access.offset == 4096 && access.length == 0));
    }
    REQUIRE(read.graph_launches.size() == original.graph_launches.size());
    for (size_t i = 0; i < read.graph_launches.size(); ++i) {
        const GraphLaunch& a = read.graph_launches[i];
        const GraphLaunch& b = original.graph_launches[i];
        CHECK((a.graph_id == b.graph_id && a.flags == b.flags && a.stream == b.stream && a.time_ns == b.time_ns &&
               a.launches_before == b.launches_before && a.replayed == b.replayed &&
               a.nodes_skipped == b.nodes_skipped));
    }
    // The kernels named only by captured launches keep their names.
    CHECK(read.kernel_names == original.kernel_names);
}

TEST_CASE("a reader of 1.1 sees a 1.2 trace's replays as the launches that ran, and no capture", "[trace_io][graph]") {
    const Trace original = graph_loop(4);
    const std::vector<std::byte> bytes = written(original, "graph_for_old_reader.uvmt");
    const Trace as_old = read_trace_bytes(without_records_of_1_2(bytes));
    check_same_launches(as_old, original);
    CHECK(as_old.captured_launches.empty());
    CHECK(as_old.graph_launches.empty());
    // Captured launches are encoded whole: taking them out disturbs no other record.
    CHECK(as_old.iterations.size() == original.iterations.size());
}

TEST_CASE("the summary counts graph launches and captures, and finds the graph launch of each replay", "[graph]") {
    const Trace t = graph_loop(4);
    const TraceSummary summary = summarize(t);
    CHECK(summary.graphs.any());
    CHECK(summary.graphs.graphs == 2);
    CHECK(summary.graphs.graph_launches == 4);
    CHECK(summary.graphs.replayed_launches == 9);
    CHECK(summary.graphs.unknown_launches == 1);
    CHECK(summary.graphs.captured_graph_launches == 0);
    CHECK(summary.graphs.captured_launches == 3);
    CHECK(summary.launches == 12);
    CHECK_FALSE(summarize(fixtures::loop_trace(3, 64, 4)).graphs.any());

    const ReplayIndex index(t);
    CHECK(index.graph_launch_of(0) == nullptr);
    CHECK(index.graph_launch_of(2) == nullptr);
    CHECK(index.graph_launch_of(3) == &t.graph_launches[0]);
    CHECK(index.graph_launch_of(5) == &t.graph_launches[0]);
    CHECK(index.graph_launch_of(6) == &t.graph_launches[1]);
    CHECK(index.graph_launch_of(11) == &t.graph_launches[2]);
    CHECK(index.graph_launch_of(12) == nullptr);
}

TEST_CASE("simulate: captured launches are not run, graph replays run once", "[simulator][graph]") {
    const Trace plain = fixtures::loop_trace(3, 64, 4, 100);
    const Trace with_graphs = graph_loop(4);
    for (PolicyKind policy : {PolicyKind::DemandLru, PolicyKind::Learned, PolicyKind::Belady}) {
        SimConfig config;
        config.budget_bytes = 128 * kMiB;
        config.policy = policy;
        const SimResult a = simulate(plain, config);
        const SimResult b = simulate(with_graphs, config);
        INFO(a.policy);
        CHECK(a.launches == b.launches);
        CHECK(a.prefetched_bytes == b.prefetched_bytes);
        CHECK(a.evicted_bytes == b.evicted_bytes);
        CHECK(a.demand_bytes == b.demand_bytes);
        CHECK(a.total_seconds == b.total_seconds);
    }
}

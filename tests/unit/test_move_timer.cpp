#include "driver/rates/move_timer.h"

#include <catch2/catch.hpp>

#include <map>
#include <vector>

// A driver table of the event calls: each event is a number; an event is done
// once the test says so, and a pair's time is what the test sets for its end.
using namespace uvmp::driver;
using uvmp::rates::Move;

namespace {

struct Script {
    int made = 0;
    std::map<uintptr_t, bool> live;       // event -> recorded
    std::map<uintptr_t, bool> done;       // event -> complete
    std::map<uintptr_t, float> end_ms;    // end event -> milliseconds since its start
    CUresult elapsed_result = CUDA_SUCCESS;
};
Script g;

uintptr_t id(CUevent e) { return reinterpret_cast<uintptr_t>(e); }

CUresult create(CUevent* event, unsigned int) {
    *event = reinterpret_cast<CUevent>(static_cast<uintptr_t>(++g.made));
    g.live[static_cast<uintptr_t>(g.made)] = false;
    return CUDA_SUCCESS;
}
CUresult record(CUevent event, CUstream) {
    g.live[id(event)] = true;
    return CUDA_SUCCESS;
}
CUresult query(CUevent event) { return g.done[id(event)] ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY; }
CUresult elapsed(float* ms, CUevent, CUevent end) {
    if (g.elapsed_result != CUDA_SUCCESS) return g.elapsed_result;
    *ms = g.end_ms[id(end)];
    return CUDA_SUCCESS;
}
CUresult destroy(CUevent event) {
    g.live.erase(id(event));
    return CUDA_SUCCESS;
}

DriverTable event_table() {
    g = Script{};
    DriverTable table;
    table.cuEventCreate = create;
    table.cuEventRecord = record;
    table.cuEventQuery = query;
    table.cuEventElapsedTime_v2 = elapsed;
    table.cuEventDestroy_v2 = destroy;
    return table;
}

struct Report {
    int device;
    Move move;
    uint64_t bytes;
    double seconds;
};

constexpr uint64_t kMiB = 1ull << 20;
CUstream const kStream = reinterpret_cast<CUstream>(0x10);

} // namespace

TEST_CASE("move timer: a large move is timed on the GPU and reported once done", "[rates]") {
    const DriverTable table = event_table();
    std::vector<Report> reports;
    MoveTimer timer(32 * kMiB, [&](int device, Move move, uint64_t bytes, double seconds) {
        reports.push_back({device, move, bytes, seconds});
    });
    // Too small to say anything of the link: no events.
    CHECK_FALSE(timer.begin(table, kStream, 16 * kMiB));
    CHECK(g.made == 0);

    auto started = timer.begin(table, kStream, 64 * kMiB);
    REQUIRE(started);
    timer.finish(table, kStream, *started, true, 1, Move::Evict, 64 * kMiB);
    CHECK(timer.pending() == 1);
    g.end_ms[id(started->end)] = 5.0f;

    // Not done yet: never waited for.
    timer.poll(table);
    CHECK(reports.empty());
    CHECK(timer.pending() == 1);

    g.done[id(started->end)] = true;
    timer.poll(table);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].device == 1);
    CHECK(reports[0].move == Move::Evict);
    CHECK(reports[0].bytes == 64 * kMiB);
    CHECK(reports[0].seconds == Approx(0.005));
    CHECK(timer.pending() == 0);
    CHECK(g.live.empty()); // both events destroyed
}

TEST_CASE("move timer: a failed move drops its pair, and a driver that cannot time stops the timing",
          "[rates]") {
    const DriverTable table = event_table();
    int reported = 0;
    MoveTimer timer(32 * kMiB, [&](int, Move, uint64_t, double) { ++reported; });
    auto failed = timer.begin(table, kStream, 64 * kMiB);
    REQUIRE(failed);
    timer.finish(table, kStream, *failed, false, 0, Move::Fetch, 64 * kMiB);
    CHECK(timer.pending() == 0);
    CHECK(g.live.empty());

    g.elapsed_result = CUDA_ERROR_NOT_SUPPORTED;
    auto untimed = timer.begin(table, kStream, 64 * kMiB);
    REQUIRE(untimed);
    timer.finish(table, kStream, *untimed, true, 0, Move::Fetch, 64 * kMiB);
    g.done[id(untimed->end)] = true;
    timer.poll(table);
    CHECK(reported == 0);
    CHECK(g.live.empty());
    CHECK_FALSE(timer.begin(table, kStream, 64 * kMiB));
}

TEST_CASE("move timer: pairs wait in order, and past the limit a move goes untimed", "[rates]") {
    const DriverTable table = event_table();
    std::vector<double> seconds;
    MoveTimer timer(1, [&](int, Move, uint64_t, double s) { seconds.push_back(s); });
    std::vector<MoveTimer::Started> pairs;
    while (auto started = timer.begin(table, kStream, kMiB)) {
        timer.finish(table, kStream, *started, true, 0, Move::Fetch, kMiB);
        pairs.push_back(*started);
        REQUIRE(pairs.size() <= 64);
    }
    CHECK(pairs.size() == timer.pending());
    CHECK(timer.pending() > 1);
    // The second done but not the first: nothing read yet.
    g.done[id(pairs[1].end)] = true;
    timer.poll(table);
    CHECK(seconds.empty());
    g.done[id(pairs[0].end)] = true;
    g.end_ms[id(pairs[0].end)] = 1.0f;
    g.end_ms[id(pairs[1].end)] = 2.0f;
    timer.poll(table);
    CHECK(seconds == std::vector<double>{0.001, 0.002});
    CHECK(timer.pending() == pairs.size() - 2);
}

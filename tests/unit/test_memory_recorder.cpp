#include "core/sim/simulator.h"
#include "core/trace/analysis/fastest_durations.h"
#include "core/trace/recording/memory_recorder.h"

#include "trace_fixtures.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace uvmp;
using namespace uvmp::trace;

namespace {
constexpr uint64_t kMiB = 1ull << 20;

Launch launch_numbered(uint64_t seq, uint32_t kernel) {
    Launch l;
    l.seq = seq;
    l.kernel_id = kernel;
    return l;
}

Alloc pooled(uint32_t id, uint64_t size, uint64_t launches_before) {
    Alloc a;
    a.id = id;
    a.size = size;
    a.kind = AllocKind::Pooled;
    a.launches_before = launches_before;
    return a;
}
} // namespace

TEST_CASE("memory recorder: begun mid-run, its snapshot numbers launches from its own first", "[trace]") {
    MemoryRecorder recorder(Header{}, 1000);
    // Live when recording began, at launch number 100.
    recorder.alloc(pooled(1, 4 * kMiB, 100));
    const Access a1{1, 0, 0};
    // Threads record launches out of the order of their numbers.
    recorder.launch(launch_numbered(101, 7), std::span(&a1, 1));
    recorder.kernel_duration(100, 5'000); // before its launch record
    recorder.launch(launch_numbered(100, 7), std::span(&a1, 1));
    recorder.alloc(pooled(2, 2 * kMiB, 102));
    recorder.launch(launch_numbered(102, 8), {});
    recorder.kernel_duration(102, 9'000);
    recorder.free(Free{2, 0, 103});
    recorder.iteration(Iteration{0, 101, 0});
    CHECK(recorder.launches() == 3);
    CHECK(recorder.managed_allocs() == 2);

    const Trace t = recorder.snapshot();
    REQUIRE(t.launches.size() == 3);
    CHECK(t.launches[0].seq == 0);
    CHECK(t.launches[0].duration_ns == 5'000);
    CHECK(t.launches[1].duration_ns == 0);
    CHECK(t.launches[2].duration_ns == 9'000);
    CHECK(t.launches[2].kernel_id == 8);
    CHECK(t.accesses_of(t.launches[0]).size() == 1);
    CHECK(t.accesses_of(t.launches[2]).empty());
    REQUIRE(t.allocs.size() == 2);
    CHECK(t.allocs[0].launches_before == 0);
    CHECK(t.allocs[1].launches_before == 2);
    CHECK(t.frees[0].launches_before == 3);
    CHECK(t.iterations[0].launches_before == 1);
    // Kernels first seen before recording have ids but no names.
    CHECK(t.kernel_names.size() == 9);

    recorder.close();
    recorder.launch(launch_numbered(103, 7), {});
    CHECK(recorder.launches() == 0);
    CHECK(recorder.snapshot().launches.empty());
}

TEST_CASE("memory recorder: past its launches it keeps nothing more and counts what it drops", "[trace]") {
    MemoryRecorder recorder(Header{}, 2);
    for (uint64_t seq = 0; seq < 4; ++seq) recorder.launch(launch_numbered(seq, 1), {});
    recorder.alloc(pooled(1, kMiB, 4));
    CHECK(recorder.launches() == 2);
    CHECK(recorder.records_dropped() == 3);
    CHECK(recorder.managed_allocs() == 0);
}

TEST_CASE("recording iteration bounds: steps of repeated layers, not a layer, and only once two are whole",
          "[trace]") {
    // A step: 24 layers of the same 60 kernels, then an optimizer of 100.
    // Recording begins 500 launches into a step.
    MemoryRecorder recorder(Header{}, 1 << 16);
    uint64_t seq = 0;
    std::vector<uint64_t> bounds;
    std::vector<uint64_t> taken_at; // recording sizes at which steps were first found
    for (int step = 0; step < 5; ++step) {
        for (int layer = 0; layer < 24; ++layer)
            for (uint32_t k = 0; k < 60; ++k, ++seq)
                if (seq >= 500) recorder.launch(launch_numbered(seq, k), {});
        for (uint32_t k = 0; k < 100; ++k, ++seq) recorder.launch(launch_numbered(seq, 100 + k), {});
        const Trace t = recorder.snapshot();
        const std::vector<uint64_t> b = recording_iteration_bounds(t);
        if (b.empty()) continue;
        if (taken_at.empty()) bounds = b;
        taken_at.push_back(t.launches.size());
        CHECK(b[1] - b[0] == 1540);
    }
    // By kernel alone, a recording of a step or two repeats its layers best.
    REQUIRE_FALSE(taken_at.empty());
    CHECK(taken_at.front() >= kMinRecordingLaunches);
    REQUIRE(bounds.size() >= 3);
    CHECK(bounds[0] < 1540);

    // Inside the layers only: a period that explains nothing beyond them.
    MemoryRecorder layers(Header{}, 1 << 16);
    for (uint64_t n = 0; n < 5000; ++n) layers.launch(launch_numbered(n, n % 60 == 0 ? 999 : n % 60), {});
    Trace only_layers = layers.snapshot();
    for (uint32_t k = 0; k < 3000; ++k) {
        Launch l = launch_numbered(5000 + k, 500 + k % 977);
        only_layers.launches.push_back(l);
    }
    CHECK(iteration_bounds(only_layers).size() >= 3);
    CHECK(recording_iteration_bounds(only_layers).empty());
}

TEST_CASE("step call times: launch call to launch call, the median full step with an end to time", "[trace]") {
    Trace t;
    // Steps of 3 launches; the calls of the second step are slower.
    const uint64_t call_ns[] = {0, 10, 20, 100, 150, 200, 260, 270, 280, 300};
    for (uint64_t n = 0; n < 10; ++n) {
        Launch l = launch_numbered(n, static_cast<uint32_t>(n % 3));
        l.time_ns = call_ns[n];
        t.launches.push_back(l);
    }
    CHECK(step_call_ns(t, {0, 3}) == 100);
    CHECK(step_call_ns(t, {3, 6}) == 160);
    CHECK(step_call_ns(t, {6, 10}) == 0); // ends with the recording: no call to time it to
    CHECK(step_call_ns(t, {3, 3}) == 0);
    // Steps of 100, 160 and 40 ns: the middle one, not the fastest.
    const std::vector<uint64_t> bounds{0, 3, 6, 9};
    CHECK(typical_step_call_ns(t, bounds) == 100);
    // Two timed steps (100 and 160): their mean; the last has no end to time.
    const std::vector<uint64_t> two_timed{0, 3, 6, 10};
    CHECK(typical_step_call_ns(t, two_timed) == 130);
    const std::vector<uint64_t> first_two{3, 6, 10};
    CHECK(typical_step_call_ns(t, first_two) == 160);
    const std::vector<uint64_t> untimed{6, 10};
    CHECK_FALSE(typical_step_call_ns(t, untimed).has_value());
    // A clock that did not advance times nothing.
    t.launches[6].time_ns = 300;
    CHECK(step_call_ns(t, {6, 9}) == 0);
}

TEST_CASE("fastest durations: each launch takes the least of its kind, other shapes and sizes are other kinds",
          "[trace]") {
    using fixtures::add_alloc;
    using fixtures::add_launch_naming;
    Trace t;
    add_alloc(t, 1, 64 * kMiB, 0, AllocKind::Pooled);
    add_alloc(t, 2, 64 * kMiB, 0, AllocKind::Pooled);
    add_alloc(t, 3, 128 * kMiB, 0, AllocKind::Pooled);
    add_launch_naming(t, 5, {1}, 90'000); // waited for its data
    add_launch_naming(t, 5, {2}, 10'000);
    add_launch_naming(t, 5, {3}, 40'000); // twice the bytes: another kind
    add_launch_naming(t, 5, {1}, 0);      // not timed
    add_launch_naming(t, 6, {1}, 70'000); // alone of its kind
    add_launch_naming(t, 5, {2}, 30'000);
    t.launches.back().grid[0] = 2; // another grid
    CHECK(use_fastest_durations(t) == 2);
    CHECK(t.launches[0].duration_ns == 10'000);
    CHECK(t.launches[1].duration_ns == 10'000);
    CHECK(t.launches[2].duration_ns == 40'000);
    CHECK(t.launches[3].duration_ns == 10'000);
    CHECK(t.launches[4].duration_ns == 70'000);
    CHECK(t.launches[5].duration_ns == 30'000);
}

TEST_CASE("fastest durations: a kind timed once without waiting takes the least of all its launches, a kind with "
          "no such launch is timed less its waits, no faster than memory allows",
          "[trace]") {
    using fixtures::add_alloc;
    using fixtures::add_launch_naming;
    Trace t;
    add_alloc(t, 1, 1000 * kMiB, 0, AllocKind::Pooled);
    add_alloc(t, 2, 64 * kMiB, 0, AllocKind::Pooled);
    add_launch_naming(t, 5, {2}, 8'000);      // 0: waited, yet faster than its kind's unwaited launch: that one stalled
    add_launch_naming(t, 5, {2}, 20'000);     // 1: waited for nothing
    add_launch_naming(t, 5, {2}, 50'000);     // 2: waited
    add_launch_naming(t, 7, {1}, 42'000'000); // 3: a softmax launched once a step, waited each time
    add_launch_naming(t, 7, {1}, 40'000'000); // 4
    add_launch_naming(t, 8, {1}, 30'000'000); // 5: a kernel slow of its own, that waited a little
    add_launch_naming(t, 8, {2}, 900'000);    // 6: the same kernel on other bytes, waiting for nothing
    add_launch_naming(t, 3, {2}, 60'000);     // 7: a kernel whose every launch waited
    for (uint64_t i = 0; i < t.launches.size(); ++i) t.launches[i].seq = i;
    const LaunchWaits waits{{0, 5'000}, {2, 45'000}, {3, 67'000'000}, {4, 39'000'000}, {5, 2'000'000}, {7, 10'000}};
    // 1000 MiB at 4.8 TB/s take 218 us.
    const CleanedDurations cleaned = use_fastest_durations(t, waits, 4800);
    CHECK(cleaned.waited_launches == 6);
    CHECK(cleaned.kinds_from_waits == 3);
    // The least of the kind's launches, the one that waited included: not 50 us less its wait.
    CHECK(t.launches[0].duration_ns == 8'000);
    CHECK(t.launches[1].duration_ns == 8'000);
    CHECK(t.launches[2].duration_ns == 8'000);
    // Less than the wait: no faster than its bytes at the memory's bandwidth.
    CHECK(t.launches[3].duration_ns == 218'454);
    CHECK(t.launches[4].duration_ns == 218'454);
    CHECK(t.launches[5].duration_ns == 28'000'000);
    CHECK(t.launches[6].duration_ns == 900'000);
    CHECK(t.launches[7].duration_ns == 50'000);
    CHECK(cleaned.shortened == 6);
    CHECK(cleaned.kernels_from_waits == std::vector<uint32_t>{7, 8, 3}); // by the most time taken off
    // Kernel 8 was timed once without waiting; 7 and 3 never were. Ascending.
    CHECK(cleaned.kernels_untimed == std::vector<uint32_t>{3, 7});
    // The kinds timed only on waits, that of kernel 8 included.
    std::vector<uint32_t> kind_kernels;
    for (const LaunchKind& kind : cleaned.kinds_untimed) kind_kernels.push_back(kind.kernel);
    std::sort(kind_kernels.begin(), kind_kernels.end());
    CHECK(kind_kernels == std::vector<uint32_t>{3, 7, 8});

    // Without waits, the least of each kind as before.
    Trace plain = t;
    plain.launches[2].duration_ns = 50'000;
    const CleanedDurations unwaited = use_fastest_durations(plain, {}, 4800);
    CHECK(unwaited.kinds_from_waits == 0);
    CHECK(unwaited.kernels_untimed.empty());
    CHECK(unwaited.kinds_untimed.empty());
    CHECK(plain.launches[2].duration_ns == 8'000);
}

TEST_CASE("memory recorder: batches and kernel starts come back by the snapshot's positions, and go with close",
          "[trace]") {
    MemoryRecorder recorder(Header{}, 100);
    recorder.launch(launch_numbered(51, 1), {});
    recorder.launch(launch_numbered(50, 1), {});
    recorder.launch(launch_numbered(53, 1), {});
    recorder.launch_batch(50, LaunchBatch{.prefetch_bytes = 4096});
    // Needs the prefetch of launch 50, and the populate of one never recorded.
    recorder.launch_batch(53, LaunchBatch{.demand_bytes = 8, .needs_prefetch_of = 50, .needs_populate_of = 52});
    recorder.kernel_start(51, 700);
    MoverRecord mover;
    mover.kernel_starts[9] = 9;
    const Trace t = recorder.snapshot(&mover);
    REQUIRE(t.launches.size() == 3);
    CHECK(mover.kernel_starts == std::unordered_map<uint64_t, uint64_t>{{1, 700}});
    REQUIRE(mover.batches.size() == 2);
    CHECK(mover.batches[0].first == 0);
    CHECK(mover.batches[0].second.prefetch_bytes == 4096);
    CHECK(mover.batches[1].first == 2);
    CHECK(mover.batches[1].second.demand_bytes == 8);
    CHECK(mover.batches[1].second.needs_prefetch_of == std::optional<uint64_t>{0});
    CHECK_FALSE(mover.batches[1].second.needs_populate_of);
    recorder.close();
    recorder.launch_batch(50, LaunchBatch{});
    recorder.kernel_start(50, 5);
    recorder.snapshot(&mover);
    CHECK(mover.batches.empty());
    CHECK(mover.kernel_starts.empty());
}

TEST_CASE("memory recorder: an allocation given twice is kept once, a free of one never given is left out",
          "[trace]") {
    MemoryRecorder recorder(Header{}, 100);
    recorder.alloc(pooled(5, kMiB, 0));
    recorder.alloc(pooled(5, kMiB, 0)); // live as recording began, and its own record
    recorder.free(Free{4, 0, 0});       // made before recording began, not among the live
    recorder.free(Free{5, 0, 0});
    const Trace t = recorder.snapshot();
    CHECK(t.allocs.size() == 1);
    CHECK(recorder.managed_allocs() == 1);
    REQUIRE(t.frees.size() == 1);
    CHECK(t.frees[0].id == 5);
}

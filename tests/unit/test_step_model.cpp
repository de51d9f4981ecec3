#include "core/placement/step_model.h"

#include <catch2/catch.hpp>

#include <stdexcept>

using namespace uvmp;
using namespace uvmp::placement;

namespace {
constexpr uint64_t kMiB = 1ull << 20;

void add_alloc(trace::Trace& t, uint32_t id, uint64_t size, uint64_t launches_before,
               trace::AllocKind kind = trace::AllocKind::Converted) {
    trace::Alloc a;
    a.id = id;
    a.size = size;
    a.kind = kind;
    a.launches_before = launches_before;
    t.allocs.push_back(a);
}

void add_free(trace::Trace& t, uint32_t id, uint64_t launches_before) {
    trace::Free f;
    f.id = id;
    f.launches_before = launches_before;
    t.frees.push_back(f);
}

void add_launch(trace::Trace& t, uint32_t kernel, std::initializer_list<uint32_t> alloc_ids) {
    trace::Launch l;
    l.seq = t.launches.size();
    l.kernel_id = kernel;
    l.first_access = static_cast<uint32_t>(t.accesses.size());
    l.access_count = static_cast<uint32_t>(alloc_ids.size());
    for (uint32_t id : alloc_ids) t.accesses.push_back({id, 0, 0});
    t.launches.push_back(l);
}

// Weights (1) made before everything; an activation (2) made before launch 2 of
// each step and freed before launch 4; pinned host memory (3) never counts.
trace::Trace two_steps() {
    trace::Trace t;
    add_alloc(t, 1, 64 * kMiB, 0);
    add_alloc(t, 3, 8 * kMiB, 0, trace::AllocKind::Host);
    for (uint32_t step = 0; step < 2; ++step) {
        const uint64_t base = t.launches.size();
        const uint32_t activation = 2 + 10 * step;
        add_launch(t, 0, {1});
        add_launch(t, 0, {1});
        add_alloc(t, activation, 16 * kMiB, base + 2);
        add_launch(t, 1, {1, activation}); // a GEMM-like kernel: weights first, activation second
        add_launch(t, 2, {activation});    // a streaming kernel
        add_free(t, activation, base + 4);
        add_launch(t, 0, {1});
    }
    return t;
}
} // namespace

TEST_CASE("step model: live intervals, order and uses of a step's allocations", "[placement]") {
    const trace::Trace t = two_steps();
    const StepModel m = step_model(t, 5, 10);
    REQUIRE(m.launches == 5);
    REQUIRE(m.alloc_ids == std::vector<uint32_t>{1, 12});
    CHECK(m.allocations[0].bytes == 64 * kMiB);
    CHECK(m.allocations[0].first_launch == 0);
    CHECK(m.allocations[0].last_launch == 4);
    CHECK(m.allocations[0].uses == 4);
    CHECK(m.allocations[1].first_launch == 2);
    CHECK(m.allocations[1].last_launch == 3);
    CHECK(m.allocations[1].uses == 2);
    // Without kernel timings nothing is known to tolerate remote data.
    CHECK_FALSE(m.allocations[0].remote_tolerant);
    CHECK_FALSE(m.allocations[1].remote_tolerant);
}

TEST_CASE("step model: tolerance is every naming launch's verdict", "[placement]") {
    const trace::Trace t = two_steps();
    RemoteTolerance tolerance;
    for (int i = 0; i < 3; ++i) {
        tolerance.record(1, 1, false, 1000, 16 * kMiB); // kernel 1 reads the activation at slot 1
        tolerance.record(1, 1, true, 1100, 16 * kMiB);
        tolerance.record(2, 0, false, 1000, 16 * kMiB);
        tolerance.record(2, 0, true, 1200, 16 * kMiB);
    }
    CHECK(step_model(t, 5, 10, &tolerance).allocations[1].remote_tolerant);
    // Kernel 2 re-reads it: one intolerant reader keeps it off the host.
    for (int i = 0; i < 8; ++i) tolerance.record(2, 0, true, 90'000'000, 16 * kMiB);
    const StepModel m = step_model(t, 5, 10, &tolerance);
    CHECK_FALSE(m.allocations[1].remote_tolerant);
    // The weights' readers (kernel 0, kernel 1 at slot 0) have no verdict.
    CHECK_FALSE(m.allocations[0].remote_tolerant);
}

TEST_CASE("step model: the first step's allocation made and freed inside it; a step outside is refused", "[placement]") {
    const trace::Trace t = two_steps();
    const StepModel first = step_model(t, 0, 5);
    REQUIRE(first.alloc_ids == std::vector<uint32_t>{1, 2});
    CHECK(first.allocations[1].first_launch == 2);
    CHECK(first.allocations[1].last_launch == 3);
    CHECK_THROWS_AS(step_model(t, 5, 11), std::invalid_argument);
    CHECK(step_model(t, 3, 3).allocations.empty());
}

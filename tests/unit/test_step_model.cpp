#include "core/placement/step_model.h"

#include "trace_fixtures.h"

#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>
#include <utility>

using namespace uvmp;
using namespace uvmp::placement;
using uvmp::trace::fixtures::add_alloc;
using uvmp::trace::fixtures::add_free;
using uvmp::trace::fixtures::add_launch_naming;

namespace {
constexpr uint64_t kMiB = 1ull << 20;

// Verdicts set by the test, by kernel and slot; Unknown for the rest.
struct FixedTolerance final : ToleranceSource {
    std::map<std::pair<uint32_t, uint32_t>, Tolerance> verdicts;
    Tolerance verdict(uint32_t kernel_id, uint32_t slot) const override {
        const auto it = verdicts.find({kernel_id, slot});
        return it == verdicts.end() ? Tolerance::Unknown : it->second;
    }
};

// Weights (1) made before everything; an activation (2) made before launch 2 of
// each step and freed before launch 4; pinned host memory (3) never counts.
trace::Trace two_steps() {
    trace::Trace t;
    add_alloc(t, 1, 64 * kMiB, 0);
    add_alloc(t, 3, 8 * kMiB, 0, trace::AllocKind::Host);
    for (uint32_t step = 0; step < 2; ++step) {
        const uint64_t base = t.launches.size();
        const uint32_t activation = 2 + 10 * step;
        add_launch_naming(t, 0, {1});
        add_launch_naming(t, 0, {1});
        add_alloc(t, activation, 16 * kMiB, base + 2);
        add_launch_naming(t, 1, {1, activation}); // a GEMM-like kernel: weights first, activation second
        add_launch_naming(t, 2, {activation});    // a streaming kernel
        add_free(t, activation, base + 4);
        add_launch_naming(t, 0, {1});
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
    FixedTolerance tolerance;
    tolerance.verdicts[{1, 1}] = Tolerance::Tolerant; // kernel 1 reads the activation at slot 1
    tolerance.verdicts[{2, 0}] = Tolerance::Tolerant;
    CHECK(step_model(t, 5, 10, &tolerance).allocations[1].remote_tolerant);
    // Kernel 2 re-reads it: one intolerant reader keeps it off the host.
    tolerance.verdicts[{2, 0}] = Tolerance::Intolerant;
    const StepModel m = step_model(t, 5, 10, &tolerance);
    CHECK_FALSE(m.allocations[1].remote_tolerant);
    // The weights' readers (kernel 0, kernel 1 at slot 0) have no verdict.
    CHECK_FALSE(m.allocations[0].remote_tolerant);
    // What keeps each on the GPU: the first reader not judged tolerant.
    CHECK(m.kept_by == std::vector<uint32_t>{0, 2});
    tolerance.verdicts[{2, 0}] = Tolerance::Tolerant;
    CHECK(step_model(t, 5, 10, &tolerance).kept_by == std::vector<uint32_t>{0, StepModel::kNoKernel});
}

TEST_CASE("step model: the first step's allocation made and freed inside it, a step outside is refused", "[placement]") {
    const trace::Trace t = two_steps();
    const StepModel first = step_model(t, 0, 5);
    REQUIRE(first.alloc_ids == std::vector<uint32_t>{1, 2});
    CHECK(first.allocations[1].first_launch == 2);
    CHECK(first.allocations[1].last_launch == 3);
    CHECK_THROWS_AS(step_model(t, 5, 11), std::invalid_argument);
    CHECK(step_model(t, 3, 3).allocations.empty());
}

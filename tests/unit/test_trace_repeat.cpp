#include "core/trace/access_extents.h"
#include "core/sim/simulator.h"
#include "core/trace/repeat.h"
#include "trace_fixtures.h"

#include <catch2/catch.hpp>

#include <stdexcept>

using namespace uvmp;
using trace::fixtures::add_launch;
using trace::fixtures::loop_trace;

TEST_CASE("trace repeat: the last iteration is appended with its accesses and marks", "[repeat]") {
    auto t = loop_trace(3, 8, 2); // 3 launches an iteration, marked
    const auto bounds = iteration_bounds(t);
    REQUIRE(bounds.size() == 3);
    const size_t accesses = t.accesses.size();
    const auto lengthened = repeat_last_iteration(t, bounds, 4);
    REQUIRE(t.launches.size() == 6 * 3);
    CHECK(t.accesses.size() == accesses); // the copies name the original's
    CHECK(t.iterations.size() == 6);
    CHECK(t.iterations.back().launches_before == 15);
    for (uint64_t i = 6; i < t.launches.size(); ++i) {
        const trace::Launch& copy = t.launches[i];
        const trace::Launch& original = t.launches[3 + i % 3];
        CHECK(copy.seq == i);
        CHECK(copy.kernel_id == original.kernel_id);
        CHECK(copy.duration_ns == original.duration_ns);
        REQUIRE(copy.access_count == original.access_count);
        CHECK(copy.first_access == original.first_access);
    }
    CHECK(lengthened == std::vector<uint64_t>{0, 3, 6, 9, 12, 15, 18});
    CHECK(iteration_bounds(t) == lengthened);
}

TEST_CASE("trace repeat: the bounds returned for a trace without marks are those detected again", "[repeat]") {
    auto t = loop_trace(5, 8, 6);
    t.iterations.clear();
    const auto bounds = iteration_bounds(t);
    REQUIRE(bounds.size() >= 3);
    const auto lengthened = repeat_last_iteration(t, bounds, 7);
    CHECK(lengthened.back() == t.launches.size());
    CHECK(lengthened.size() == bounds.size() + 7);
    CHECK(iteration_bounds(t) == lengthened);
}

TEST_CASE("trace repeat: an iteration that allocates, or no iteration at all, is refused", "[repeat]") {
    auto t = loop_trace(3, 8, 2);
    t.allocs.push_back({99, 0x900000, 4096, trace::AllocKind::Converted, 0, 0, 4});
    CHECK_THROWS_AS(repeat_last_iteration(t, iteration_bounds(t), 1), std::invalid_argument);
    auto single = loop_trace(3, 8, 1);
    single.iterations.clear();
    CHECK_THROWS_AS(repeat_last_iteration(single, iteration_bounds(single), 1), std::invalid_argument);
}

TEST_CASE("trace repeat: slab records inside the last iteration refuse it, those after it move to the end",
          "[repeat]") {
    auto t = loop_trace(3, 8, 2);
    t.slabs.push_back({trace::SlabAction::Released, 1, 0x6000'0000'0000, 512 << 20, 0, 0, 4});
    CHECK_THROWS_WITH(repeat_last_iteration(t, iteration_bounds(t), 1), Catch::Contains("slabs"));
    // A third iteration cut short after two launches (dropped), and the slab
    // given back after it, at teardown.
    t.iterations.push_back({2, 6, 0});
    for (uint32_t k = 0; k < 2; ++k) {
        const trace::Access access{k, 0, 0};
        add_launch(t, k, {&access, 1});
    }
    t.slabs.back().launches_before = 8;
    REQUIRE(iteration_bounds(t) == std::vector<uint64_t>{0, 3, 6});
    repeat_last_iteration(t, iteration_bounds(t), 2);
    CHECK(t.launches.size() == 12);
    CHECK(t.slabs.back().launches_before == 12);
}

TEST_CASE("trace repeat: a mark where the repeated iteration ends is not doubled", "[repeat]") {
    auto t = loop_trace(3, 8, 3); // marks before launches 0, 3 and 6
    t.launches.resize(7);         // the recording stopped inside the third iteration
    const auto bounds = iteration_bounds(t);
    REQUIRE(bounds.back() == 6);
    const auto lengthened = repeat_last_iteration(t, bounds, 2);
    REQUIRE(t.launches.size() == 12);
    CHECK(lengthened == std::vector<uint64_t>{0, 3, 6, 9, 12});
    std::vector<uint64_t> marked;
    for (const trace::Iteration& m : t.iterations) marked.push_back(m.launches_before);
    CHECK(marked == std::vector<uint64_t>{0, 3, 6, 9});
}

TEST_CASE("trace repeat: extents inferred over the copies are the original iteration's", "[repeat]") {
    constexpr uint64_t kMiB = 1ull << 20;
    trace::Trace t;
    t.allocs.push_back({0, 0x1000000, 8 * kMiB});
    // Each iteration: a launch reading two tensors of one allocation, then one
    // reading the second of them; no lengths recorded.
    for (uint32_t it = 0; it < 2; ++it) {
        t.iterations.push_back({it, t.launches.size(), 0});
        const trace::Access both[] = {{0, 0, 0}, {0, 4 * kMiB, 0}};
        add_launch(t, 0, both);
        add_launch(t, 1, {both + 1, 1});
    }
    const auto bounds = repeat_last_iteration(t, iteration_bounds(t), 5);
    infer_access_extents(t, bounds);
    for (uint64_t i = 0; i < t.launches.size(); ++i) {
        const auto accesses = t.accesses_of(t.launches[i]);
        REQUIRE(accesses.size() == (i % 2 == 0 ? 2u : 1u));
        if (i % 2 == 0) CHECK(accesses[0].length == 4 * kMiB); // up to the other tensor
        CHECK(accesses.back().length == 4 * kMiB);               // to the allocation's end
    }
}

TEST_CASE("trace repeat: extents inferred before repeating are those inferred over the copies", "[repeat]") {
    constexpr uint64_t kMiB = 1ull << 20;
    // Two iterations of three launches over tensors of one allocation, then a
    // partial third iteration that repeating drops; no lengths recorded.
    const auto recorded = [] {
        trace::Trace t;
        t.allocs.push_back({0, 0x1000000, 16 * kMiB});
        for (uint32_t it = 0; it < 3; ++it) {
            t.iterations.push_back({it, t.launches.size(), 0});
            const trace::Access first[] = {{0, 0, 0}, {0, 4 * kMiB, 0}};
            const trace::Access second[] = {{0, 4 * kMiB, 0}, {0, 12 * kMiB, 0}};
            const trace::Access third[] = {{0, 8 * kMiB, 0}};
            add_launch(t, 0, first);
            if (it == 2) break;
            add_launch(t, 1, second);
            add_launch(t, 2, third);
        }
        return t;
    };
    trace::Trace after = recorded();
    infer_access_extents(after, repeat_last_iteration(after, iteration_bounds(after), 4));
    trace::Trace before = recorded();
    const auto bounds = iteration_bounds(before);
    infer_access_extents(before, bounds);
    repeat_last_iteration(before, bounds, 4);
    REQUIRE(before.launches.size() == after.launches.size());
    for (uint64_t i = 0; i < before.launches.size(); ++i) {
        const auto a = before.accesses_of(before.launches[i]);
        const auto b = after.accesses_of(after.launches[i]);
        REQUIRE(a.size() == b.size());
        for (size_t k = 0; k < a.size(); ++k) {
            CHECK(a[k].length != 0);
            CHECK(a[k].length == b[k].length);
        }
    }
}

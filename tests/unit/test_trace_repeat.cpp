#include "core/simulator.h"
#include "core/trace_repeat.h"
#include "trace_fixtures.h"

#include <catch2/catch.hpp>

#include <stdexcept>

using namespace uvmp;
using trace::fixtures::loop_trace;

TEST_CASE("trace repeat: the last iteration is appended with its accesses and marks", "[repeat]") {
    auto t = loop_trace(3, 8, 2); // 3 launches an iteration, marked
    const auto bounds = iteration_bounds(t);
    REQUIRE(bounds.size() == 3);
    repeat_last_iteration(t, bounds, 4);
    REQUIRE(t.launches.size() == 6 * 3);
    CHECK(t.iterations.size() == 6);
    CHECK(t.iterations.back().launches_before == 15);
    for (uint64_t i = 6; i < t.launches.size(); ++i) {
        const trace::Launch& copy = t.launches[i];
        const trace::Launch& original = t.launches[3 + i % 3];
        CHECK(copy.seq == i);
        CHECK(copy.kernel_id == original.kernel_id);
        CHECK(copy.duration_ns == original.duration_ns);
        REQUIRE(copy.access_count == original.access_count);
        CHECK(t.accesses[copy.first_access].alloc_id == t.accesses[original.first_access].alloc_id);
    }
    CHECK(iteration_bounds(t).size() == 7);
}

TEST_CASE("trace repeat: an iteration that allocates, or no iteration at all, is refused", "[repeat]") {
    auto t = loop_trace(3, 8, 2);
    t.allocs.push_back({99, 0x900000, 4096, trace::AllocKind::Converted, 0, 0, 4});
    CHECK_THROWS_AS(repeat_last_iteration(t, iteration_bounds(t), 1), std::invalid_argument);
    auto single = loop_trace(3, 8, 1);
    single.iterations.clear();
    CHECK_THROWS_AS(repeat_last_iteration(single, iteration_bounds(single), 1), std::invalid_argument);
}

TEST_CASE("trace repeat: a mark where the repeated iteration ends is not doubled", "[repeat]") {
    auto t = loop_trace(3, 8, 3); // marks before launches 0, 3 and 6
    t.launches.resize(7);         // the recording stopped inside the third iteration
    const auto bounds = iteration_bounds(t);
    REQUIRE(bounds.back() == 6);
    repeat_last_iteration(t, bounds, 2);
    REQUIRE(t.launches.size() == 12);
    std::vector<uint64_t> marked;
    for (const trace::Iteration& m : t.iterations) marked.push_back(m.launches_before);
    CHECK(marked == std::vector<uint64_t>{0, 3, 6, 9});
}

#include "core/trace/analysis/late_durations.h"

#include "trace_fixtures.h"

#include <catch2/catch.hpp>

using namespace uvmp::trace;
using uvmp::trace::fixtures::add_alloc;
using uvmp::trace::fixtures::add_launch_naming;

TEST_CASE("late durations: the launches of a range still without one", "[trace]") {
    Trace t;
    add_alloc(t, 1, 1 << 20, 0);
    add_launch_naming(t, 2, {1}, 1000);
    add_launch_naming(t, 2, {1}, 0);
    add_launch_naming(t, 3, {1}, 0);
    add_launch_naming(t, 3, {1}, 2000);
    CHECK(launches_without_duration(t, 0, 4) == 2);
    CHECK(launches_without_duration(t, 2, 4) == 1);
    CHECK(launches_without_duration(t, 3, 99) == 0);
    CHECK(launches_without_duration(t, 5, 9) == 0);
}

TEST_CASE("late durations: look again only while they keep coming", "[trace]") {
    LateDurations late;
    CHECK(late.worth_waiting(300));       // first look: some missing
    CHECK(late.worth_waiting(120));       // more came
    CHECK_FALSE(late.worth_waiting(120)); // none came: judge with what there is
    LateDurations complete;
    CHECK_FALSE(complete.worth_waiting(0));
    LateDurations growing;
    CHECK(growing.worth_waiting(10));
    CHECK_FALSE(growing.worth_waiting(40)); // a longer range, not late records
}

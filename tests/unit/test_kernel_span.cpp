#include "driver/timing/kernel_span.h"

#include <catch2/catch.hpp>

using uvmp::driver::finished_span;

TEST_CASE("kernel span: a record of a kernel that had ended times it", "[timing]") {
    const auto span = finished_span(100, 250);
    REQUIRE(span);
    CHECK(span->start_ns == 100);
    CHECK(span->duration_ns == 150);
}

TEST_CASE("kernel span: a record taken back before its kernel ended times nothing", "[timing]") {
    // A forced flush hands back records of kernels still queued or running with
    // their timestamps unfilled: a zero duration would read as a kernel that took
    // no time, an end before the start as one that took centuries.
    CHECK_FALSE(finished_span(0, 0));
    CHECK_FALSE(finished_span(100, 0));
    CHECK_FALSE(finished_span(100, 90));
    CHECK_FALSE(finished_span(100, 100));
    CHECK_FALSE(finished_span(0, 250));
}

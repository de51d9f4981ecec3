#include "core/trace/analysis/step_times.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace uvmp;

namespace {

// Launches `count` at `call_every_ns` apart from `start_ns`, each running `kernel_ns` (0: untimed).
void add_launches(trace::Trace& trace, size_t count, uint64_t start_ns, uint64_t call_every_ns, uint64_t kernel_ns) {
    for (size_t i = 0; i < count; ++i) {
        trace::Launch launch;
        launch.seq = trace.launches.size();
        launch.time_ns = start_ns + i * call_every_ns;
        launch.duration_ns = kernel_ns;
        trace.launches.push_back(launch);
    }
}

} // namespace

TEST_CASE("step times: a step's span between first launch calls against its kernels' time", "[step-times]") {
    trace::Trace trace;
    // Three steps of 4 launches: calls 10 ms apart, kernels of 1 ms (the GPU waits
    // for the application), then of 9 ms, then a last step with no next launch.
    add_launches(trace, 4, 0, 10'000'000, 1'000'000);
    add_launches(trace, 4, 40'000'000, 10'000'000, 9'000'000);
    add_launches(trace, 4, 80'000'000, 10'000'000, 9'000'000);
    const std::vector<uint64_t> bounds = {0, 4, 8, 12};

    const std::vector<StepTime> steps = step_times(trace, bounds);
    REQUIRE(steps.size() == 3);
    CHECK(steps[0].call_ns == 40'000'000);
    CHECK(steps[0].kernel_ns == 4'000'000);
    CHECK(steps[0].timed_launches == 4);
    CHECK(steps[1].kernel_ns == 36'000'000);
    CHECK(steps[2].call_ns == 0); // nothing after it to end it

    const auto summary = summarize_step_times(steps);
    REQUIRE(summary);
    CHECK(summary->steps == 3);
    CHECK(summary->measured == 2);
    CHECK(summary->least_call_ns == 40'000'000);
    CHECK(summary->most_call_ns == 40'000'000);
    CHECK(summary->median_kernel_ns == 20'000'000);
    CHECK(summary->kernel_share == Approx(0.5));
}

TEST_CASE("step times: steps with untimed launches are not measured", "[step-times]") {
    trace::Trace trace;
    add_launches(trace, 4, 0, 10'000'000, 0);
    add_launches(trace, 4, 40'000'000, 10'000'000, 0);
    const std::vector<uint64_t> bounds = {0, 4, 8};
    const std::vector<StepTime> steps = step_times(trace, bounds);
    REQUIRE(steps.size() == 2);
    CHECK(steps[0].timed_launches == 0);
    CHECK_FALSE(summarize_step_times(steps));
    CHECK_FALSE(summarize_step_times({}));

    // One launch of a step untimed leaves that step out.
    trace::Trace mixed;
    add_launches(mixed, 4, 0, 10'000'000, 2'000'000);
    add_launches(mixed, 4, 40'000'000, 10'000'000, 2'000'000);
    add_launches(mixed, 1, 80'000'000, 10'000'000, 2'000'000);
    mixed.launches[5].duration_ns = 0;
    const auto summary = summarize_step_times(step_times(mixed, std::vector<uint64_t>{0, 4, 8}));
    REQUIRE(summary);
    CHECK(summary->measured == 1);
    CHECK(summary->median_call_ns == 40'000'000);
    CHECK(summary->kernel_share == Approx(0.2));
}

#include "core/placement/home_choice.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <vector>

using namespace uvmp::placement;

namespace {
constexpr uint64_t kGiB = 1ull << 30;

StepAllocation alloc(uint64_t bytes, uint32_t first, uint32_t last, uint32_t uses, bool tolerant) {
    StepAllocation a;
    a.bytes = bytes;
    a.first_launch = first;
    a.last_launch = last;
    a.uses = uses;
    a.remote_tolerant = tolerant;
    return a;
}

// The most GPU-homed bytes live at once, by brute force.
uint64_t gpu_peak(const std::vector<StepAllocation>& allocations, const std::vector<Home>& homes, uint32_t launches) {
    uint64_t peak = 0;
    for (uint32_t p = 0; p < launches; ++p) {
        uint64_t live = 0;
        for (size_t i = 0; i < allocations.size(); ++i)
            if (homes[i] == Home::Gpu && allocations[i].first_launch <= p && p <= allocations[i].last_launch)
                live += allocations[i].bytes;
        peak = std::max(peak, live);
    }
    return peak;
}
} // namespace

TEST_CASE("home choice: everything stays on the GPU when it fits", "[placement]") {
    const std::vector<StepAllocation> step{alloc(4 * kGiB, 0, 9, 3, true), alloc(4 * kGiB, 2, 5, 2, true)};
    const HomeChoice choice = choose_homes(step, 10, 8 * kGiB);
    CHECK(choice.homes == std::vector<Home>{Home::Gpu, Home::Gpu});
    CHECK(choice.swapped_bytes == 0);
    CHECK(choice.estimated_seconds == 0);
}

TEST_CASE("home choice: a streamed allocation at the peak goes to the host", "[placement]") {
    // Weights all step long; two activations that overlap at launches 4..5, one of
    // them read by streaming kernels only.
    const std::vector<StepAllocation> step{alloc(8 * kGiB, 0, 9, 10, false), alloc(4 * kGiB, 1, 5, 2, true),
                                           alloc(4 * kGiB, 4, 8, 2, false)};
    const HomeChoice choice = choose_homes(step, 10, 12 * kGiB);
    CHECK(choice.all_gpu_swapped_bytes == 4 * kGiB);
    REQUIRE(choice.homes == std::vector<Home>{Home::Gpu, Home::Host, Home::Gpu});
    CHECK(choice.swapped_bytes == 0);
    CHECK(choice.host_bytes == 4 * kGiB);
    // Two remote trips of 4 GiB instead of an eviction and a fetch.
    CHECK(choice.estimated_seconds == Approx(remote_seconds(step[1], Rates{})));
    CHECK(choice.estimated_seconds < choice.all_gpu_seconds);
}

TEST_CASE("home choice: an allocation a GEMM reads stays on the GPU whatever the pressure", "[placement]") {
    const std::vector<StepAllocation> step{alloc(8 * kGiB, 0, 9, 10, false), alloc(8 * kGiB, 0, 9, 10, false)};
    const HomeChoice choice = choose_homes(step, 10, 8 * kGiB);
    CHECK(choice.homes == std::vector<Home>{Home::Gpu, Home::Gpu});
    CHECK(choice.swapped_bytes == 8 * kGiB);
    CHECK(choice.estimated_seconds == Approx(choice.all_gpu_seconds));
}

TEST_CASE("home choice: an allocation read too often remotely stays on the GPU", "[placement]") {
    // Read at 100 launches: its remote trips cost more than migrating its share of the peak.
    Rates rates;
    const std::vector<StepAllocation> step{alloc(8 * kGiB, 0, 99, 100, false), alloc(2 * kGiB, 0, 99, 100, true)};
    const HomeChoice choice = choose_homes(step, 100, 9 * kGiB, rates);
    CHECK(remote_seconds(step[1], rates) > choice.all_gpu_seconds);
    CHECK(choice.homes[1] == Home::Gpu);
}

TEST_CASE("home choice: an allocation away from the peak is not moved to the host", "[placement]") {
    const std::vector<StepAllocation> step{alloc(10 * kGiB, 0, 4, 2, true), alloc(10 * kGiB, 3, 4, 2, true),
                                           alloc(1 * kGiB, 6, 9, 2, true)};
    const HomeChoice choice = choose_homes(step, 10, 12 * kGiB);
    CHECK(choice.homes[2] == Home::Gpu);
    CHECK(choice.swapped_bytes == 0);
    CHECK(std::count(choice.homes.begin(), choice.homes.end(), Home::Host) == 1);
}

TEST_CASE("home choice: the chosen homes' peak is what the choice reports, on random steps", "[placement]") {
    std::mt19937 random(7);
    for (int round = 0; round < 50; ++round) {
        const uint32_t launches = 1 + random() % 40;
        std::vector<StepAllocation> step;
        const size_t count = 1 + random() % 30;
        for (size_t i = 0; i < count; ++i) {
            const uint32_t first = random() % launches;
            const uint32_t last = first + random() % (launches - first);
            step.push_back(alloc((1 + random() % 64) << 20, first, last, 1 + random() % 4, random() % 2 == 0));
        }
        const uint64_t budget = (random() % 512) << 20;
        const HomeChoice choice = choose_homes(step, launches, budget);
        std::vector<Home> all_gpu(step.size(), Home::Gpu);
        const uint64_t peak = gpu_peak(step, choice.homes, launches);
        CHECK(choice.swapped_bytes == (peak > budget ? peak - budget : 0));
        const uint64_t all_peak = gpu_peak(step, all_gpu, launches);
        CHECK(choice.all_gpu_swapped_bytes == (all_peak > budget ? all_peak - budget : 0));
        CHECK(choice.estimated_seconds <= choice.all_gpu_seconds + 1e-12);
        for (size_t i = 0; i < step.size(); ++i)
            if (choice.homes[i] == Home::Host) CHECK(step[i].remote_tolerant);
    }
}

TEST_CASE("home order: of two allocations at the peak, the one read fewer times goes first", "[placement]") {
    // Either lowers the peak by 2 GiB; the second is read four times as often.
    const std::vector<StepAllocation> step{alloc(8 * kGiB, 0, 9, 10, false), alloc(2 * kGiB, 0, 9, 9, true),
                                           alloc(2 * kGiB, 0, 9, 2, true)};
    const HomeOrder order = host_home_order(step, 10, 9 * kGiB);
    REQUIRE(order.steps.size() == 2);
    CHECK(order.all_gpu_swapped_bytes == 3 * kGiB);
    CHECK(order.steps[0].index == 2);
    CHECK(order.steps[0].swapped_bytes == kGiB);
    CHECK(order.steps[1].index == 1);
    CHECK(order.steps[1].swapped_bytes == 0);
    CHECK(order.steps[1].host_bytes == 4 * kGiB);
    CHECK(order.steps[1].remote_seconds == Approx(remote_seconds(step[1], Rates{}) + remote_seconds(step[2], Rates{})));
    // A prefix of it, whatever the estimate says.
    const HomeChoice first = choice_of(step, order, 1, Rates{}, 0);
    CHECK(first.homes == std::vector<Home>{Home::Gpu, Home::Gpu, Home::Host});
    CHECK(first.taken == 1);
    CHECK_THROWS_AS(choice_of(step, order, 3, Rates{}, 0), std::invalid_argument);
}

TEST_CASE("home choice: migration hidden behind the kernels keeps every home on the GPU", "[placement]") {
    // The same streamed activation as above, in a step whose kernels take longer
    // than swapping its 4 GiB: its trips would only lengthen the step.
    const std::vector<StepAllocation> step{alloc(8 * kGiB, 0, 9, 10, false), alloc(4 * kGiB, 1, 5, 2, true),
                                           alloc(4 * kGiB, 4, 8, 2, false)};
    const Rates rates;
    const double swap = estimated_step_seconds(0, 0, 4 * kGiB, rates);
    const HomeChoice slow = choose_homes(step, 10, 12 * kGiB, rates, 2 * swap);
    CHECK(slow.homes == std::vector<Home>{Home::Gpu, Home::Gpu, Home::Gpu});
    CHECK(slow.estimated_seconds == Approx(2 * swap));
    // Kernels far shorter than the swap: the host home pays.
    const HomeChoice fast = choose_homes(step, 10, 12 * kGiB, rates, swap / 100);
    CHECK(fast.homes[1] == Home::Host);
    CHECK(fast.estimated_seconds == Approx(swap / 100 + remote_seconds(step[1], rates)));
}

TEST_CASE("home choice: an allocation outside the step is refused", "[placement]") {
    const std::vector<StepAllocation> step{alloc(kGiB, 3, 12, 1, true)};
    CHECK_THROWS_AS(choose_homes(step, 10, kGiB), std::invalid_argument);
}

TEST_CASE("step homes: later steps get homes by order and size", "[placement]") {
    const std::vector<StepAllocation> step{alloc(kGiB, 0, 1, 1, true), alloc(2 * kGiB, 0, 1, 1, true)};
    const std::vector<Home> homes{Home::Host, Home::Gpu};
    const StepHomes map(step, homes);
    CHECK(map.home_of(0, kGiB) == Home::Host);
    CHECK(map.home_of(1, 2 * kGiB) == Home::Gpu);
    // Another size at the same place, or a place the learned step did not have: the GPU.
    CHECK(map.home_of(0, 3 * kGiB) == Home::Gpu);
    CHECK(map.home_of(2, kGiB) == Home::Gpu);
    CHECK_THROWS_AS(StepHomes(step, std::vector<Home>{Home::Gpu}), std::invalid_argument);
}

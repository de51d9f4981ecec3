#include "trace_fixtures.h"

#include "core/trace/analysis/iteration_period.h"

#include <catch2/catch.hpp>

#include <random>

using namespace uvmp::trace;

namespace {

// warm-up ids, then `repeats` copies of pattern, then the first `tail` ids of it.
std::vector<uint32_t> periodic(const std::vector<uint32_t>& warm_up, const std::vector<uint32_t>& pattern,
                               size_t repeats, size_t tail) {
    std::vector<uint32_t> ids = warm_up;
    for (size_t r = 0; r < repeats; ++r) ids.insert(ids.end(), pattern.begin(), pattern.end());
    ids.insert(ids.end(), pattern.begin(), pattern.begin() + static_cast<long>(tail));
    return ids;
}

// A pattern that looks like a model: a few kernels used many times over.
std::vector<uint32_t> model_like_pattern(size_t length, uint32_t kernels, uint32_t seed) {
    std::mt19937 random(seed);
    std::vector<uint32_t> pattern(length);
    for (uint32_t& id : pattern) id = random() % kernels;
    return pattern;
}

} // namespace

TEST_CASE("an exact period after a warm-up prefix", "[period]") {
    auto pattern = model_like_pattern(50, 12, 1);
    std::vector<uint32_t> warm_up = {100, 101, 102, 103, 104, 105, 106};
    auto ids = periodic(warm_up, pattern, 10, 13);
    auto found = detect_iteration_period(ids);
    REQUIRE(found);
    CHECK(found->period == 50);
    CHECK_FALSE(found->from_marks);
    CHECK(found->first_launch <= warm_up.size());
    CHECK(found->repeats >= 10);
}

TEST_CASE("the smallest repeating period is reported, not a multiple", "[period]") {
    auto ids = periodic({}, {3, 4, 3, 4, 3, 4}, 8, 0);
    auto found = detect_iteration_period(ids);
    REQUIRE(found);
    CHECK(found->period == 2);

    auto ones = periodic({}, {9}, 40, 0);
    REQUIRE(detect_iteration_period(ones));
    CHECK(detect_iteration_period(ones)->period == 1);
}

TEST_CASE("a first iteration with extra kernels is a warm-up, not the period", "[period]") {
    auto pattern = model_like_pattern(120, 20, 2);
    // The first step runs the same kernels with autotuning probes among them.
    std::vector<uint32_t> first_step;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (i % 10 == 0) first_step.push_back(500 + static_cast<uint32_t>(i));
        first_step.push_back(pattern[i]);
    }
    auto ids = periodic(first_step, pattern, 6, 40);
    auto found = detect_iteration_period(ids);
    REQUIRE(found);
    CHECK(found->period == 120);
    CHECK(found->repeats >= 6);
}

TEST_CASE("occasional extra and replaced kernels do not hide the period", "[period]") {
    auto pattern = model_like_pattern(40, 10, 3);
    auto ids = periodic({7, 7, 8}, pattern, 30, 5);
    std::mt19937 random(11);
    for (int replaced = 0; replaced < 3; ++replaced) ids[100 + random() % (ids.size() - 200)] = 999;
    for (int inserted = 0; inserted < 3; ++inserted) {
        ids.insert(ids.begin() + 100 + static_cast<long>(random() % (ids.size() - 200)), 998);
    }
    auto found = detect_iteration_period(ids);
    REQUIRE(found);
    CHECK(found->period == 40);
}

TEST_CASE("no period when nothing repeats twice", "[period]") {
    std::mt19937 random(5);
    std::vector<uint32_t> noise(2000);
    for (uint32_t& id : noise) id = random() % 50;
    CHECK_FALSE(detect_iteration_period(noise));

    auto pattern = model_like_pattern(60, 15, 4);
    CHECK_FALSE(detect_iteration_period(periodic({}, pattern, 1, 50))); // one and a bit repeats

    CHECK_FALSE(detect_iteration_period(std::vector<uint32_t>{}));
    CHECK_FALSE(detect_iteration_period(std::vector<uint32_t>{1}));
}

TEST_CASE("a long sequence with a long period is found", "[period]") {
    auto pattern = model_like_pattern(997, 60, 6);
    auto ids = periodic(model_like_pattern(3000, 60, 8), pattern, 100, 500); // about 10^5 launches
    auto found = detect_iteration_period(ids);
    REQUIRE(found);
    CHECK(found->period == 997);
    CHECK(found->repeats >= 100);
}

TEST_CASE("a long first step, two steady steps and a short tail: the shape of a recorded training run", "[period]") {
    // A step whose last launches are one kernel over and over, as an optimizer
    // that launches a kernel per parameter tensor does.
    auto pattern = model_like_pattern(989, 70, 9);
    for (size_t i = pattern.size() - 56; i < pattern.size(); ++i) pattern[i] = 200;
    // The first step runs the same kernels with autotuning probes among them.
    std::vector<uint32_t> first_step = {300, 301};
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (i % 3 == 0 && i < pattern.size() - 56) first_step.push_back(500 + static_cast<uint32_t>(i % 40));
        first_step.push_back(pattern[i]);
    }
    for (size_t tail : {size_t{0}, size_t{25}}) {
        INFO("tail of " << tail << " launches");
        auto ids = periodic(first_step, pattern, 2, tail);
        auto found = detect_iteration_period(ids);
        REQUIRE(found);
        CHECK(found->period == pattern.size());
        CHECK(found->repeats == 2);
        // The steady state may start a little early: the first step ends like the others.
        CHECK(found->first_launch <= first_step.size());
        CHECK(found->first_launch + 64 >= first_step.size());
    }
}

TEST_CASE("a million launches of a short step", "[period]") {
    auto pattern = model_like_pattern(49, 8, 12);
    auto ids = periodic(model_like_pattern(57, 9, 13), pattern, 20'000, 30);
    auto found = detect_iteration_period(ids);
    REQUIRE(found);
    CHECK(found->period == 49);
    CHECK(found->repeats >= 19'999);
}

TEST_CASE("iteration marks decide the period when there are at least two", "[period]") {
    TrainingLoopShape shape;
    shape.steps = 5;
    shape.mark_iterations = true;
    Trace trace = make_training_loop(shape);
    auto found = detect_iteration_period(trace);
    REQUIRE(found);
    CHECK(found->from_marks);
    CHECK(found->period == 6 * shape.layers + 1);
    CHECK(found->first_launch == 0);
}

TEST_CASE("the synthetic training loop has its step as period", "[period]") {
    TrainingLoopShape shape;
    shape.steps = 12;
    Trace trace = make_training_loop(shape);
    auto found = detect_iteration_period(trace);
    REQUIRE(found);
    CHECK_FALSE(found->from_marks);
    CHECK(found->period == 6 * shape.layers + 1);
    CHECK(found->repeats >= 10);
}

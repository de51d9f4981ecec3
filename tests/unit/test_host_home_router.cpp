#include "driver/homes/host_home_router.h"

#include <catch2/catch.hpp>

#include <optional>
#include <vector>

// The router of homes learned in the run, without a driver: which entry of the
// learned step each allocation took, and entries that remote trials give back
// their GPU home.
using namespace uvmp;
using namespace uvmp::driver;
using placement::Home;

namespace {
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBudget = 64 * kMiB;

Config learning_config() {
    Config config;
    config.policy = ResidencyPolicy::Learned;
    config.host_homes = HostHomes::Auto;
    config.budget = SizeOrPercent{.bytes = kBudget};
    return config;
}

// A step of three allocations of 1, 2 and 3 MiB, the first and last on the host,
// that simulated at half the all-GPU step.
placement::RecordedHomes learned_step() {
    placement::RecordedHomes homes;
    homes.step = {{kMiB, Home::Host}, {2 * kMiB, Home::Gpu}, {3 * kMiB, Home::Host}};
    homes.choice.homes = {Home::Host, Home::Gpu, Home::Host};
    homes.simulated_step_seconds = 0.5;
    homes.all_gpu_step_seconds = 1.0;
    return homes;
}

struct RoutedStep {
    std::vector<Home> homes;
    std::vector<std::optional<size_t>> entries;
    std::vector<std::optional<uint64_t>> offsets;
};

RoutedStep route_step(HostHomeRouter& router) {
    RoutedStep step;
    for (const uint64_t bytes : {kMiB, 2 * kMiB, 3 * kMiB}) {
        HostHomeRouter::Routed routed;
        step.homes.push_back(router.home_of(0, bytes, kBudget, &routed));
        step.entries.push_back(routed.step_entry);
        step.offsets.push_back(routed.arena_offset);
    }
    return step;
}
} // namespace

TEST_CASE("host home router: entries taken, and entries given back their GPU home", "[placement]") {
    const Config config = learning_config();
    HostHomeFigures figures;
    HostHomeRouter router(config, figures);
    REQUIRE(router.learns_in_run());
    HostHomeRouter::Routed routed{5, 0};
    CHECK(router.home_of(0, kMiB, kBudget, &routed) == Home::Gpu); // nothing learned yet
    CHECK_FALSE(routed.step_entry);
    CHECK_FALSE(routed.arena_offset);

    router.adopt_learned(0, kBudget, learned_step(), [] { return uint64_t{0}; });
    REQUIRE(router.routing());
    RoutedStep first = route_step(router);
    CHECK(first.homes == std::vector<Home>{Home::Host, Home::Gpu, Home::Host});
    CHECK(first.entries == std::vector<std::optional<size_t>>{0, 1, 2});
    CHECK(first.offsets == std::vector<std::optional<uint64_t>>(3)); // no layout
    CHECK(router.arena_bytes() == 0);

    const std::vector<size_t> given_back{2};
    router.set_homes(given_back, Home::Gpu);
    CHECK(route_step(router).homes == std::vector<Home>{Home::Host, Home::Gpu, Home::Gpu});
    router.set_homes(given_back, Home::Host); // the steps after proved the trial wrong
    CHECK(route_step(router).homes == first.homes);
    // Another device's allocations are not routed.
    CHECK(router.home_of(1, kMiB, kBudget, &routed) == Home::Gpu);
    CHECK_FALSE(routed.step_entry);

    // The stats file's account of the choice and of the routing.
    router.report();
    nlohmann::ordered_json j;
    figures.add_json(j);
    const auto& h = j.at("host_homes");
    CHECK(h.at("used") == true);
    CHECK(h.at("step_allocations") == 3);
    CHECK(h.at("chosen") == 2);
    CHECK(h.at("simulated_ms") == Approx(500.0));
    CHECK(h.at("routed_host") == 5); // 2 + 1 + 2
    CHECK(h.at("routed_matched") == 9);
    CHECK(h.at("routed_unmatched") == 0);
}

TEST_CASE("host home router: a planned layout gives GPU-homed entries their arena offsets", "[placement]") {
    const Config config = learning_config();
    HostHomeFigures figures;
    HostHomeRouter router(config, figures);
    placement::RecordedHomes homes = learned_step();
    // With a layout, routing begins whatever the homes gain alone.
    homes.simulated_step_seconds = homes.all_gpu_step_seconds;
    homes.step_offsets = {std::nullopt, 4 * kMiB, std::nullopt};
    homes.arena_bytes = 8 * kMiB;
    homes.over_dead_step_seconds = 1.0;
    homes.planned_step_seconds = 0.6;
    router.adopt_learned(0, kBudget, homes, [] { return uint64_t{0}; });
    REQUIRE(router.routing());
    CHECK(router.arena_bytes() == 8 * kMiB);
    const RoutedStep step = route_step(router);
    CHECK(step.homes == std::vector<Home>{Home::Host, Home::Gpu, Home::Host});
    CHECK(step.offsets == std::vector<std::optional<uint64_t>>{std::nullopt, 4 * kMiB, std::nullopt});
    // An entry given back its GPU home has no place in the layout: the pool places it.
    const std::vector<size_t> given_back{2};
    router.set_homes(given_back, Home::Gpu);
    CHECK(route_step(router).offsets == std::vector<std::optional<uint64_t>>{std::nullopt, 4 * kMiB, std::nullopt});
    // Every home given back takes the layout with it; sent back to the host, they bring it back.
    const std::vector<size_t> all{0, 1, 2};
    router.set_homes(all, Home::Gpu);
    CHECK(router.layout_used());
    router.use_layout(false);
    CHECK_FALSE(router.layout_used());
    RoutedStep gpu = route_step(router);
    CHECK(gpu.homes == std::vector<Home>{Home::Gpu, Home::Gpu, Home::Gpu});
    CHECK(gpu.offsets == std::vector<std::optional<uint64_t>>{std::nullopt, std::nullopt, std::nullopt});
    router.set_homes(all, Home::Host);
    router.set_homes(std::vector<size_t>{1}, Home::Gpu);
    router.use_layout(true);
    CHECK(route_step(router).offsets == std::vector<std::optional<uint64_t>>{std::nullopt, 4 * kMiB, std::nullopt});
}

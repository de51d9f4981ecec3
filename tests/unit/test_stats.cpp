#include "core/accounting/stats.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

using namespace uvmp;

namespace {

constexpr uint64_t kMiB = 1ull << 20;

bool has_line_starting(const std::vector<std::string>& lines, const std::string& start) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(start, 0) == 0; });
}

} // namespace

TEST_CASE("stats: each device the job used has its own budget and figures in the stats file", "[stats]") {
    Stats stats;
    stats.device_configured(1, 8 * kMiB, 60 * kMiB);
    stats.device_configured(0, 16 * kMiB, 120 * kMiB);
    stats.converted_allocated(0, 32 * kMiB);
    stats.converted_allocated(1, 4 * kMiB);
    stats.converted_allocated(1, 4 * kMiB);
    stats.converted_freed(1, 4 * kMiB);
    stats.passed_through(stats.passthrough_capture, 2 * kMiB, 1);
    stats.passed_through(stats.passthrough_host, kMiB); // host memory: no device's
    stats.moved(0, MoveCount::Prefetch, 6 * kMiB);
    stats.moved(1, MoveCount::Evict, 2 * kMiB);
    stats.moved(1, MoveCount::Populate, kMiB);

    const auto j = nlohmann::json::parse(stats.to_json(true, 42));
    // The process-wide figures keep their names; the budget is the first device's known.
    CHECK(j["budget_bytes"] == 8 * kMiB);
    CHECK(j["guard_limit_bytes"] == 60 * kMiB);
    CHECK(j["bytes_converted"] == 40 * kMiB);
    CHECK(j["bytes_prefetched"] == 6 * kMiB);
    CHECK(j["bytes_evicted"] == 2 * kMiB);
    CHECK(j["bytes_populated"] == kMiB);
    CHECK(j["allocs_passed_through"] == 2);

    REQUIRE(j["devices"].size() == 2);
    const auto& d0 = j["devices"][0];
    const auto& d1 = j["devices"][1];
    CHECK(d0["device"] == 0);
    CHECK(d0["budget_bytes"] == 16 * kMiB);
    CHECK(d0["guard_limit_bytes"] == 120 * kMiB);
    CHECK(d0["bytes_converted_live"] == 32 * kMiB);
    CHECK(d0["bytes_prefetched"] == 6 * kMiB);
    CHECK(d0["bytes_evicted"] == 0);
    CHECK(d0["bytes_passed_through_live"] == 0);
    CHECK(d1["device"] == 1);
    CHECK(d1["budget_bytes"] == 8 * kMiB);
    CHECK(d1["allocs_converted"] == 2);
    CHECK(d1["bytes_converted_live"] == 4 * kMiB);
    CHECK(d1["bytes_converted_peak"] == 8 * kMiB);
    CHECK(d1["allocs_passed_through"] == 1);
    CHECK(d1["bytes_passed_through_live"] == 2 * kMiB);
    CHECK(d1["bytes_evicted"] == 2 * kMiB);
    CHECK(d1["bytes_populated"] == kMiB);

    stats.passthrough_freed(1, 2 * kMiB);
    CHECK(nlohmann::json::parse(stats.to_json(true, 42))["devices"][1]["bytes_passed_through_live"] == 0);

    const auto lines = stats.summary_lines();
    CHECK(has_line_starting(lines, "budget 8.0 MiB, physical guard 60.0 MiB"));
    CHECK(has_line_starting(lines, "device 0: budget 16.0 MiB, physical guard 120.0 MiB; converted 1 (32.0 MiB"));
    CHECK(has_line_starting(lines, "device 1: budget 8.0 MiB, physical guard 60.0 MiB; converted 2 (8.0 MiB"));
}

TEST_CASE("stats: a job of one device reads as before, with that device listed", "[stats]") {
    Stats stats;
    stats.device_configured(0, 16 * kMiB, 120 * kMiB);
    stats.converted_allocated(0, 4 * kMiB);
    const auto j = nlohmann::json::parse(stats.to_json(true, 1));
    CHECK(j["budget_bytes"] == 16 * kMiB);
    REQUIRE(j["devices"].size() == 1);
    CHECK(j["devices"][0]["bytes_converted_live"] == 4 * kMiB);
    // No line of its own: it would repeat the process-wide ones.
    CHECK_FALSE(has_line_starting(stats.summary_lines(), "device 0:"));

    stats.reset();
    CHECK(nlohmann::json::parse(stats.to_json(true, 1))["devices"].empty());
    stats.device_configured(2, 4 * kMiB, 8 * kMiB);
    CHECK(nlohmann::json::parse(stats.to_json(true, 1))["budget_bytes"] == 4 * kMiB);
}

TEST_CASE("stats: a device past those kept apart counts only in the process-wide figures", "[stats]") {
    Stats stats;
    stats.converted_allocated(static_cast<int>(kMaxStatDevices), kMiB);
    stats.converted_allocated(-1, kMiB);
    const auto j = nlohmann::json::parse(stats.to_json(true, 1));
    CHECK(j["bytes_converted"] == 2 * kMiB);
    CHECK(j["devices"].empty());
}

TEST_CASE("stats: host homes' named bytes and what the remote trial measured reach the file and the summary",
          "[stats]") {
    Stats stats;
    stats.host_block_allocated(8 * kMiB);
    stats.add(stats.remote_write_bytes_named, 8 * kMiB);
    stats.add(stats.remote_read_bytes_named, 24 * kMiB);
    stats.host_homes.used_from(100);
    stats.host_homes.trial_judged({.launches = 12,
                                   .launches_untimed = 5,
                                   .launches_without_local = 2,
                                   .kinds = 3,
                                   .kinds_slowed = 1,
                                   .named_bytes = 32 * kMiB,
                                   .past_local_ms = 1.5,
                                   .trips = 2.34,
                                   .kept_on_gpu = {{.kernel = 33,
                                                    .allocations = 2,
                                                    .bytes = 64 * kMiB,
                                                    .learned_gbps = 197,
                                                    .trial_gbps = 950}},
                                   .streaming_gbps = 601});
    const nlohmann::json j = nlohmann::json::parse(stats.to_json(true, 1));
    CHECK(j["remote_write_bytes_named"] == 8 * kMiB);
    CHECK(j["remote_read_bytes_named"] == 24 * kMiB);
    const nlohmann::json& trial = j["host_homes_trial"];
    CHECK(trial["launches"] == 12);
    CHECK(trial["launches_untimed"] == 5);
    CHECK(trial["launches_without_local"] == 2);
    CHECK(trial["named_bytes"] == 32 * kMiB);
    CHECK(trial["trips"].get<double>() == Approx(2.34));
    CHECK(trial["streaming_gbps"].get<double>() == Approx(601));
    REQUIRE(trial["kept_on_gpu"].size() == 1);
    CHECK(trial["kept_on_gpu"][0]["kernel"] == 33);
    CHECK(trial["kept_on_gpu"][0]["bytes"] == 64 * kMiB);
    CHECK(trial["kept_on_gpu"][0]["learned_gbps"].get<double>() == Approx(197));
    CHECK(trial["kept_on_gpu"][0]["trial_gbps"].get<double>() == Approx(950));
    uvmp_stats filled{};
    filled.struct_size = sizeof filled;
    stats.fill(filled, true);
    CHECK(filled.remote_read_bytes_named == 24 * kMiB);
    std::string summary;
    for (const std::string& line : stats.summary_lines()) summary += line + "\n";
    CHECK_THAT(summary, Catch::Contains("kernels named 8.0 MiB of them to write and 24.0 MiB to read"));
    CHECK_THAT(summary, Catch::Contains("kernels took 2.3 read trips' time past their local times for each byte of the 32.0 MiB of host-homed data "
                                     "they named"));
    stats.host_homes.reset();
    CHECK_FALSE(nlohmann::json::parse(stats.to_json(true, 1)).contains("host_homes_trial"));
}

TEST_CASE("stats: the time slabs' frees took reaches the file, the struct and the summary", "[stats]") {
    Stats stats;
    stats.slab_created(8 * kMiB);
    stats.slab_released(8 * kMiB);
    stats.add(stats.pool_slab_release_ns, 107'200'000);
    const nlohmann::json j = nlohmann::json::parse(stats.to_json(true, 1));
    CHECK(j["pool_slab_release_ns"] == 107'200'000);
    uvmp_stats filled{};
    filled.struct_size = sizeof filled;
    stats.fill(filled, true);
    CHECK(filled.pool_slab_release_ns == 107'200'000);
    std::string summary;
    for (const std::string& line : stats.summary_lines()) summary += line + "\n";
    CHECK_THAT(summary, Catch::Contains("1 slabs made, 1 given back (107.2 ms in cuMemFree"));
}

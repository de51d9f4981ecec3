#include "core/config/options.h"
#include "core/placement/timing_prior.h"
#include "core/rates/link_rates.h"
#include "core/rates/rate_cache.h"
#include "core/rates/rate_refiner.h"
#include "core/rates/streaming_line.h"
#include "core/sim/link_model.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <type_traits>

using namespace uvmp::rates;

namespace {

std::map<std::string, std::string> g_env;

const char* fake_getenv(const char* name) {
    const auto it = g_env.find(name);
    return it == g_env.end() ? nullptr : it->second.c_str();
}

// The figures of the issue: an H100 over PCIe Gen5.
LinkRates h100() {
    LinkRates r;
    r.fetch_gbps = 38.4;
    r.evict_gbps = 13.5;
    r.remote_write_gbps = 38.4;
    r.remote_read_gbps = 22.2;
    r.memory_gbps = 3350;
    r.populate_gbps = 231.5;
    r.source = Source::Probe;
    r.device = {"NVIDIA H100 80GB HBM3", "GPU-0f1e2d3c-aaaa-bbbb-cccc-000000000001", "580.159.04"};
    r.measured_unix_s = 1'790'000'000;
    return r;
}

std::string scratch_dir(const std::string& name) {
    const std::filesystem::path dir = std::filesystem::path(UVMP_BINARY_DIR) / "test-scratch" / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir.string();
}

RatesFileError::Kind error_kind_of(const nlohmann::json& json) {
    try {
        rates_from_json(json, Source::File, "test.json");
    } catch (const RatesFileError& e) {
        return e.kind();
    }
    FAIL("no error");
    return RatesFileError::Kind::Unreadable;
}

} // namespace

TEST_CASE("link rates: a default value is the reference, and says so") {
    const LinkRates r;
    CHECK_FALSE(r.measured());
    CHECK(r.source == Source::Reference);
    CHECK(r.fetch_gbps == 49.0);
    CHECK(r.evict_gbps == 15.0);
    CHECK(r.remote_write_gbps == 52.6);
    CHECK(r.remote_read_gbps == 51.2);
    CHECK(r.memory_gbps == 4800.0);
    CHECK(r.populate_gbps == 209.0);
    CHECK(uvmp::placement::kMemoryGbps == r.memory_gbps);
}

TEST_CASE("link rates: JSON round trip keeps every figure, the device and the time") {
    const LinkRates written = h100();
    const nlohmann::json j = to_json(written);
    CHECK(j["source"] == "probe");
    const LinkRates read = rates_from_json(j, Source::Cache, "memory");
    CHECK(read.fetch_gbps == written.fetch_gbps);
    CHECK(read.evict_gbps == written.evict_gbps);
    CHECK(read.remote_write_gbps == written.remote_write_gbps);
    CHECK(read.remote_read_gbps == written.remote_read_gbps);
    CHECK(read.memory_gbps == written.memory_gbps);
    CHECK(read.populate_gbps == written.populate_gbps);
    CHECK(read.device == written.device);
    CHECK(read.measured_unix_s == written.measured_unix_s);
    CHECK(read.source == Source::Cache);

    const std::string path = scratch_dir("rates-round-trip") + "/rates.json";
    write_rates_file(path, written);
    const LinkRates from_file = read_rates_file(path);
    CHECK(from_file.source == Source::File);
    CHECK(from_file.remote_read_gbps == 22.2);
    CHECK(describe(from_file).find("remote read 22.2") != std::string::npos);
    CHECK(describe(from_file).find("(file, NVIDIA H100 80GB HBM3, driver 580.159.04, measured 2026-") !=
          std::string::npos);
}

TEST_CASE("link rates: bad files fail with what is wrong") {
    nlohmann::json j = to_json(h100());
    SECTION("a missing rate") {
        j.erase("evict_gbps");
        CHECK(error_kind_of(j) == RatesFileError::Kind::MissingField);
        CHECK_THROWS_WITH(rates_from_json(j, Source::File, "x.json"), "rates file 'x.json': missing 'evict_gbps' (GB/s)");
    }
    SECTION("a rate of zero, below zero, or not a number") {
        for (const nlohmann::json bad : {nlohmann::json(0), nlohmann::json(-3.5), nlohmann::json("fast")}) {
            j["fetch_gbps"] = bad;
            CHECK(error_kind_of(j) == RatesFileError::Kind::BadValue);
        }
        j["fetch_gbps"] = 0;
        CHECK_THROWS_WITH(rates_from_json(j, Source::File, "x.json"),
                          Catch::Contains("'fetch_gbps' must be a positive number of GB/s, got 0"));
    }
    SECTION("another format or version, a device that is not an object, a negative time") {
        j["format"] = "something-else";
        CHECK(error_kind_of(j) == RatesFileError::Kind::BadValue);
        j = to_json(h100());
        j["version"] = 2;
        CHECK(error_kind_of(j) == RatesFileError::Kind::BadValue);
        j = to_json(h100());
        j["device"] = "H100";
        CHECK(error_kind_of(j) == RatesFileError::Kind::BadValue);
        j = to_json(h100());
        j["measured_unix_s"] = -1;
        CHECK(error_kind_of(j) == RatesFileError::Kind::BadValue);
    }
    SECTION("a cache entry without the population rate is measured again") {
        j.erase("populate_gbps");
        CHECK_THROWS_WITH(rates_from_json(j, Source::Cache, "cached.json"),
                          "rates file 'cached.json': missing 'populate_gbps' (GB/s)");
        j["populate_gbps"] = -1;
        CHECK(error_kind_of(j) == RatesFileError::Kind::BadValue);
    }
    SECTION("not an object") { CHECK(error_kind_of(nlohmann::json::array()) == RatesFileError::Kind::NotJson); }
    SECTION("only the rates: the rest is optional") {
        const nlohmann::json bare = {{"fetch_gbps", 1}, {"evict_gbps", 2}, {"remote_write_gbps", 3},
                                     {"remote_read_gbps", 4}, {"memory_gbps", 5}};
        const LinkRates r = rates_from_json(bare, Source::File, "bare.json");
        CHECK(r.memory_gbps == 5);
        // Without a population rate, fresh memory costs a fetch, as before it was measured.
        CHECK(r.populate_gbps == 1);
        CHECK(r.device.uuid.empty());
        CHECK(r.measured_unix_s == 0);
    }
    SECTION("files that are not JSON, or absent") {
        const std::string dir = scratch_dir("rates-bad-files");
        std::ofstream(dir + "/broken.json") << "{\"fetch_gbps\": ";
        try {
            read_rates_file(dir + "/broken.json");
            FAIL("read");
        } catch (const RatesFileError& e) {
            CHECK(e.kind() == RatesFileError::Kind::NotJson);
            CHECK(std::string(e.what()).find("broken.json': not JSON") != std::string::npos);
        }
        try {
            read_rates_file(dir + "/absent.json");
            FAIL("read");
        } catch (const RatesFileError& e) {
            CHECK(e.kind() == RatesFileError::Kind::Unreadable);
        }
    }
}

TEST_CASE("rate cache: UVMP_CACHE_DIR, else XDG_CACHE_HOME, else HOME, one file a device and driver") {
    g_env = {{"HOME", "/home/u"}};
    CHECK(cache_directory(&fake_getenv) == "/home/u/.cache/uvmprefetch");
    g_env["XDG_CACHE_HOME"] = "/xdg";
    CHECK(cache_directory(&fake_getenv) == "/xdg/uvmprefetch");
    g_env["UVMP_CACHE_DIR"] = "/mine";
    CHECK(cache_directory(&fake_getenv) == "/mine");
    g_env["UVMP_CACHE_DIR"] = ""; // set but empty counts as unset
    CHECK(cache_directory(&fake_getenv) == "/xdg/uvmprefetch");
    g_env.clear();
    CHECK(cache_directory(&fake_getenv).empty());

    const DeviceIdentity device = h100().device;
    const std::string path = cache_file_path("/c", device);
    CHECK(path == "/c/link-rates-GPU-0f1e2d3c-aaaa-bbbb-cccc-000000000001-driver-580.159.04.json");
    DeviceIdentity other_driver = device;
    other_driver.driver_version = "590.1";
    CHECK(cache_file_path("/c", other_driver) != path);
    CHECK(cache_file_path("/c", {"x", "GPU/../a b", "1"}) == "/c/link-rates-GPU_.._a_b-driver-1.json");
}

TEST_CASE("rate cache: stale when old, from the future, or of another device or driver") {
    const LinkRates cached = h100();
    const int64_t measured = cached.measured_unix_s;
    CHECK_FALSE(stale_reason(cached, cached.device, measured + 3600));
    CHECK_FALSE(stale_reason(cached, cached.device, measured + kMaxCacheAgeSeconds));
    CHECK(stale_reason(cached, cached.device, measured + kMaxCacheAgeSeconds + 1));
    CHECK(stale_reason(cached, cached.device, measured - 10));
    DeviceIdentity upgraded = cached.device;
    upgraded.driver_version = "590.10";
    CHECK(stale_reason(cached, upgraded, measured + 1)->find("driver 580.159.04, now 590.10") != std::string::npos);
    DeviceIdentity other = cached.device;
    other.uuid = "GPU-other";
    CHECK(stale_reason(cached, other, measured + 1));
    LinkRates untimed = cached;
    untimed.measured_unix_s = 0;
    CHECK(stale_reason(untimed, cached.device, measured));
}

TEST_CASE("rate cache: stored, loaded back as the cache's, probed again when stale") {
    g_env = {{"UVMP_CACHE_DIR", scratch_dir("rates-cache")}};
    const LinkRates probed = h100();
    const DeviceIdentity device = probed.device;
    CHECK_FALSE(load_cached_rates(&fake_getenv, device, probed.measured_unix_s).rates);
    std::string error;
    const auto path = store_cached_rates(&fake_getenv, probed, &error);
    REQUIRE(path);
    CHECK(std::filesystem::exists(*path));
    const CacheLookup hit = load_cached_rates(&fake_getenv, device, probed.measured_unix_s + 60);
    REQUIRE(hit.rates);
    CHECK(hit.rates->source == Source::Cache);
    CHECK(hit.rates->fetch_gbps == 38.4);
    const CacheLookup old = load_cached_rates(&fake_getenv, device, probed.measured_unix_s + 2 * kMaxCacheAgeSeconds);
    CHECK_FALSE(old.rates);
    CHECK(old.why_not.find("stale") != std::string::npos);
    std::ofstream(*path) << "garbage";
    const CacheLookup broken = load_cached_rates(&fake_getenv, device, probed.measured_unix_s + 60);
    CHECK_FALSE(broken.rates);
    CHECK(broken.why_not.find("not JSON") != std::string::npos);
    g_env.clear();
    CHECK_FALSE(store_cached_rates(&fake_getenv, probed, &error));
    CHECK(error.find("no cache directory") != std::string::npos);
}

TEST_CASE("rate refiner: converges to the rate the moves run at, ignoring tiny moves and outliers") {
    RateRefiner refiner;
    constexpr uint64_t kPiece = 64ull << 20;
    auto seconds_at = [](uint64_t bytes, double gbps) { return static_cast<double>(bytes) / (gbps * 1e9); };
    const LinkRates probed = h100();
    // Too few moves: the probe's figure stands.
    CHECK(refiner.observe(Move::Fetch, kPiece, seconds_at(kPiece, 30)));
    CHECK_FALSE(refiner.estimate_gbps(Move::Fetch));
    CHECK(refiner.refined(probed).source == Source::Probe);
    // Small moves, and moves with no time, do not count, however slow.
    for (int i = 0; i < 100; ++i) CHECK_FALSE(refiner.observe(Move::Fetch, 2ull << 20, seconds_at(2ull << 20, 5)));
    CHECK_FALSE(refiner.observe(Move::Fetch, kPiece, 0));
    CHECK(refiner.moves_counted(Move::Fetch) == 1);
    for (int i = 0; i < 40; ++i) {
        refiner.observe(Move::Fetch, kPiece, seconds_at(kPiece, 30));
        // One move in ten stalls.
        refiner.observe(Move::Fetch, kPiece, seconds_at(kPiece, i % 10 == 0 ? 1 : 30));
        refiner.observe(Move::Evict, kPiece, seconds_at(kPiece, 11));
    }
    REQUIRE(refiner.estimate_gbps(Move::Fetch));
    CHECK(*refiner.estimate_gbps(Move::Fetch) == Approx(30));
    CHECK(*refiner.estimate_gbps(Move::Evict) == Approx(11));
    // The link changes: the estimate follows once most of the window sees it.
    for (int i = 0; i < 15; ++i) refiner.observe(Move::Fetch, kPiece, seconds_at(kPiece, 36));
    CHECK(*refiner.estimate_gbps(Move::Fetch) == Approx(36));
    const LinkRates refined = refiner.refined(probed);
    CHECK(refined.source == Source::Refined);
    CHECK(refined.fetch_gbps == Approx(36));
    CHECK(refined.evict_gbps == Approx(11));
    CHECK(refined.remote_read_gbps == probed.remote_read_gbps);
    CHECK(refined.device == probed.device);
}

TEST_CASE("fastest moves: each moving rate no slower than the one the run started from") {
    const LinkRates probed = h100();
    RateRefiner refiner;
    constexpr uint64_t kPiece = 64ull << 20;
    auto seconds_at = [](uint64_t bytes, double gbps) { return static_cast<double>(bytes) / (gbps * 1e9); };
    // Evictions beside faults run far below the probe's figure; fetches above it.
    for (int i = 0; i < 15; ++i) {
        refiner.observe(Move::Evict, kPiece, seconds_at(kPiece, probed.evict_gbps / 3));
        refiner.observe(Move::Fetch, kPiece, seconds_at(kPiece, probed.fetch_gbps + 5));
    }
    const LinkRates refined = refiner.refined(probed);
    REQUIRE(refined.source == Source::Refined);
    REQUIRE(refined.evict_gbps == Approx(probed.evict_gbps / 3));

    const LinkRates fastest = fastest_moves(refined, probed);
    CHECK(fastest.evict_gbps == probed.evict_gbps);
    CHECK(fastest.fetch_gbps == Approx(probed.fetch_gbps + 5));
    // The rest is the current figures', source included.
    CHECK(fastest.remote_read_gbps == refined.remote_read_gbps);
    CHECK(fastest.populate_gbps == refined.populate_gbps);
    CHECK(fastest.source == Source::Refined);
    // Nothing refined: the base itself.
    const LinkRates same = fastest_moves(probed, probed);
    CHECK(same.evict_gbps == probed.evict_gbps);
    CHECK(same.fetch_gbps == probed.fetch_gbps);
}

TEST_CASE("streaming line: derived from measured rates, 600 without them") {
    LinkRates h200;
    h200.source = Source::Probe;
    CHECK(break_even_reads(h200) == Approx(51.2 * (1 / 15.0 + 1 / 49.0)));
    CHECK(break_even_reads(h200) == Approx(4.46).epsilon(0.01));
    CHECK(streaming_line_gbps(h200) == Approx(1077).epsilon(0.01));
    CHECK(break_even_reads(h100()) == Approx(2.22).epsilon(0.01));
    CHECK(streaming_line_gbps(h100()) == Approx(1507).epsilon(0.01));
    // Traces simulated without rates keep the line they were always simulated with.
    CHECK(streaming_line_gbps(LinkRates{}) == 600);
    CHECK(uvmp::placement::kDefaultStreamingGbps == 600);

    const StreamingSetting automatic;
    CHECK(automatic.text() == "auto");
    CHECK(automatic.line_gbps(h100()) == Approx(1507).epsilon(0.01));
    CHECK(automatic.line_gbps(LinkRates{}) == 600);
    CHECK_FALSE(std::is_convertible_v<StreamingSetting, double>);
    const StreamingSetting given{400.0};
    CHECK(given.text() == "400");
    CHECK(given.line_gbps(h100()) == 400);
}

TEST_CASE("UVMP_STREAMING_GBPS: auto by default, a number overrides") {
    g_env.clear();
    uvmp::Config c;
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    CHECK_FALSE(c.streaming_gbps.explicit_gbps);
    CHECK(c.streaming_gbps.line_gbps(h100()) == Approx(1507).epsilon(0.01));
    g_env = {{"UVMP_STREAMING_GBPS", "auto"}};
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    CHECK_FALSE(c.streaming_gbps.explicit_gbps);
    g_env = {{"UVMP_STREAMING_GBPS", "750"}};
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    CHECK(c.streaming_gbps.line_gbps(h100()) == 750);
    g_env = {{"UVMP_STREAMING_GBPS", "automatic"}};
    const auto err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("expected auto or a positive number") != std::string::npos);
    g_env.clear();
}

TEST_CASE("link model: the reference rates give the reference curves exactly, measured ones scale them") {
    const uvmp::LinkModel reference;
    REQUIRE(reference.prefetch_curve.size() == 4);
    CHECK(reference.prefetch_curve[0].gbps == 18.0);
    CHECK(reference.prefetch_curve[1].gbps == 26.0);
    CHECK(reference.prefetch_curve[2].gbps == 38.0);
    CHECK(reference.peak_prefetch_gbps() == 48.0);
    CHECK(reference.evict_gbps(2ull << 20) == 11.5);
    CHECK(reference.peak_evict_gbps() == 16.0);
    CHECK(reference.demand_fault_gbps == 9.0);
    CHECK(reference.concurrent_gbps == 23.0);

    const uvmp::LinkModel measured(h100());
    CHECK(measured.peak_prefetch_gbps() == Approx(48.0 * 38.4 / 49.0));
    CHECK(measured.prefetch_gbps(2ull << 20) == Approx(18.0 * 38.4 / 49.0));
    CHECK(measured.peak_evict_gbps() == Approx(16.0 * 13.5 / 15.0));
    CHECK(measured.demand_fault_gbps == Approx(9.0 * 38.4 / 49.0));
    CHECK(measured.concurrent_gbps == Approx(23.0 * (38.4 + 13.5) / 64.0));
}

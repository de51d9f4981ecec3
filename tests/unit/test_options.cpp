#include "core/config/options.h"
#include "core/placement/remote_trial.h"
#include "core/placement/timing_prior.h"
#include "core/util/size_parse.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

namespace {

std::map<std::string, std::string> g_env;

const char* fake_getenv(const char* name) {
    auto it = g_env.find(name);
    return it == g_env.end() ? nullptr : it->second.c_str();
}

} // namespace

TEST_CASE("sizes parse with binary suffixes") {
    using uvmp::parse_size;
    CHECK(parse_size("4096") == 4096u);
    CHECK(parse_size("4K") == 4096u);
    CHECK(parse_size("512M") == 512ull << 20);
    CHECK(parse_size("24G") == 24ull << 30);
    CHECK(parse_size("24g") == 24ull << 30);
    CHECK(parse_size("1.5GiB") == 3ull << 29);
    CHECK(parse_size("2TB") == 2ull << 40);
    CHECK(parse_size(" 8 G ") == 8ull << 30);
    CHECK_FALSE(parse_size(""));
    CHECK_FALSE(parse_size("abc"));
    CHECK_FALSE(parse_size("-1G"));
    CHECK_FALSE(parse_size("12X"));
    CHECK_FALSE(parse_size("1.2.3G"));
    CHECK_FALSE(parse_size("99999999999P"));
}

TEST_CASE("percentages resolve against a reference") {
    auto p = uvmp::parse_size_or_percent("50%");
    REQUIRE(p);
    CHECK(p->is_percent);
    CHECK(p->resolve(1000) == 500u);
    auto s = uvmp::parse_size_or_percent("1G");
    REQUIRE(s);
    CHECK(s->resolve(12345) == 1ull << 30);
    CHECK_FALSE(uvmp::parse_size_or_percent("0%"));
    CHECK_FALSE(uvmp::parse_size_or_percent("x%"));
    // More than all of the largest reference saturates.
    auto most = uvmp::parse_size_or_percent("800%");
    REQUIRE(most);
    CHECK(most->resolve(~0ull) == ~0ull);
    CHECK(most->resolve(1ull << 40) == 8ull << 40);
}

TEST_CASE("format_size is readable") {
    CHECK(uvmp::format_size(17) == "17 B");
    CHECK(uvmp::format_size(3ull << 29) == "1.5 GiB");
}

TEST_CASE("config takes defaults, then the environment") {
    g_env.clear();
    uvmp::Config c;
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    CHECK(c.enable);
    CHECK_FALSE(c.budget);
    CHECK(c.reserve == 1ull << 30);
    CHECK(c.values.size() == uvmp::option_table().size());

    g_env = {{"UVMP_BUDGET", "80%"}, {"UVMP_POLICY", "demand-lru"}, {"UVMP_ENABLE", "off"}};
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    REQUIRE(c.budget);
    CHECK(c.budget->is_percent);
    CHECK(c.policy == uvmp::ResidencyPolicy::DemandLru);
    CHECK_FALSE(c.enable);
}

TEST_CASE("a bad value names the variable, the value and what is accepted") {
    g_env = {{"UVMP_BUDGET", "abc"}};
    uvmp::Config c;
    auto err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("UVMP_BUDGET") != std::string::npos);
    CHECK(err->message.find("'abc'") != std::string::npos);
    CHECK(err->message.find("percentage") != std::string::npos);

    g_env = {{"UVMP_POLICY", "fastest"}};
    err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("none, demand-lru, learned") != std::string::npos);
}

TEST_CASE("the config file is read, and the environment wins over it") {
    const std::string path = "uvmp_test_config.toml";
    {
        std::ofstream f(path);
        f << "budget = \"12G\"\npolicy = \"demand-lru\"\nsummary = true\n";
    }
    g_env = {{"UVMP_CONFIG", path}, {"UVMP_POLICY", "none"}};
    uvmp::Config c;
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    REQUIRE(c.budget);
    CHECK(c.budget->bytes == 12ull << 30);
    CHECK(c.policy == uvmp::ResidencyPolicy::None);
    CHECK(c.summary);

    {
        std::ofstream f(path);
        f << "budjet = \"12G\"\n";
    }
    auto err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("unknown key 'budjet'") != std::string::npos);

    {
        std::ofstream f(path);
        f << "budget = = 3\n";
    }
    err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("cannot read the config file") != std::string::npos);
    std::remove(path.c_str());
}

TEST_CASE("path patterns expand pid and rank") {
    g_env = {{"LOCAL_RANK", "3"}};
    CHECK(uvmp::expand_path_pattern("t-%p-%r.uvmt", 42, &fake_getenv) == "t-42-3.uvmt");
    g_env = {};
    CHECK(uvmp::expand_path_pattern("a%%b-%r", 1, &fake_getenv) == "a%b-0");
}

TEST_CASE("the process's rank: RANK, else LOCAL_RANK, a number or nothing") {
    g_env = {{"RANK", "5"}, {"LOCAL_RANK", "1"}};
    CHECK(uvmp::process_rank(&fake_getenv) == 5);
    g_env = {{"LOCAL_RANK", "1"}};
    CHECK(uvmp::process_rank(&fake_getenv) == 1);
    g_env = {{"RANK", "x1"}};
    CHECK_FALSE(uvmp::process_rank(&fake_getenv));
    g_env = {{"RANK", "-2"}, {"LOCAL_RANK", "2"}};
    CHECK(uvmp::process_rank(&fake_getenv) == 2);
    g_env = {};
    CHECK_FALSE(uvmp::process_rank(&fake_getenv));
}

TEST_CASE("every option has an env name, a key and help") {
    for (const auto& spec : uvmp::option_table()) {
        CHECK(spec.env.substr(0, 5) == "UVMP_");
        CHECK_FALSE(spec.key.empty());
        CHECK_FALSE(spec.help.empty());
        if (!spec.default_text.empty())
            CHECK_FALSE(uvmp::validate_option_value(spec, spec.default_text, spec.env));
        CHECK(uvmp::find_option(spec.env) == &spec);
    }
}

TEST_CASE("durations parse with units, a plain number meaning seconds") {
    using uvmp::parse_duration_ns;
    CHECK(parse_duration_ns("10s") == 10'000'000'000ull);
    CHECK(parse_duration_ns("500ms") == 500'000'000ull);
    CHECK(parse_duration_ns("2m") == 120'000'000'000ull);
    CHECK(parse_duration_ns("2min") == 120'000'000'000ull);
    CHECK(parse_duration_ns("1h") == 3'600'000'000'000ull);
    CHECK(parse_duration_ns("250us") == 250'000ull);
    CHECK(parse_duration_ns("100ns") == 100ull);
    CHECK(parse_duration_ns("3") == 3'000'000'000ull);
    CHECK(parse_duration_ns("0") == 0ull);
    CHECK(parse_duration_ns("1.5s") == 1'500'000'000ull);
    CHECK(parse_duration_ns("0.1") == 100'000'000ull);
    CHECK(parse_duration_ns(".5m") == 30'000'000'000ull);
    CHECK(parse_duration_ns(" 10 S ") == 10'000'000'000ull);
    CHECK_FALSE(parse_duration_ns(""));
    CHECK_FALSE(parse_duration_ns("s"));
    CHECK_FALSE(parse_duration_ns("-1s"));
    CHECK_FALSE(parse_duration_ns("10x"));
    CHECK_FALSE(parse_duration_ns("1.2.3s"));
    CHECK_FALSE(parse_duration_ns("1e3"));
    CHECK_FALSE(parse_duration_ns("10 s s"));
    CHECK_FALSE(parse_duration_ns("99999999999h"));
    CHECK_FALSE(parse_duration_ns("99999999999999999999"));
}

TEST_CASE("the pool's options: defaults, values and the slab size rule") {
    g_env.clear();
    uvmp::Config c;
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    CHECK(c.pool_slab_size == 1ull << 30);
    CHECK(c.pool_retain == 0u);
    CHECK(c.pool_release_after == 10'000'000'000ull);

    g_env = {{"UVMP_POOL_SLAB_SIZE", "64M"}, {"UVMP_POOL_RETAIN", "1G"}, {"UVMP_POOL_RELEASE_AFTER", "500ms"}};
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    CHECK(c.pool_slab_size == 64ull << 20);
    CHECK(c.pool_retain == 1ull << 30);
    CHECK(c.pool_release_after == 500'000'000ull);

    for (const char* bad : {"3M", "1M", "0", "2049K"}) {
        g_env = {{"UVMP_POOL_SLAB_SIZE", bad}};
        auto err = uvmp::load_config(c, &fake_getenv);
        REQUIRE(err);
        CHECK(err->message.find("UVMP_POOL_SLAB_SIZE") != std::string::npos);
        CHECK(err->message.find("'" + std::string(bad) + "'") != std::string::npos);
        CHECK(err->message.find("multiple of 2M") != std::string::npos);
    }
    g_env = {{"UVMP_POOL_SLAB_SIZE", "big"}};
    auto err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("expected a size") != std::string::npos);

    g_env = {{"UVMP_POOL_RELEASE_AFTER", "soon"}};
    err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("UVMP_POOL_RELEASE_AFTER") != std::string::npos);
    CHECK(err->message.find("'soon'") != std::string::npos);
    CHECK(err->message.find("a duration such as 10s, 500ms or 2m") != std::string::npos);

    // In the config file: a bare number of seconds; the slab size rule names the key.
    const std::string path = "uvmp_test_pool_config.toml";
    {
        std::ofstream f(path);
        f << "pool_release_after = 30\npool_retain = \"512M\"\n";
    }
    g_env = {{"UVMP_CONFIG", path}};
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    CHECK(c.pool_release_after == 30'000'000'000ull);
    CHECK(c.pool_retain == 512ull << 20);
    {
        std::ofstream f(path);
        f << "pool_slab_size = \"6M\"\n";
    }
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    CHECK(c.pool_slab_size == 6ull << 20);
    {
        std::ofstream f(path);
        f << "pool_slab_size = \"5M\"\n";
    }
    err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("key 'pool_slab_size'") != std::string::npos);
    CHECK(err->message.find("multiple of 2M") != std::string::npos);
    std::remove(path.c_str());
}

TEST_CASE("the chunk size is a power of two of at least 2M, and the slab size a multiple of it") {
    uvmp::Config c;
    for (const char* good : {"2M", "4M", "64M", "1G"}) {
        g_env = {{"UVMP_CHUNK_SIZE", good}, {"UVMP_POOL_SLAB_SIZE", "1G"}};
        INFO(good);
        CHECK_FALSE(uvmp::load_config(c, &fake_getenv));
        CHECK(c.chunk_size == *uvmp::parse_size(good));
    }
    for (const char* bad : {"3M", "0", "1M", "4K", "6M", "2049K"}) {
        g_env = {{"UVMP_CHUNK_SIZE", bad}};
        INFO(bad);
        auto err = uvmp::load_config(c, &fake_getenv);
        REQUIRE(err);
        CHECK(err->message == "invalid UVMP_CHUNK_SIZE='" + std::string(bad) +
                                  "': the chunk size must be a power of two of at least 2M, such as 2M, 4M or 64M");
    }

    // The default 1G slab holds whole chunks of up to 1G; a 6M slab no 4M chunks.
    g_env = {{"UVMP_CHUNK_SIZE", "2G"}};
    auto err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("UVMP_POOL_SLAB_SIZE='1G' with UVMP_CHUNK_SIZE='2G'") != std::string::npos);
    CHECK(err->message.find("multiple of the chunk size") != std::string::npos);
    g_env = {{"UVMP_CHUNK_SIZE", "4M"}, {"UVMP_POOL_SLAB_SIZE", "6M"}};
    err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("UVMP_POOL_SLAB_SIZE='6M' with UVMP_CHUNK_SIZE='4M'") != std::string::npos);
    g_env = {{"UVMP_CHUNK_SIZE", "4M"}, {"UVMP_POOL_SLAB_SIZE", "8M"}};
    CHECK_FALSE(uvmp::load_config(c, &fake_getenv));

    // In the config file, the rule names the key.
    const std::string path = "uvmp_test_chunk_config.toml";
    {
        std::ofstream f(path);
        f << "chunk_size = \"3M\"\n";
    }
    g_env = {{"UVMP_CONFIG", path}};
    err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("key 'chunk_size' in " + path + "='3M'") != std::string::npos);
    CHECK(err->message.find("power of two of at least 2M") != std::string::npos);
    std::remove(path.c_str());
}

TEST_CASE("the streaming rate: a positive number, from the environment or the file") {
    using uvmp::parse_rate;
    CHECK(parse_rate("1600") == 1600.0);
    CHECK(parse_rate(" 400.5 ") == 400.5);
    CHECK(parse_rate(".5") == 0.5);
    for (const char* bad : {"", "0", "-1", "fast", "1e3", "10 GB/s", "inf", "nan"}) CHECK_FALSE(parse_rate(bad));

    g_env.clear();
    uvmp::Config c;
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    CHECK(c.streaming_gbps.line_gbps(uvmp::rates::LinkRates{}) == 600.0);
    // The option's default is the one the prior and the trial take when no Config reaches them.
    CHECK(c.streaming_gbps.line_gbps(uvmp::rates::LinkRates{}) == uvmp::placement::kDefaultStreamingGbps);
    CHECK(uvmp::placement::TimingPriorConfig{}.streaming_gbps == uvmp::placement::kDefaultStreamingGbps);
    CHECK(uvmp::placement::TrialConfig{}.streaming_gbps == uvmp::placement::kDefaultStreamingGbps);
    g_env = {{"UVMP_STREAMING_GBPS", "400"}};
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    CHECK(c.streaming_gbps.line_gbps(uvmp::rates::LinkRates{}) == 400.0);
    g_env = {{"UVMP_STREAMING_GBPS", "0"}};
    const auto err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("UVMP_STREAMING_GBPS='0'") != std::string::npos);
    CHECK(err->message.find("a positive number") != std::string::npos);

    const std::string path = "uvmp_test_streaming_config.toml";
    {
        std::ofstream f(path);
        f << "streaming_gbps = 250.5\n";
    }
    g_env = {{"UVMP_CONFIG", path}};
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    CHECK(c.streaming_gbps.line_gbps(uvmp::rates::LinkRates{}) == 250.5);
    std::remove(path.c_str());
}

TEST_CASE("a budget of 0 is refused with what to do instead") {
    uvmp::Config c;
    for (const char* zero : {"0", "0G", "0.0001"}) {
        g_env = {{"UVMP_BUDGET", zero}};
        INFO(zero);
        auto err = uvmp::load_config(c, &fake_getenv);
        REQUIRE(err);
        CHECK(err->message.find("invalid UVMP_BUDGET='" + std::string(zero) + "'") != std::string::npos);
        CHECK(err->message.find("leave the budget unset") != std::string::npos);
    }
    // Unset (empty) still means no budget, and the smallest size is a budget.
    g_env = {{"UVMP_BUDGET", ""}};
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    CHECK_FALSE(c.budget);
    g_env = {{"UVMP_BUDGET", "1"}};
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    REQUIRE(c.budget);
    CHECK(c.budget->bytes == 1u);
}

TEST_CASE("an error is one line, whatever the value or the file held") {
    const std::string path = "uvmp_test_one_line_config.toml";
    uvmp::Config c;
    g_env = {{"UVMP_CONFIG", path}};
    // A value with a line break, and the TOML parser's own description, which quotes what it read.
    for (const char* text : {"budget = \"1\\nX\"\n", "verbose = f\n\n", "policy = \"a\\tb\\u0001\"\n"}) {
        {
            std::ofstream f(path);
            f << text;
        }
        INFO(text);
        auto err = uvmp::load_config(c, &fake_getenv);
        REQUIRE(err);
        CHECK(err->message.find_first_of("\n\r\t\x01") == std::string::npos);
    }
    g_env = {{"UVMP_CONFIG", path}};
    {
        std::ofstream f(path);
        f << "budget = \"1\\nX\"\n";
    }
    CHECK(uvmp::load_config(c, &fake_getenv)->message.find("'1\\nX'") != std::string::npos);
    std::remove(path.c_str());

    g_env = {{"UVMP_LOG_LEVEL", "loud\nest"}};
    auto err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("UVMP_LOG_LEVEL='loud\\nest'") != std::string::npos);
}

TEST_CASE("a config file the TOML parser would mishandle is refused, naming the line") {
    const std::string path = "uvmp_test_non_ascii_config.toml";
    uvmp::Config c;
    g_env = {{"UVMP_CONFIG", path}};
    // U+00E9 after a key, U+FEFE where whitespace may come: toml++ 3.3's whitespace table has no answer for them.
    for (const char* text : {"summary = true\nbudg\xc3\xa9t = \"1G\"\n", "enable \xef\xbb\xbe= true\n"}) {
        {
            std::ofstream f(path, std::ios::binary);
            f << text;
        }
        INFO(text);
        auto err = uvmp::load_config(c, &fake_getenv);
        REQUIRE(err);
        CHECK(err->message.find("holds a character outside ASCII") != std::string::npos);
    }
    CHECK(uvmp::load_config(c, &fake_getenv)->message.find("line 1 ") != std::string::npos);
    // Characters it handles stay allowed: U+201C in a string, U+3000 (ideographic space).
    {
        std::ofstream f(path, std::ios::binary);
        f << "log_file = \"\xe2\x80\x9cjob\xe2\x80\x9d.log\"\n";
    }
    REQUIRE_FALSE(uvmp::load_config(c, &fake_getenv));
    CHECK(c.log_file == "\xe2\x80\x9cjob\xe2\x80\x9d.log");
    g_env = {{"UVMP_CONFIG", "no-such-file.toml"}};
    auto err = uvmp::load_config(c, &fake_getenv);
    REQUIRE(err);
    CHECK(err->message.find("cannot read the config file 'no-such-file.toml'") != std::string::npos);
    std::remove(path.c_str());
}

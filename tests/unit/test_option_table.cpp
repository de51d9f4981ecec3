// The option table is the one place an option is declared: Config's fields and
// their defaults must follow from its rows, with nothing declared beside them.
#include "core/config/options.h"

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

namespace {

std::map<std::string, std::string> g_variables;

const char* variable(const char* name) {
    const auto it = g_variables.find(name);
    return it == g_variables.end() ? nullptr : it->second.c_str();
}

} // namespace

TEST_CASE("every default of Config is its table row's default") {
    const uvmp::Config defaults;
    for (const uvmp::OptionSpec& spec : uvmp::option_table()) {
        INFO(spec.key);
        uvmp::Config row_default;
        spec.store(row_default, spec, spec.default_text);
        CHECK(spec.same(defaults, row_default));
    }
}

TEST_CASE("the library given no option runs with a default-constructed Config") {
    g_variables.clear();
    uvmp::Config loaded;
    REQUIRE_FALSE(uvmp::load_config(loaded, &variable));
    const uvmp::Config defaults;
    for (const uvmp::OptionSpec& spec : uvmp::option_table()) {
        INFO(spec.key);
        CHECK(spec.same(loaded, defaults));
    }
    CHECK(defaults.pool_slab_size == 1ull << 30);
}

TEST_CASE("every row sets a field of its own, and every field of Config is set by a row") {
    const uvmp::Config config;
    std::set<const void*> row_fields;
    for (const uvmp::OptionSpec& spec : uvmp::option_table()) {
        INFO(spec.key);
        CHECK(row_fields.insert(spec.field(config)).second);
    }
    // One name a field: a field added to Config without its row here stops this file compiling.
    const auto& [enable, budget, reserve, allow_physical_oversubscription, host_reserve, host_memory_root,
                 policy, populate, log_level, log_file,
                 summary, stats_file, trace_out, trace_timing, trace_buffer, trace_in, host_homes, link_rates, streaming_gbps,
                 remote_trial, earlier_homes, host_pages_ahead, chunk_size, pool_slab_size, pool_retain, pool_release_after, pool_placement,
                 step_layout, hide_managed, verbose, framework_settings, values] = config;
    (void)values; // the options' texts, filled by load_config, not an option
    const std::set<const void*> option_fields = {
        &enable,      &budget,         &reserve,      &allow_physical_oversubscription,
        &host_reserve, &host_memory_root,
        &policy,      &populate,       &log_level,    &log_file,
        &summary,     &stats_file,     &trace_out,    &trace_timing,
        &trace_buffer, &trace_in,      &host_homes,   &link_rates, &streaming_gbps,
        &remote_trial, &earlier_homes, &host_pages_ahead, &chunk_size,    &pool_slab_size, &pool_retain,
        &pool_release_after, &pool_placement, &step_layout, &hide_managed,
        &verbose,     &framework_settings};
    CHECK(row_fields == option_fields);
}

TEST_CASE("a choice sets the value its text names, whatever the enum's order") {
    uvmp::Config c;
    g_variables = {{"UVMP_STEP_LAYOUT", "off"}, {"UVMP_HOST_HOMES", "on"}, {"UVMP_POOL_PLACEMENT", "best-fit"},
                 {"UVMP_POPULATE", "off"}, {"UVMP_POLICY", "none"}, {"UVMP_LOG_LEVEL", "trace"}};
    REQUIRE_FALSE(uvmp::load_config(c, &variable));
    CHECK(c.step_layout == uvmp::LayoutChoice::Off);
    CHECK(c.host_homes == uvmp::HostHomes::On);
    CHECK(c.pool_placement == uvmp::PoolPlacement::BestFit);
    CHECK(c.populate == uvmp::Populate::Off);
    CHECK(c.policy == uvmp::ResidencyPolicy::None);
    CHECK(c.log_level == uvmp::LogLevel::Trace);

    g_variables = {{"UVMP_STEP_LAYOUT", "on"}, {"UVMP_HOST_HOMES", "off"}, {"UVMP_POLICY", "demand-lru"},
                 {"UVMP_LOG_LEVEL", "off"}};
    REQUIRE_FALSE(uvmp::load_config(c, &variable));
    CHECK(c.step_layout == uvmp::LayoutChoice::On);
    CHECK(c.host_homes == uvmp::HostHomes::Off);
    CHECK(c.pool_placement == uvmp::PoolPlacement::OverDead);
    CHECK(c.populate == uvmp::Populate::Prefetch);
    CHECK(c.policy == uvmp::ResidencyPolicy::DemandLru);
    CHECK(c.log_level == uvmp::LogLevel::Off);

    const uvmp::Config defaults;
    CHECK(defaults.step_layout == uvmp::LayoutChoice::Auto);
    CHECK(defaults.host_homes == uvmp::HostHomes::Auto);
    CHECK(defaults.policy == uvmp::ResidencyPolicy::Learned);
    CHECK(defaults.log_level == uvmp::LogLevel::Warn);
}

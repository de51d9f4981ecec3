#include "core/config/options.h"
#include "tools/uvmrun/framework_settings.h"

#include <catch2/catch.hpp>

#include <map>
#include <string>

using uvmp::tools::FrameworkPlan;
using uvmp::tools::FrameworkSettingsMode;

namespace {

FrameworkPlan plan_for(FrameworkSettingsMode mode, const std::map<std::string, std::string>& job_env) {
    return uvmp::tools::plan_framework_settings(mode, [&](const std::string& name) -> const std::string* {
        auto it = job_env.find(name);
        return it == job_env.end() ? nullptr : &it->second;
    });
}

} // namespace

TEST_CASE("uvmrun sets PyTorch's stream-ordered backend and announces it when the job chose nothing") {
    const FrameworkPlan plan = plan_for(FrameworkSettingsMode::Auto, {{"PATH", "/usr/bin"}});
    REQUIRE(plan.set.size() == 1);
    CHECK(plan.set[0].name == "PYTORCH_CUDA_ALLOC_CONF");
    CHECK(plan.set[0].value == "backend:cudaMallocAsync");
    CHECK(plan.announce == "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync");
    CHECK(plan.python_site);
    CHECK_FALSE(plan.warning);
}

TEST_CASE("a user's PyTorch allocator setting, under either name, is left alone") {
    for (const char* name : {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"}) {
        for (const char* value : {"max_split_size_mb:128", "backend:native", ""}) {
            for (FrameworkSettingsMode mode : {FrameworkSettingsMode::Auto, FrameworkSettingsMode::Off}) {
                INFO(name << "=" << value);
                const FrameworkPlan plan = plan_for(mode, {{name, value}});
                CHECK(plan.set.empty());
                CHECK(plan.announce.empty());
                CHECK_FALSE(plan.python_site);
                CHECK_FALSE(plan.warning);
            }
        }
    }
}

TEST_CASE("off keeps PyTorch's caching allocator convertible and announces nothing") {
    const FrameworkPlan plan = plan_for(FrameworkSettingsMode::Off, {});
    REQUIRE(plan.set.size() == 1);
    CHECK(plan.set[0].name == "PYTORCH_CUDA_ALLOC_CONF");
    CHECK(plan.set[0].value == "expandable_segments:False");
    CHECK(plan.announce.empty());
    CHECK_FALSE(plan.python_site);
}

TEST_CASE("expandable segments asked for by the user are warned about, naming the variable PyTorch reads") {
    const FrameworkPlan spaced = plan_for(FrameworkSettingsMode::Auto, {{"PYTORCH_ALLOC_CONF", "expandable_segments: True"}});
    REQUIRE(spaced.warning);
    CHECK(spaced.warning->starts_with("PYTORCH_ALLOC_CONF asks for expandable segments"));
    CHECK(spaced.set.empty());

    // PyTorch reads the older name first, so only its value counts when both are set.
    const FrameworkPlan both = plan_for(FrameworkSettingsMode::Auto,
                                        {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False"},
                                         {"PYTORCH_ALLOC_CONF", "expandable_segments:True"}});
    CHECK_FALSE(both.warning);
    const FrameworkPlan old_name = plan_for(FrameworkSettingsMode::Off,
                                            {{"PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:64,expandable_segments:True"}});
    REQUIRE(old_name.warning);
    CHECK(old_name.warning->starts_with("PYTORCH_CUDA_ALLOC_CONF asks"));
}

TEST_CASE("the framework settings mode is auto or off") {
    CHECK(uvmp::tools::parse_framework_settings_mode("auto") == FrameworkSettingsMode::Auto);
    CHECK(uvmp::tools::parse_framework_settings_mode("off") == FrameworkSettingsMode::Off);
    CHECK_FALSE(uvmp::tools::parse_framework_settings_mode("on"));
    CHECK_FALSE(uvmp::tools::parse_framework_settings_mode(""));
}

TEST_CASE("what uvmrun announces reaches the library's configuration as text") {
    static std::map<std::string, std::string> env;
    env = {{"UVMP_FRAMEWORK_SETTINGS", plan_for(FrameworkSettingsMode::Auto, {}).announce}};
    uvmp::Config config;
    REQUIRE_FALSE(uvmp::load_config(config, [](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
    }));
    CHECK(config.framework_settings == "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync");
    const uvmp::OptionSpec* spec = uvmp::find_option("framework_settings");
    REQUIRE(spec);
    CHECK(spec->env == "UVMP_FRAMEWORK_SETTINGS");
    CHECK(spec->default_text.empty());
}

// Which framework variables uvmrun sets for a job: those that make a framework
// allocate and free each buffer through the driver's stream-ordered calls, so that
// the library sees every free, unless the user already chose. docs/frameworks.md
// says why each framework gets what it gets.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uvmp::tools {

enum class FrameworkSettingsMode { Auto, Off };

// "auto" or "off"; nullopt for anything else.
std::optional<FrameworkSettingsMode> parse_framework_settings_mode(std::string_view text);

struct EnvironmentSetting {
    std::string name;
    std::string value;
};

struct FrameworkPlan {
    // Variables to add to the job's environment.
    std::vector<EnvironmentSetting> set;
    // NAME=VALUE of the setting the library should announce (UVMP_FRAMEWORK_SETTINGS);
    // empty when uvmrun set nothing that changes what the library sees.
    std::string announce;
    // A line for uvmrun to print before the job starts, when the user's own
    // setting keeps memory from being converted.
    std::optional<std::string> warning;
    // Put uvmrun's Python directory first on PYTHONPATH: its sitecustomize takes
    // out what the stream-ordered backend cannot run (torch.compile's CUDA graphs).
    bool python_site = false;
};

// The job's variable of that name, or nullptr when it is not set.
using EnvironmentLookup = std::function<const std::string*(const std::string& name)>;

FrameworkPlan plan_framework_settings(FrameworkSettingsMode mode, const EnvironmentLookup& lookup);

} // namespace uvmp::tools

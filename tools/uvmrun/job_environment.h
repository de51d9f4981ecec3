// The environment one job runs with: the caller's environment plus the
// library's settings, validated through the option table before anything runs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace uvmp {
struct Config;
}

namespace uvmp::tools {

class JobEnvironment {
public:
    // Starts from the current process environment.
    JobEnvironment();

    void set(const std::string& name, const std::string& value) { vars_[name] = value; }
    const std::string* get(const std::string& name) const;
    bool has(const std::string& name) const { return get(name) != nullptr; }

    // Checks every UVMP_* setting (and the config file) as the library would.
    // Returns the library's error sentence, or nullopt when all is valid (and then
    // fills `effective`, when given, with the configuration the library will run with).
    std::optional<std::string> validate(Config* effective = nullptr) const;

    // NAME=VALUE strings for execve.
    std::vector<std::string> entries() const;
    // The variables that differ from the starting environment, for --dry-run.
    std::vector<std::string> changes() const;

private:
    std::map<std::string, std::string> vars_;
    std::map<std::string, std::string> original_;
};

// Where libuvmprefetch.so is: UVMP_LIBRARY, next to uvmrun, in ../lib, or in the
// build tree. Empty when not found.
std::string find_library(const std::string& uvmrun_path);

} // namespace uvmp::tools

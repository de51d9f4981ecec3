// The environment a program runs with under the library (uvmrun's job, the
// process uvmtrace replay runs itself as): the caller's environment plus the
// library's settings, validated through the option table before anything runs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
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
    // Sets the variable of the option table's key (budget -> UVMP_BUDGET).
    void set_option(std::string_view key, const std::string& value);
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

// Where libuvmprefetch.so is: UVMP_LIBRARY, next to the tool, in ../lib, or in the
// build tree. Empty when not found.
std::string find_library(const std::string& tool_path);

// uvmrun's Python directory (the one holding its sitecustomize.py): next to the
// tool, in ../share/uvmprefetch, or in the build tree. Empty when not found.
std::string find_python_site(const std::string& tool_path);

// Puts a directory first on PYTHONPATH.
void prepend_python_path(JobEnvironment& env, const std::string& directory);

// The tool's own path as find_library takes it: argv[0] when it names a file,
// else the running executable.
std::string own_path(const char* argv0);

// Puts the library first in LD_PRELOAD, ahead of whatever the caller preloads.
void preload_library(JobEnvironment& env, const std::string& library);

// execvpe with the environment; returns only when it failed, with the status a
// shell gives a command it cannot run (127 not found, 126 otherwise).
int exec_with(const JobEnvironment& env, std::vector<std::string> command);

} // namespace uvmp::tools

#include "tools/common/job_environment.h"

#include "core/config/options.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace uvmp::tools {
namespace {

// load_config reads variables through a plain function pointer; the job's
// variables are made visible to it through this one slot while it runs.
const JobEnvironment* g_validating = nullptr;

const char* lookup_for_validation(const char* name) {
    const std::string* value = g_validating ? g_validating->get(name) : nullptr;
    return value ? value->c_str() : nullptr;
}

} // namespace

JobEnvironment::JobEnvironment() {
    for (char** e = environ; e && *e; ++e) {
        const std::string entry = *e;
        const size_t eq = entry.find('=');
        if (eq == std::string::npos) continue;
        vars_[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    original_ = vars_;
}

void JobEnvironment::set_option(std::string_view key, const std::string& value) {
    const OptionSpec* spec = find_option(key);
    set(std::string(spec->env), value);
}

const std::string* JobEnvironment::get(const std::string& name) const {
    auto it = vars_.find(name);
    return it == vars_.end() ? nullptr : &it->second;
}

std::optional<std::string> JobEnvironment::validate(Config* effective) const {
    Config config;
    g_validating = this;
    auto error = load_config(config, &lookup_for_validation);
    g_validating = nullptr;
    if (error) return error->message;
    if (effective) *effective = std::move(config);
    return std::nullopt;
}

std::vector<std::string> JobEnvironment::entries() const {
    std::vector<std::string> out;
    for (const auto& [name, value] : vars_) out.push_back(name + "=" + value);
    return out;
}

std::vector<std::string> JobEnvironment::changes() const {
    std::vector<std::string> out;
    for (const auto& [name, value] : vars_) {
        auto it = original_.find(name);
        if (it == original_.end() || it->second != value) out.push_back(name + "=" + value);
    }
    return out;
}

std::string find_library(const std::string& tool_path) {
    namespace fs = std::filesystem;
    if (const char* explicit_path = std::getenv("UVMP_LIBRARY"); explicit_path && *explicit_path)
        return fs::exists(explicit_path) ? fs::absolute(explicit_path).string() : std::string();
    std::error_code ec;
    const fs::path self = fs::canonical(tool_path, ec);
    if (ec) return {};
    const fs::path dir = self.parent_path();
    for (const fs::path& candidate :
         {dir / "libuvmprefetch.so", dir / ".." / "lib" / "libuvmprefetch.so",
          dir / ".." / ".." / "src" / "preload" / "libuvmprefetch.so"}) {
        if (fs::exists(candidate, ec)) return fs::canonical(candidate, ec).string();
    }
    return {};
}

std::string find_python_site(const std::string& tool_path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path self = fs::canonical(tool_path, ec);
    if (ec) return {};
    const fs::path dir = self.parent_path();
    for (const fs::path& candidate : {dir / "python", dir / ".." / "share" / "uvmprefetch" / "python"}) {
        if (fs::exists(candidate / "sitecustomize.py", ec)) return fs::canonical(candidate, ec).string();
    }
    return {};
}

void prepend_python_path(JobEnvironment& env, const std::string& directory) {
    const std::string* path = env.get("PYTHONPATH");
    env.set("PYTHONPATH", path && !path->empty() ? directory + ":" + *path : directory);
}

std::string own_path(const char* argv0) {
    return argv0[0] == '/' || std::strchr(argv0, '/') ? argv0 : "/proc/self/exe";
}

void preload_library(JobEnvironment& env, const std::string& library) {
    const std::string* preload = env.get("LD_PRELOAD");
    env.set("LD_PRELOAD", preload && !preload->empty() ? library + " " + *preload : library);
}

int exec_with(const JobEnvironment& env, std::vector<std::string> command) {
    std::vector<std::string> entries = env.entries();
    std::vector<char*> envp, args;
    for (std::string& e : entries) envp.push_back(e.data());
    envp.push_back(nullptr);
    for (std::string& word : command) args.push_back(word.data());
    args.push_back(nullptr);
    execvpe(args[0], args.data(), envp.data());
    return errno == ENOENT ? 127 : 126;
}

} // namespace uvmp::tools

#include "tools/uvmrun/job_environment.h"

#include "core/config/options.h"

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

std::string find_library(const std::string& uvmrun_path) {
    namespace fs = std::filesystem;
    if (const char* explicit_path = std::getenv("UVMP_LIBRARY"); explicit_path && *explicit_path)
        return fs::exists(explicit_path) ? fs::absolute(explicit_path).string() : std::string();
    std::error_code ec;
    const fs::path self = fs::canonical(uvmrun_path, ec);
    if (ec) return {};
    const fs::path dir = self.parent_path();
    for (const fs::path& candidate :
         {dir / "libuvmprefetch.so", dir / ".." / "lib" / "libuvmprefetch.so",
          dir / ".." / ".." / "src" / "preload" / "libuvmprefetch.so"}) {
        if (fs::exists(candidate, ec)) return fs::canonical(candidate, ec).string();
    }
    return {};
}

} // namespace uvmp::tools

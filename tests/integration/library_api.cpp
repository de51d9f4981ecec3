#include "library_api.h"

#include <cstdlib>
#include <string>

#include <dlfcn.h>

namespace uvmp_integration {

std::optional<uvmp_stats> LibraryApi::stats() const {
    if (get_stats == nullptr) return std::nullopt;
    uvmp_stats out{};
    out.struct_size = sizeof out;
    if (get_stats(&out) != 0) return std::nullopt;
    return out;
}

LibraryApi find_library_api() {
    LibraryApi api;
    api.get_stats =
        reinterpret_cast<decltype(&uvmp_get_stats)>(dlsym(RTLD_DEFAULT, "uvmp_get_stats"));
    api.mark_iteration = reinterpret_cast<decltype(&uvmp_mark_iteration)>(
        dlsym(RTLD_DEFAULT, "uvmp_mark_iteration"));
    api.version = reinterpret_cast<decltype(&uvmp_version)>(dlsym(RTLD_DEFAULT, "uvmp_version"));
    return api;
}

bool policy_under_budget() {
    const char* policy = std::getenv("UVMP_POLICY");
    const char* budget = std::getenv("UVMP_BUDGET");
    return (!policy || std::string(policy) != "none") && budget && *budget;
}

bool plans_launches(const uvmp_stats& stats) {
    return policy_under_budget() && stats.bytes_converted_peak > stats.budget_bytes;
}

bool library_reads_accesses(const uvmp_stats& stats) {
    const char* trace = std::getenv("UVMP_TRACE_OUT");
    return plans_launches(stats) || (trace && *trace);
}

}  // namespace uvmp_integration

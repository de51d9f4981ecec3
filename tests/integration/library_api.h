// The library's C API, found at run time so that the test programs also run
// without the library preloaded.
#pragma once

#include "uvmprefetch/uvmprefetch.h"

#include <optional>

namespace uvmp_integration {

struct LibraryApi {
    decltype(&uvmp_get_stats) get_stats = nullptr;
    decltype(&uvmp_mark_iteration) mark_iteration = nullptr;
    decltype(&uvmp_version) version = nullptr;

    bool present() const { return get_stats != nullptr; }
    // The library's counters, or nothing when it is absent or refuses.
    std::optional<uvmp_stats> stats() const;
};

LibraryApi find_library_api();

// Whether the library may plan launches in this environment: a residency policy
// on (unset: learned) and a budget set (without one nothing is planned).
bool policy_under_budget();
// Whether it planned the launches of a run whose counters are `stats`: it plans
// from the first launch after converted memory has gone past the budget, so the
// scenarios that ask go past it before their first launch, or never.
bool plans_launches(const uvmp_stats& stats);
// Whether it read the accesses of those launches: a planner (plans_launches) or a
// trace does; without either, launches are only counted.
bool library_reads_accesses(const uvmp_stats& stats);

}  // namespace uvmp_integration

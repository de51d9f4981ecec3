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

}  // namespace uvmp_integration

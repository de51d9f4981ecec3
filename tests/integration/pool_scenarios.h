// Scenarios of the managed pool, run under the library: allocations carved from
// few slabs, CUDA's free semantics (stream order, completion), the memory-pool
// queries the library answers, the physical guard on slabs, idle slabs given
// back, nothing left behind at exit, and what an allocation and free cost.
#pragma once

#include "check_list.h"
#include "driver_entry_points.h"

#include <string_view>

namespace uvmp_integration {

// The modes, as a usage line names them.
inline constexpr const char* kPoolModes = "many|reuse|sync|attributes|guard|idle|exit|timing";
bool is_pool_mode(std::string_view mode);

// Each mode expects the environment its test in CMakeLists.txt gives it.
void run_pool_scenario(const DriverEntryPoints& driver, const FakeDriverHelpers& fake, std::string_view mode,
                       CheckList& checks);

}  // namespace uvmp_integration

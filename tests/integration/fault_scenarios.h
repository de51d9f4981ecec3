// Driver calls that fail, injected by the fake driver (fake_faults.h):
//   own     the application's own calls fail (allocation, launch, host free): it
//           sees the driver's own result, with the library as without it;
//   frees   frees that fail: each leaves the allocation live and freeable later,
//           and only the driver's answer to a call the application made (or
//           waited for) reaches it;
//   library NAME: FAKECUDA_FAIL makes every call of NAME fail, a call the library
//           makes on its own behalf (prefetch, events, its streams, managed
//           slabs): the application notices nothing, and the library's
//           counters come back to zero.
#pragma once

#include "check_list.h"

#include <string>

namespace uvmp_integration {

inline constexpr const char* kFaultModes = "own|frees|library NAME";

bool is_fault_mode(const std::string& mode);
void run_fault_scenario(const std::string& mode, const std::string& failing, CheckList& checks);

}  // namespace uvmp_integration

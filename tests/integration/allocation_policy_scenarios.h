// Scenarios where the library must leave an allocation unconverted or refuse it:
// the physical guard, and stream-ordered allocation during graph capture.
#pragma once

#include "check_list.h"
#include "driver_entry_points.h"

namespace uvmp_integration {

// Allocates more than the physical guard allows. `refused` says whether the guard
// is in force (it must refuse) or lifted (the allocation must succeed).
void run_guard_scenario(const DriverEntryPoints& driver, const FakeDriverHelpers& fake,
                        bool refused, CheckList& checks);

// Allocates with cuMemAllocAsync on a stream being captured (managed allocation
// is not allowed there, so it must pass through) and again after capture ends
// (it must be converted).
void run_capture_scenario(const DriverEntryPoints& driver, const FakeDriverHelpers& fake,
                          CheckList& checks);

}  // namespace uvmp_integration

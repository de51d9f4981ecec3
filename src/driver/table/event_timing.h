// Timing a span of a stream with two events: the entry the driver has for it.
#pragma once

#include "driver/table/driver_table.h"

namespace uvmp::driver {

using EventElapsedTime = CUresult (*)(float* milliseconds, CUevent start, CUevent end);

// cuEventElapsedTime_v2 where the driver has it (it replaced the first one),
// else cuEventElapsedTime; nullptr where it has neither.
inline EventElapsedTime event_elapsed_time(const DriverTable& table) {
    return table.cuEventElapsedTime_v2 ? table.cuEventElapsedTime_v2 : table.cuEventElapsedTime;
}

} // namespace uvmp::driver

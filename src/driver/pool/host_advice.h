// The advice that makes managed memory a host home: its pages prefer the host
// and the device maps them, so kernels read and write them over the link and
// the driver never migrates them on a fault.
#pragma once

#include "driver/table/driver_table.h"

#include <cstdint>

namespace uvmp::driver {

CUresult advise_host_home(const DriverTable& table, CUdeviceptr base, uint64_t bytes, int device);
// Takes the advice back (a range that leaves its host home keeps none of it).
CUresult unadvise_host_home(const DriverTable& table, CUdeviceptr base, uint64_t bytes, int device);

} // namespace uvmp::driver

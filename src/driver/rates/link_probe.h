// Measures the link between host and GPU on the device the library runs on:
// one managed buffer, moved and read and written by the library's own stream
// and kernels, timed with events. It calls the real driver only (the table),
// never the library's hooks, so nothing of it reaches the registry, the pool
// or the trace.
#pragma once

#include "core/accounting/device_budget.h"
#include "core/rates/link_rates.h"
#include "driver/table/driver_table.h"

#include <optional>
#include <string>

namespace uvmp::driver {

// The buffer the probe moves: large enough that per-call overhead is a few
// percent of a move (rate_refiner.h), small enough to take well under a second
// on the slowest link. Where the guard cannot take it, half of it is tried.
inline constexpr uint64_t kProbeBufferBytes = 128ull << 20;
inline constexpr uint64_t kSmallestProbeBufferBytes = 64ull << 20;
// Each figure is the median of this many timed runs.
inline constexpr int kProbeRepetitions = 3;

// The device's name, UUID and driver version; fields the driver does not
// give stay empty.
rates::DeviceIdentity device_identity(const DriverTable& table, CUdevice device);

struct ProbeFailure {
    std::string why;          // one sentence
    bool unsupported = false; // the device or driver cannot time its work: nothing is wrong
};

// Measures `device`, whose context is current on the calling thread. The
// buffer is reserved against `guard` first and given back after. nullopt with
// *failure when any step fails; everything it made is freed.
std::optional<rates::LinkRates> probe_link_rates(const DriverTable& table, CUdevice device, DeviceBudget& guard,
                                                 ProbeFailure* failure);

} // namespace uvmp::driver

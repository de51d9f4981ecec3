// One device's share of the library's counters (core/accounting/stats.h): its
// budget, what the library converted and passed through there, what the planner
// keeps resident there and the moves it made for it. A job of several GPUs has a
// budget a device, so one device's figures say nothing of another's.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace uvmp {

// Devices the counters keep apart; memory of a device past them is counted only
// in the process-wide figures.
inline constexpr size_t kMaxStatDevices = 64;

// In the order the stats file lists them. bytes_passed_through_live is memory
// the library holds no block of that takes the device's memory all the same:
// device allocations passed through, physical memory made there (cuMemCreate),
// the application's own managed memory. bytes_resident is what the planner's
// model of the device holds on it (with a policy on) of live allocations;
// bytes_dead_resident what freed blocks left there, which the budget counts as
// well; bytes_held_peak the most of both together at once.
#define UVMP_DEVICE_STAT_FIELDS(X)                                                                     \
    X(budget_bytes) X(guard_limit_bytes) X(allocs_converted) X(bytes_converted) X(bytes_converted_live) \
    X(bytes_converted_peak) X(guard_refusals) X(allocs_passed_through) X(bytes_passed_through_live)     \
    X(launches_planned) X(bytes_resident) X(bytes_populated) X(bytes_prefetched) X(bytes_evicted)       \
    X(move_calls) X(bytes_dead_resident) X(bytes_held_peak)

struct DeviceStats {
    // Set by the first change of any figure: only devices the job used are reported.
    std::atomic<bool> used{false};
#define UVMP_DECLARE_DEVICE_COUNTER(name) std::atomic<uint64_t> name{0};
    UVMP_DEVICE_STAT_FIELDS(UVMP_DECLARE_DEVICE_COUNTER)
#undef UVMP_DECLARE_DEVICE_COUNTER
};

} // namespace uvmp

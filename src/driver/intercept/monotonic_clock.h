#pragma once

#include <cstdint>
#include <ctime>

namespace uvmp::driver {

// The clock steady_clock reads, without the detour through the C++ runtime:
// recording reads it at every launch.
inline uint64_t monotonic_ns() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(now.tv_nsec);
}

} // namespace uvmp::driver

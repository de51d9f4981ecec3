// Nanoseconds on the steady clock since a start, as the counters add them.
#pragma once

#include <chrono>
#include <cstdint>

namespace uvmp {

inline uint64_t nanoseconds_since(std::chrono::steady_clock::time_point start) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

} // namespace uvmp

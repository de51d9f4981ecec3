// Host timing for the probes: a wall clock in milliseconds, and the median of repeats.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Bytes moved in `ms` milliseconds, in GB/s (0 for no time).
inline double gigabytes_per_second(size_t bytes, double ms) {
    return ms > 0.0 ? static_cast<double>(bytes) / (ms * 1e6) : 0.0;
}

inline double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

} // namespace bench

// The probes' one numeric argument, checked whole: a base-10 number and nothing
// after it, within the probe's range.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <optional>

namespace bench {

inline std::optional<long> whole_number_in(const char* text, long low, long high) {
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < low || value > high) return std::nullopt;
    return value;
}

} // namespace bench

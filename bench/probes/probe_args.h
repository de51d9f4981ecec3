// The probes' numeric arguments, checked whole: a base-10 number and nothing
// after it, within the probe's range.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdio>
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

// argv[index] as a whole number from `low` to `high`, `fallback` where the command
// line ends before it. nullopt, after a line on standard error naming the probe and
// `what` the argument is, where it is not such a number: the probe then exits 2.
inline std::optional<long> number_argument(int argc, char** argv, int index, const char* probe, const char* what,
                                           long low, long high, long fallback) {
    if (index >= argc) return fallback;
    const auto value = whole_number_in(argv[index], low, high);
    if (!value)
        std::fprintf(stderr, "%s: invalid %s '%s': expected a whole number from %ld to %ld\n", probe, what, argv[index],
                     low, high);
    return value;
}

} // namespace bench

namespace bench {

// The one optional argument of the probes that take GiB per buffer, 1 or 2
// (default 1), as bytes; nullopt after a line on standard error naming the probe
// where the command line is not that: the probe then exits 2.
inline std::optional<size_t> gib_per_buffer_argument(int argc, char** argv, const char* probe) {
    if (argc > 2) {
        std::fprintf(stderr, "usage: %s [GiB per buffer, 1 or 2]\n", probe);
        return std::nullopt;
    }
    const auto gib = number_argument(argc, argv, 1, probe, "size in GiB per buffer", 1, 2, 1);
    if (!gib) return std::nullopt;
    return static_cast<size_t>(*gib) << 30;
}

} // namespace bench

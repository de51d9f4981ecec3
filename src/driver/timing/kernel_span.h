// What a CUPTI kernel record says of its kernel's run. A record comes back
// before its kernel has ended only from a forced flush (at exit, or when timing
// stops), and then its timestamps are not filled in: such a record times
// nothing, and CUPTI never sends it again.
#pragma once

#include <cstdint>
#include <optional>

namespace uvmp::driver {

struct KernelSpan {
    uint64_t start_ns = 0;
    uint64_t duration_ns = 0;
};

// The kernel's start and duration; none for a record whose kernel had not
// ended (no start, or an end not after it).
inline std::optional<KernelSpan> finished_span(uint64_t start_ns, uint64_t end_ns) {
    if (start_ns == 0 || end_ns <= start_ns) return std::nullopt;
    return KernelSpan{start_ns, end_ns - start_ns};
}

} // namespace uvmp::driver

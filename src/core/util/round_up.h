// Rounding sizes and addresses up to a granularity (a slab size, a chunk, an
// alignment), shared by the pool, its driver glue and the synthetic traces.
#pragma once

#include <cstdint>

namespace uvmp {

// The least multiple of `granularity` (non-zero) at or above `value`.
constexpr uint64_t round_up(uint64_t value, uint64_t granularity) {
    return (value + granularity - 1) / granularity * granularity;
}

} // namespace uvmp

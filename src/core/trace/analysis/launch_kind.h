// A launch's kind: the kernel, its grid and block, and the managed bytes its
// accesses name. A training step launches the same kind many times (once a
// layer, once a step), and launches of one kind take about the same time when
// their data is where they expect it: what lets a duration measured on one
// launch stand for another's (core/trace/analysis/fastest_durations.h,
// core/placement/remote_trial.h).
#pragma once

#include "core/trace/analysis/managed_bytes.h"
#include "core/trace/format/model.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace uvmp::trace {

struct LaunchKind {
    uint32_t kernel = 0;
    std::array<uint32_t, 6> shape{};
    uint64_t bytes = 0;
    bool operator==(const LaunchKind&) const = default;
};

struct LaunchKindHash {
    size_t operator()(const LaunchKind& k) const {
        uint64_t h = k.kernel * 0x9E3779B97F4A7C15ull ^ k.bytes;
        for (uint32_t v : k.shape) h = (h ^ v) * 0x100000001B3ull;
        return static_cast<size_t>(h ^ (h >> 29));
    }
};

inline LaunchKind kind_of(const Launch& launch, const ManagedBytes& managed) {
    LaunchKind kind;
    kind.kernel = launch.kernel_id;
    std::copy(std::begin(launch.grid), std::end(launch.grid), kind.shape.begin());
    std::copy(std::begin(launch.block), std::end(launch.block), kind.shape.begin() + 3);
    kind.bytes = managed.of(launch);
    return kind;
}

} // namespace uvmp::trace

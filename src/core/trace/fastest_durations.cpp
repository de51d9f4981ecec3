#include "core/trace/fastest_durations.h"

#include "core/trace/managed_bytes.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <vector>

namespace uvmp::trace {
namespace {

struct Kind {
    uint32_t kernel = 0;
    std::array<uint32_t, 6> shape{};
    uint64_t bytes = 0;
    bool operator==(const Kind&) const = default;
};

struct KindHash {
    size_t operator()(const Kind& k) const {
        uint64_t h = k.kernel * 0x9E3779B97F4A7C15ull ^ k.bytes;
        for (uint32_t v : k.shape) h = (h ^ v) * 0x100000001B3ull;
        return static_cast<size_t>(h ^ (h >> 29));
    }
};

} // namespace

uint64_t use_fastest_durations(Trace& trace) {
    const ManagedBytes managed(trace);
    const auto kind_of = [&](const Launch& launch) {
        Kind kind;
        kind.kernel = launch.kernel_id;
        std::copy(std::begin(launch.grid), std::end(launch.grid), kind.shape.begin());
        std::copy(std::begin(launch.block), std::end(launch.block), kind.shape.begin() + 3);
        kind.bytes = managed.of(launch);
        return kind;
    };

    std::vector<Kind> kinds;
    kinds.reserve(trace.launches.size());
    std::unordered_map<Kind, uint64_t, KindHash> fastest;
    for (const Launch& launch : trace.launches) {
        kinds.push_back(kind_of(launch));
        if (launch.duration_ns == 0) continue;
        const auto [it, added] = fastest.emplace(kinds.back(), launch.duration_ns);
        if (!added) it->second = std::min(it->second, launch.duration_ns);
    }
    uint64_t shortened = 0;
    for (size_t i = 0; i < trace.launches.size(); ++i) {
        Launch& launch = trace.launches[i];
        const auto it = fastest.find(kinds[i]);
        if (it == fastest.end() || (launch.duration_ns != 0 && launch.duration_ns <= it->second)) continue;
        launch.duration_ns = it->second;
        ++shortened;
    }
    return shortened;
}

} // namespace uvmp::trace

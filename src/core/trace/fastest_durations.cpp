#include "core/trace/fastest_durations.h"

#include "core/trace/launch_kind.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace uvmp::trace {

uint64_t use_fastest_durations(Trace& trace) {
    const ManagedBytes managed(trace);
    std::vector<LaunchKind> kinds;
    kinds.reserve(trace.launches.size());
    std::unordered_map<LaunchKind, uint64_t, LaunchKindHash> fastest;
    for (const Launch& launch : trace.launches) {
        kinds.push_back(kind_of(launch, managed));
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

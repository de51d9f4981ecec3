#include "core/trace/analysis/fastest_durations.h"

#include "core/trace/analysis/launch_kind.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <unordered_set>
#include <vector>

namespace uvmp::trace {

uint64_t use_fastest_durations(Trace& trace) { return use_fastest_durations(trace, {}, 0).shortened; }

CleanedDurations use_fastest_durations(Trace& trace, const LaunchWaits& waits, double memory_gbps) {
    constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
    struct Least {
        bool timed_unwaited = false; // a timed launch waited for nothing
        uint64_t any = kNone;        // over every timed launch, waited or not
        uint64_t less_waits = kNone; // over the launches that waited
        uint64_t taken_off = 0;      // the most a wait took off one of them
    };
    const ManagedBytes managed(trace);
    CleanedDurations out;
    std::vector<LaunchKind> kinds;
    kinds.reserve(trace.launches.size());
    std::unordered_map<LaunchKind, Least, LaunchKindHash> least;
    for (const Launch& launch : trace.launches) {
        kinds.push_back(kind_of(launch, managed));
        if (launch.duration_ns == 0) continue;
        Least& l = least[kinds.back()];
        l.any = std::min(l.any, launch.duration_ns);
        const auto wait = waits.find(launch.seq);
        if (wait == waits.end() || wait->second == 0) {
            l.timed_unwaited = true;
            continue;
        }
        ++out.waited_launches;
        const uint64_t floor =
            memory_gbps > 0 ? static_cast<uint64_t>(std::ceil(static_cast<double>(kinds.back().bytes) / memory_gbps))
                            : 0;
        const uint64_t rest = launch.duration_ns > wait->second ? launch.duration_ns - wait->second : 0;
        const uint64_t less_wait = std::max({rest, floor, uint64_t{1}});
        l.less_waits = std::min(l.less_waits, less_wait);
        l.taken_off = std::max(l.taken_off, launch.duration_ns - std::min(launch.duration_ns, less_wait));
    }
    std::unordered_map<LaunchKind, uint64_t, LaunchKindHash> duration;
    std::unordered_map<uint32_t, uint64_t> taken_off; // by kernel
    std::unordered_set<uint32_t> timed;               // kernels with a kind timed unwaited
    for (const auto& [kind, l] : least) {
        if (l.timed_unwaited) {
            timed.insert(kind.kernel);
        } else {
            out.kinds_untimed.push_back(kind);
            uint64_t& most = taken_off[kind.kernel];
            most = std::max(most, l.taken_off);
        }
        // Pressure only lengthens a launch, so each duration bounds the kind's
        // own from above, and the least of them all is the tightest bound: a
        // launch the model says waited yet ran faster than every other shows
        // that those were stalled by what the model does not see.
        duration.emplace(kind, l.timed_unwaited ? l.any : l.less_waits);
    }
    out.kinds_from_waits = out.kinds_untimed.size();
    std::vector<std::pair<uint64_t, uint32_t>> by_time_off;
    for (const auto& [kernel, off] : taken_off) by_time_off.emplace_back(off, kernel);
    std::sort(by_time_off.begin(), by_time_off.end(), std::greater<>());
    for (const auto& [off, kernel] : by_time_off) {
        out.kernels_from_waits.push_back(kernel);
        if (!timed.contains(kernel)) out.kernels_untimed.push_back(kernel);
    }
    std::sort(out.kernels_untimed.begin(), out.kernels_untimed.end());
    for (size_t i = 0; i < trace.launches.size(); ++i) {
        Launch& launch = trace.launches[i];
        const auto it = duration.find(kinds[i]);
        if (it == duration.end() || (launch.duration_ns != 0 && launch.duration_ns <= it->second)) continue;
        launch.duration_ns = it->second;
        ++out.shortened;
    }
    return out;
}

} // namespace uvmp::trace

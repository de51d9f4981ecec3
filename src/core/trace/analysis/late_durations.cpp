#include "core/trace/analysis/late_durations.h"

#include <algorithm>

namespace uvmp::trace {

uint64_t launches_without_duration(const Trace& trace, uint64_t begin, uint64_t end) {
    end = std::min<uint64_t>(end, trace.launches.size());
    uint64_t missing = 0;
    for (uint64_t i = begin; i < end; ++i) missing += trace.launches[i].duration_ns == 0;
    return missing;
}

} // namespace uvmp::trace

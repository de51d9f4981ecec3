// Kernel durations reach a recording late: CUPTI hands its records back a
// buffer at a time, once every kernel in the buffer has ended, so the last
// launches of a step that has run may still lack theirs when it is looked at.
// What judges a step from its durations looks again while they keep coming.
#pragma once

#include "core/trace/format/model.h"

#include <cstdint>

namespace uvmp::trace {

// Launches [begin, end) of the trace without a duration.
uint64_t launches_without_duration(const Trace& trace, uint64_t begin, uint64_t end);

// Whether to look again before judging: `missing` durations are still to
// come and fewer are missing than at the last look (a look that brought none
// says the rest will not come soon).
class LateDurations {
public:
    bool worth_waiting(uint64_t missing) {
        if (missing == 0 || missing >= last_missing_) return false;
        last_missing_ = missing;
        return true;
    }

private:
    uint64_t last_missing_ = UINT64_MAX;
};

} // namespace uvmp::trace

// What a launch's kernel finds on its way to the GPU as it begins, as the
// planner (driver/planner.h) saw it: what the home learner sets aside kernel
// durations by (core/trace/fastest_durations.h).
#pragma once

#include <cstdint>

namespace uvmp::driver {

// What the mover was bringing in that a launch's kernel waits for: the chunks
// it names that were not resident, fetched as it began behind the evictions
// (of live and dead bytes) that made room for them, and those it names that
// moves queued since the device's last launch bring in (blocks populated since,
// the last launch's prefetches): those start as the last kernel does, and a
// kernel launched right after it finds them on their way.
struct LaunchMoves {
    uint64_t evicted_bytes = 0; // counted only where the kernel waits for something
    uint64_t demand_bytes = 0;
    uint64_t arriving_bytes = 0;  // prefetched
    uint64_t populating_bytes = 0; // populated (no data to copy)
    bool waits() const { return demand_bytes != 0 || arriving_bytes != 0 || populating_bytes != 0; }
};

} // namespace uvmp::driver

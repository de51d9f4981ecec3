// Runs a replay plan through the driver: allocations, frees, launches of the
// synthetic kernel, the events between streams, and a wait for every stream at
// each step boundary, where the step's time is taken.
#pragma once

#include "core/replay/replay_plan.h"
#include "replay_driver.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace uvmp::tools {

struct ReplayHooks {
    std::function<void()> mark_iteration;                     // at each recorded iteration mark
    // At each step boundary, once every stream is done: its index and the ns since the replay began.
    std::function<void(uint32_t boundary, uint64_t elapsed_ns)> boundary;
};

// Throws DriverError when a driver call fails.
void run_replay_plan(const replay::Plan& plan, const ReplayDriver& driver, const ReplayHooks& hooks);

} // namespace uvmp::tools

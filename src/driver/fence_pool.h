// Events the launch path records in front of launches, so that the moves planned
// for a launch start on the GPU's time, not the application thread's.
//
// An event can be recorded only on a stream of the context it was made in (the
// driver refuses any other), and a job of several GPUs launches in a context a
// device: each context has its own free events.
#pragma once

#include "driver/driver_table.h"

#include <mutex>
#include <unordered_map>
#include <vector>

namespace uvmp::driver {

class FencePool {
public:
    // A free event of the calling thread's current context, made there when there
    // is none; nullptr when there is no context or no event can be made.
    CUevent acquire(const DriverTable& table);
    // Back to the free events of the context it was made in.
    void release(CUevent event);

private:
    std::mutex mutex_;
    std::unordered_map<CUcontext, std::vector<CUevent>> free_;
    std::unordered_map<CUevent, CUcontext> made_in_;
};

} // namespace uvmp::driver

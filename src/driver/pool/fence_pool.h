// Events the launch path records in front of launches, so that the moves planned
// for a launch start on the GPU's time, not the application thread's.
//
// An event can be recorded only on a stream of the context it was made in (the
// driver refuses any other), and a job of several GPUs launches in a context a
// device: each context has its own idle events. They are taken on the
// application's threads without a lock (a fixed table of contexts, each with a
// lock-free queue) and given back on the library's; only making an event, which
// is rare, takes the lock.
#pragma once

#include "core/util/mpmc_queue.h"
#include "driver/table/driver_table.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace uvmp::driver {

class FencePool {
public:
    // An idle event of `context` (the launching thread's current one), made there
    // when there is none; nullptr when there is no context or no event can be made.
    CUevent acquire(const DriverTable& table, CUcontext context);
    CUevent acquire(const DriverTable& table) {
        CUcontext context = nullptr;
        return table.cuCtxGetCurrent(&context) == CUDA_SUCCESS ? acquire(table, context) : nullptr;
    }
    // Back to the idle events of the context it was made in; destroyed past
    // kIdle idle events there, or when its context has no place in the table.
    void release(CUevent event);

private:
    // More than a backlog of launches keeps waiting on at once, as a rule.
    static constexpr size_t kIdle = 1 << 14;
    // Contexts a process uses: one a device as a rule.
    static constexpr size_t kContexts = 64;

    struct Idle {
        std::atomic<CUcontext> context{nullptr};
        std::atomic<MpmcQueue<CUevent>*> events{nullptr};
    };
    MpmcQueue<CUevent>* idle_of(CUcontext context);
    MpmcQueue<CUevent>* idle_of_locked(CUcontext context); // makes its place when there is room
    void destroy(CUevent event);

    std::array<Idle, kContexts> idle_;
    std::mutex mutex_; // over made_in_ and the table's growth
    std::unordered_map<CUevent, CUcontext> made_in_;
    std::array<std::unique_ptr<MpmcQueue<CUevent>>, kContexts> owned_;
};

} // namespace uvmp::driver

// Host homes learned within the run (UVMP_HOST_HOMES=auto without
// UVMP_TRACE_IN): what an earlier run's trace recorded with kernel timing
// would tell the router, taken from the run itself. Nothing happens while the
// job fits its budget. When it first goes over it, the learner records the run
// in memory (trace::MemoryRecorder) and times its kernels; a thread of its own
// looks at the recording now and then, and once it holds two full steps after
// the one it began in, chooses the homes as for a recorded trace
// (recorded_homes, on the second of them): durations cleaned of the stalls
// that pressure put in them (trace::use_fastest_durations), and only the
// allocations a step makes as candidates, since those made before are on the
// GPU already. The router homes the allocations after that by order and size,
// from the place in the step the run has reached. Then recording and timing
// stop, homes or not.
#pragma once

#include "core/trace/memory_recorder.h"
#include "driver/host_home_router.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>

namespace uvmp::driver {

class HomeLearner {
public:
    // Launches the recording may hold before the learner gives up on finding
    // two full steps in it: more than most training steps launch, and the
    // records' memory stays below 100 MiB.
    static constexpr uint64_t kMaxLaunches = 1u << 19;

    HomeLearner(const Config& config, HostHomeRouter& router) : config_(config), router_(router) {}

    // Whether learning may still begin.
    bool armed() const { return router_.learns_in_run() && !begun_.load(std::memory_order_acquire); }

    // Once, on `device` gone over its budget of `budget_bytes`: makes the
    // recorder and gives it `live`, the allocations live now. `done` is called
    // on the learner's thread once learning has ended, whatever its outcome,
    // with the recorder no longer wanted. nullptr if learning had begun.
    trace::MemoryRecorder* begin(int device, uint64_t budget_bytes, trace::Header header,
                                 std::span<const trace::Alloc> live, std::function<void()> done);
    // A kernel's duration, from the kernel timing.
    void kernel_timed(uint64_t launch_seq, uint64_t duration_ns);
    // Learning ends without homes (kernel timing is not to be had, say).
    void give_up(const std::string& why);
    // At exit: the thread stops looking.
    void stop() { stopping_.store(true, std::memory_order_release); }
    // In a forked child: the parent's thread and recording stay the parent's.
    void forget_after_fork();

private:
    void run();
    // Learns from the recording if it holds enough; true once learning has ended.
    bool look();
    void end();

    const Config& config_;
    HostHomeRouter& router_;
    std::atomic<bool> begun_{false};
    std::atomic<bool> recording_{false};
    std::atomic<bool> stopping_{false};
    std::once_flag end_once_;
    int device_ = -1;
    uint64_t budget_bytes_ = 0;
    uint64_t looked_at_ = 0; // launches recorded at the last look
    // Never destroyed while the process runs: the application's threads may
    // still hold it as their trace writer.
    std::unique_ptr<trace::MemoryRecorder> recorder_;
    std::function<void()> done_;
};

} // namespace uvmp::driver

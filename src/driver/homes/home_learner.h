// Host homes learned within the run (UVMP_HOST_HOMES=auto without
// UVMP_TRACE_IN): what an earlier run's trace recorded with kernel timing
// would tell the router, taken from the run itself. Nothing happens while the
// job fits its budget. When it first goes over it, the learner records the run
// in memory (trace::MemoryRecorder) and times its kernels; a thread of its own
// looks at the recording now and then, and once it holds a full step after
// the one it began in (the program marks steps), or two (steps found by their
// period), chooses the homes as for a recorded trace (recorded_homes, on the
// last of them): durations cleaned of the stalls
// that pressure put in them (trace::use_fastest_durations, told which
// launches waited for the planner's moves, as a model of the mover's stream
// in time finds them: trace::mover_waits), and only the
// allocations live in the step as candidates. The router homes the
// allocations after that by order and size, from the place in the step the
// run has reached; those made before the learned step that are chosen
// (UVMP_EARLIER_HOMES) are moved to the host once, where they lie.
//
// With homes, a remote trial follows (core/placement/remote_trial.h): recording
// and timing go on for the second full step whose allocations were all routed
// (the first pays once for the pages of the new host slabs, which the GPU's
// first remote writes make), and the allocations whose readers it finds slower
// than their GPU home would cost are homed on the GPU from then on. The steps
// after check the verdict: where the second full step after it runs slower than
// the judged one, those allocations go back to the host. Then recording and
// timing stop.
#pragma once

#include "core/accounting/host_home_figures.h"
#include "core/homesearch/recorded_homes.h"
#include "core/trace/analysis/late_durations.h"
#include "core/trace/recording/memory_recorder.h"
#include "driver/homes/host_home_router.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace uvmp::driver {

class HomeLearner {
public:
    // Launches the recording may hold before the learner gives up on finding
    // the steps it learns from: more than most training steps launch, and the
    // records' memory stays below 100 MiB.
    static constexpr uint64_t kMaxLaunches = 1u << 19;

    HomeLearner(const Config& config, HostHomeRouter& router) : config_(config), router_(router) {}

    // Whether learning may still begin.
    bool armed() const { return router_.learns_in_run() && !begun_.load(std::memory_order_acquire); }

    // An allocation made before the learned step, homed where it lies (its
    // size is the registry's, as it is when it moves).
    struct EarlierHome {
        uint32_t id = 0;
        uint64_t address = 0;
    };

    struct Callbacks {
        // On the learner's thread, once the router routes by learned homes.
        std::function<void()> routing;
        // On the learner's thread, after a remote trial gave `entries` of the
        // learned step, of `bytes`, back their GPU home, and again with
        // `reverted` once the steps after sent them back to the host.
        std::function<void(uint64_t entries, uint64_t bytes, bool reverted)> given_back;
        // On the learner's thread: allocations made before the learned step
        // are to live at `home` from now on, in place (UVMP_EARLIER_HOMES).
        std::function<void(std::span<const EarlierHome>, placement::Home home)> home_in_place;
        // On the learner's thread, with what the remote trial measured, whatever its verdict.
        std::function<void(const HostHomeTrial&)> trial_judged;
        // On the learner's thread once learning has ended, whatever its
        // outcome, with the recorder no longer wanted.
        std::function<void()> done;
    };

    // Once, on `device` gone over its budget of `budget_bytes`: makes the
    // recorder and gives it `live`, the allocations live now. nullptr if
    // learning had begun.
    trace::MemoryRecorder* begin(int device, uint64_t budget_bytes, trace::Header header,
                                 std::span<const trace::Alloc> live, Callbacks callbacks);
    // Allocation `id` was homed on the host, by the learned step's entry
    // `step_entry` where it took one (HostHomeRouter::home_of).
    void host_homed(uint32_t id, std::optional<size_t> step_entry);
    // A kernel's start (ns, CUPTI's clock) and duration, from the kernel timing.
    void kernel_timed(uint64_t launch_seq, uint64_t start_ns, uint64_t duration_ns);
    // Whether it takes launch_planned now: while it learns, not after.
    bool wants_waits() const {
        return recording_.load(std::memory_order_acquire) && phase_.load(std::memory_order_acquire) == Phase::Learning;
    }
    // What the planner queued for the launch (Planner::launch).
    void launch_planned(uint64_t launch_seq, const trace::LaunchBatch& batch);
    // Learning ends without homes (kernel timing is not to be had, say); once
    // homes are in use, the trial ends and they stay as they are.
    void give_up(const std::string& why);
    // At exit: the thread stops looking.
    void stop() { stopping_.store(true, std::memory_order_release); }
    // In a forked child: the parent's thread and recording stay the parent's.
    void forget_after_fork();

private:
    void run();
    // Learns from the recording if it holds enough; true once learning has ended.
    bool look();
    // Learns the homes from the recording's full steps (`bounds`).
    bool learn(trace::Trace& recording, const std::vector<uint64_t>& bounds, const trace::MoverRecord& mover);
    // Judges the second full step after routing began, once the recording holds it.
    bool judge_trial(const trace::Trace& recording, const std::vector<uint64_t>& bounds);
    // kept_on_gpu_, each with its rate in the judged step [step_begin, step_end).
    std::vector<HostHomeTrial::KeptKernel> kept_rejudged(const trace::Trace& recording, uint64_t step_begin,
                                                         uint64_t step_end,
                                                         const std::function<bool(uint32_t)>& host_homed) const;
    // Sets the judged step against the second full step after the verdict.
    bool check_verdict(const trace::Trace& recording, const std::vector<uint64_t>& bounds);
    void trial_failed(const std::string& why);
    // The recording's allocations of these ids, with their addresses.
    static std::vector<EarlierHome> earlier_homes(const trace::Trace& recording, std::span<const uint32_t> ids);
    void end();

    const Config& config_;
    HostHomeRouter& router_;
    std::atomic<bool> begun_{false};
    std::atomic<bool> recording_{false};
    std::atomic<bool> stopping_{false};
    enum class Phase : uint8_t { Learning, Trialling, Checking };
    std::atomic<Phase> phase_{Phase::Learning};
    uint64_t trial_from_ = 0; // launches recorded when routing began
    // Kernel records still coming for the learned steps, and for the judged
    // step's launches naming host data.
    trace::LateDurations learn_records_;
    trace::LateDurations trial_records_;
    // Launch kinds every launch of which waited for moves in the learning's
    // recording: the trial holds them to the streaming line.
    std::vector<trace::LaunchKind> kinds_untimed_;
    // The kernels whose rate kept the step's allocations on the GPU, and the
    // streaming line they fell below: the trial times them again.
    std::vector<placement::RecordedHomes::KeptOnGpu> kept_on_gpu_;
    double streaming_gbps_ = 0;
    uint64_t verdict_from_ = 0; // launches recorded when the verdict took effect
    uint64_t judged_step_ns_ = 0; // the judged step's time, launch to launch
    // The fastest full step the learning recorded (every home on the GPU), and
    // the bytes of the homes learned from it, a step's and the earlier ones.
    std::optional<uint64_t> before_homes_step_ns_;
    uint64_t learned_host_bytes_ = 0;
    std::vector<size_t> given_back_; // the entries the verdict homed on the GPU
    std::vector<EarlierHome> earlier_;   // made before the learned step, homed on the host in place
    std::vector<EarlierHome> earlier_given_back_; // of them, those the verdict homed on the GPU
    uint64_t given_back_bytes_ = 0;
    std::mutex host_mutex_;
    // The host-homed allocations made since routing began, with their entries.
    std::unordered_map<uint32_t, std::optional<size_t>> host_homed_;
    std::once_flag end_once_;
    int device_ = -1;
    uint64_t budget_bytes_ = 0;
    uint64_t looked_at_ = 0; // launches recorded at the last look
    // Never destroyed while the process runs: the application's threads may
    // still hold it as their trace writer.
    std::unique_ptr<trace::MemoryRecorder> recorder_;
    Callbacks callbacks_;
};

} // namespace uvmp::driver

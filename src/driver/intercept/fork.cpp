// The interceptor around fork(). A forked child has no CUDA context of its
// parent's, no worker thread and no trace writer thread: it starts as a process
// that has not touched CUDA yet, and only its own use of CUDA starts a worker.
#include "driver/intercept/interceptor.h"

#include "core/util/log.h"
#include "driver/timing/kernel_timing.h"

#include <memory>
#include <new>

namespace uvmp::driver {
namespace {

// True when a file name pattern names the process (%p), so that a child's file
// is its own and not the parent's.
bool names_the_process(const std::string& pattern) {
    return expand_path_pattern(pattern, 1, &process_getenv) != expand_path_pattern(pattern, 2, &process_getenv);
}

} // namespace

// Outermost first, as the code nests them: a stream's free order is held while
// the registry, the pool, the queue and the log are used; the budgets' lock
// while the log is written; the pools' locks, the kernel table's, the graph
// table's, the registry's, the pass-through ledger's and the two queues' (the worker's and the
// mover's) hold nothing of the others.
// The fence pool takes no lock, and the child replaces the whole pool.
void Interceptor::before_fork() {
    for (std::mutex& m : free_order_) m.lock();
    budgets_mutex_.lock();
    host_homes_.lock_for_fork();
    pools_.lock_for_fork();
    kernels_.lock_for_fork();
    graphs_.lock_for_fork();
    registry_.lock_for_fork();
    passthrough_.lock_for_fork();
    executor_.lock_for_fork();
    mover_.lock_for_fork();
    log::lock_for_fork();
}

void Interceptor::unlock_after_fork(bool in_child) {
    log::unlock_after_fork();
    mover_.unlock_after_fork();
    executor_.unlock_after_fork();
    passthrough_.unlock_after_fork();
    registry_.unlock_after_fork(in_child);
    graphs_.unlock_after_fork(in_child);
    kernels_.unlock_after_fork(in_child);
    pools_.unlock_after_fork();
    host_homes_.unlock_after_fork();
    budgets_mutex_.unlock();
    for (auto m = free_order_.rbegin(); m != free_order_.rend(); ++m) m->unlock();
}

void Interceptor::after_fork_in_parent() { unlock_after_fork(false); }

void Interceptor::after_fork_in_child() {
    unlock_after_fork(true);
    executor_.forget_after_fork();
    mover_.forget_after_fork();
    KernelTiming::forget_after_fork();
    // The parent's worker may have been inside the planner, and the mover's and
    // the trace writer's threads are gone: neither object is touched again.
    if (planner_) parent_planners_.push_back(std::move(planner_));
    if (trace_file_) parent_traces_.push_back(std::move(trace_file_));
    if (trace_tee_) parent_traces_.push_back(std::move(trace_tee_));
    trace_.store(nullptr, std::memory_order_relaxed);
    new (&trace_route_mutex_) std::mutex;
    // The recording and its thread are the parent's: the child learns nothing.
    learner_.forget_after_fork();
    // Its events are the parent's.
    std::destroy_at(&fences_);
    new (&fences_) FencePool;
    planner_ = make_planner();
    // The parent's thread may have been making the lane: a lane it made is the
    // child's, emptied (the executor empties one it was given).
    new (&lane_mutex_) std::mutex;
    if (lane_owner_) {
        lane_owner_->reset();
        executor_.set_lane(lane_owner_.get());
        lane_.store(lane_owner_.get(), std::memory_order_release);
    }
    new (&trace_once_) std::once_flag;
    registry_.clear();
    kernels_.clear();
    graphs_.clear(); // a child cannot launch its parent's graphs
    passthrough_.forget_after_fork();
    // The parent's slabs and the guard's count of them are the parent's.
    pools_.forget_after_fork();
    host_homes_.forget_after_fork();
    host_memory_.forget_after_fork();
    for (DeviceBudget& budget : budgets_) {
        std::destroy_at(&budget);
        new (&budget) DeviceBudget;
    }
    devices_over_budget_.store(0, std::memory_order_relaxed);
    plans_launches_.store(false, std::memory_order_relaxed);
    stats_.reset();
    launch_seq_.store(0, std::memory_order_relaxed);
    start_ns_ += now_ns(); // the child's trace counts time from its own start
    // A file whose name does not tell the processes apart is the parent's: the
    // child writes none. CUPTI stays with the parent: the child times no kernels.
    if (!names_the_process(config_.trace_out)) config_.trace_out.clear();
    if (!names_the_process(config_.stats_file)) config_.stats_file.clear();
    config_.trace_timing = false;
}

} // namespace uvmp::driver

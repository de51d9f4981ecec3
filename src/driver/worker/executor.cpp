#include "driver/worker/executor.h"

#include "core/util/log.h"
#include "driver/table/stream_capture.h"

#include <cstdint>
#include <exception>
#include <new>

namespace uvmp::driver {
namespace {

// Work that throws (out of memory in the residency model, say) must not take
// the application with it: the exception would end the process. That piece of
// work is lost; the worker goes on with the next.
template <typename Work>
bool completes(Work&& work) {
    try {
        work();
        return true;
    } catch (const std::exception& e) {
        UVMP_WARN_ONCE("the library's worker hit an error and skipped that piece of work: {}", e.what());
    } catch (...) {
        UVMP_WARN_ONCE("the library's worker hit an unknown error and skipped that piece of work");
    }
    return false;
}

} // namespace

void Executor::set_lane(Lane* lane) {
    std::lock_guard lock(mutex_);
    lane_ = lane;
}

void Executor::lane_filled() {
    if (!started_.load(std::memory_order_acquire)) {
        std::lock_guard lock(mutex_);
        start_locked();
    }
    wake_if_sleeping();
}

bool Executor::post_unless_backlogged(Task task, size_t limit) { return enqueue(std::move(task), limit); }

void Executor::post(Task task) { enqueue(std::move(task), SIZE_MAX); }

bool Executor::enqueue(Task task, size_t limit) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_.load(std::memory_order_relaxed) || tasks_.size() >= limit) return false;
        tasks_.push_back({std::move(task), lane_ ? lane_->end() : 0});
        start_locked();
    }
    wake_if_sleeping();
    return true;
}

void Executor::start_locked() {
    if (started_.load(std::memory_order_relaxed)) return;
    started_.store(true, std::memory_order_release);
    std::thread(&Executor::run, this).detach();
}

void Executor::wake_if_sleeping() {
    // Pairs with the fence in wait_for_work: either the worker, about to sleep,
    // sees the work put before this, or this sees the worker asleep.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!sleeping_.load(std::memory_order_relaxed) || !sleeping_.exchange(false)) return;
    // Taken once between the flag and the notify, so that the notify cannot fall
    // between the worker's last look at the flag and its wait.
    { std::lock_guard lock(mutex_); }
    wake_.notify_one();
}

CUstream Executor::stream_for(const DriverTable& table, CUcontext context) {
    if (table.cuCtxSetCurrent(context) != CUDA_SUCCESS) return nullptr;
    auto it = streams_.find(context);
    if (it != streams_.end()) return it->second;
    CUstream stream = nullptr;
    if (table.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) stream = nullptr;
    streams_[context] = stream;
    return stream;
}

void Executor::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_.store(true, std::memory_order_release);
        tasks_.clear();
    }
    wake_.notify_all();
}

void Executor::forget_after_fork() {
    // The parent's worker may have been waiting on it: a condition variable with
    // waiters that no longer exist can hold up the next notify.
    new (&wake_) std::condition_variable;
    tasks_.clear();
    if (lane_) lane_->reset();
    streams_.clear();
    started_.store(false, std::memory_order_relaxed);
    stopping_.store(false, std::memory_order_relaxed);
    sleeping_.store(false, std::memory_order_relaxed);
}

bool Executor::wait_for_work(std::unique_lock<std::mutex>& lock) {
    auto stopping = [this] { return stopping_.load(std::memory_order_relaxed); };
    for (auto idle = std::chrono::microseconds{0}; idle < kIdleBeforeSleep && idle_locked(); idle += kGatherTime)
        if (wake_.wait_for(lock, kGatherTime, stopping)) return false;
    if (!idle_locked()) return !stopping();
    sleeping_.store(true);
    // Pairs with the fence in wake_if_sleeping: a record put in the lane is seen
    // here, or its producer sees the flag and wakes the worker.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!idle_locked()) {
        sleeping_.store(false);
        return !stopping();
    }
    wake_.wait(lock, [&] { return stopping() || !sleeping_.load(std::memory_order_relaxed); });
    sleeping_.store(false);
    // Woken by the first work of a burst (the application launching kernels): let
    // the burst gather for a moment instead of being woken for each launch.
    return !wake_.wait_for(lock, kGatherTime, stopping);
}

void Executor::drain_lane(Lane& lane, uint64_t end) {
    // A record whose handling fails is taken all the same: this ends.
    while (!completes([&] { lane.drain_until(end); })) {
    }
}

void Executor::run() {
    if (const DriverTable* table = driver_table_if_ready()) relax_capture_mode_of_this_thread(*table);
    for (;;) {
        Task task;
        Lane* lane = nullptr;
        uint64_t lane_end = 0;
        {
            std::unique_lock lock(mutex_);
            if (idle_locked() && !wait_for_work(lock)) return;
            if (stopping_.load(std::memory_order_relaxed)) return;
            lane = lane_;
            if (!tasks_.empty()) {
                task = std::move(tasks_.front().task);
                lane_end = tasks_.front().lane_end;
                tasks_.pop_front();
            } else if (lane) {
                lane_end = lane_->end();
            }
        }
        // What the hooks put in the lane before the task was posted comes first.
        if (lane) drain_lane(*lane, lane_end);
        if (task) completes([&] { task(*this); });
    }
}

} // namespace uvmp::driver

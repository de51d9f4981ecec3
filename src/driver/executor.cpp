#include "driver/executor.h"

#include "core/util/log.h"
#include "driver/stream_capture.h"

#include <cstdint>
#include <exception>
#include <new>

namespace uvmp::driver {

bool Executor::post_unless_backlogged(Task task, size_t limit) { return enqueue(std::move(task), limit); }

void Executor::post(Task task) { enqueue(std::move(task), SIZE_MAX); }

bool Executor::enqueue(Task task, size_t limit) {
    // One lock a task: the application's launch path posts one per launch.
    std::unique_lock lock(mutex_);
    if (stopping_ || tasks_.size() >= limit) return false;
    tasks_.push_back(std::move(task));
    if (!started_) {
        started_ = true;
        std::thread(&Executor::run, this).detach();
    }
    // Only a sleeping worker is woken, once: a wake-up is a system call on the
    // application's launch path, and a busy or gathering worker finds the task anyway.
    const bool wake = worker_sleeping_;
    worker_sleeping_ = false;
    lock.unlock();
    if (wake) wake_.notify_one();
    return true;
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
        stopping_ = true;
        tasks_.clear();
    }
    wake_.notify_all();
}

void Executor::forget_after_fork() {
    // The parent's worker may have been waiting on it: a condition variable with
    // waiters that no longer exist can hold up the next notify.
    new (&wake_) std::condition_variable;
    tasks_.clear();
    streams_.clear();
    started_ = false;
    stopping_ = false;
    worker_sleeping_ = false;
}

void Executor::run() {
    if (const DriverTable* table = driver_table_if_ready()) relax_capture_mode_of_this_thread(*table);
    for (;;) {
        Task task;
        {
            std::unique_lock lock(mutex_);
            if (tasks_.empty() && !stopping_) {
                worker_sleeping_ = true;
                wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
                worker_sleeping_ = false;
                // Woken by the first task of a burst (the application launching kernels):
                // let the burst gather for a moment instead of being woken for each launch.
                wake_.wait_for(lock, kGatherTime, [this] { return stopping_; });
            }
            if (stopping_) return;
            task = std::move(tasks_.front());
            tasks_.pop_front();
        }
        // A task that throws (out of memory in the residency model, say) must not
        // take the application with it: the exception would end the process.
        // The task's work is lost; the worker goes on with the next.
        try {
            task(*this);
        } catch (const std::exception& e) {
            UVMP_WARN_ONCE("the library's worker hit an error and skipped that piece of work: {}", e.what());
        } catch (...) {
            UVMP_WARN_ONCE("the library's worker hit an unknown error and skipped that piece of work");
        }
    }
}

} // namespace uvmp::driver

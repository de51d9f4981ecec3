// The library's worker thread. Everything that can block for as long as a
// transfer (prefetch, population, waiting on an event before a deferred free)
// runs here, never on the application's threads.
#pragma once

#include "driver/driver_table.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace uvmp::driver {

class Executor {
public:
    using Task = std::function<void(Executor&)>;

    // Queues a task; starts the worker on first use. Never blocks on the task.
    void post(Task task);
    // Queues a task unless limit tasks are already waiting (the worker is behind)
    // or the worker is stopping; false when dropped.
    bool post_unless_backlogged(Task task, size_t limit);

    // On the worker: the context made current, and the library's own non-blocking
    // stream in it (created on first use). nullptr if the stream cannot be made.
    CUstream stream_for(const DriverTable& table, CUcontext context);

    // Stop taking tasks; the worker finishes the one in hand and exits. Not joined:
    // at process exit the driver may already be going away.
    void stop();

    // Around fork(): the queue's lock, held while the process is copied.
    void lock_for_fork() { mutex_.lock(); }
    void unlock_after_fork() { mutex_.unlock(); }
    // In a forked child, after unlock_after_fork: the worker thread does not exist
    // there and the parent's queued tasks refer to the parent's contexts. Start
    // afresh; the worker starts again with the child's first task.
    void forget_after_fork();

private:
    bool enqueue(Task task, size_t limit);
    void run();

    // How long a woken worker lets tasks gather before it starts on them. Planning a
    // launch this much later costs nothing next to a transfer of milliseconds.
    static constexpr std::chrono::microseconds kGatherTime{100};

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Task> tasks_;
    bool started_ = false;
    bool stopping_ = false;
    bool worker_sleeping_ = false; // waiting for a task; only then does posting wake it
    std::unordered_map<CUcontext, CUstream> streams_; // worker thread only
};

} // namespace uvmp::driver

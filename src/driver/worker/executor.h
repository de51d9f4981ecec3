// The library's worker thread. Everything that can block for as long as a
// transfer (prefetch, population, waiting on an event before a deferred free)
// runs here, never on the application's threads.
#pragma once

#include "driver/table/driver_table.h"

#include <atomic>
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

    // Work that reaches the worker without a task of its own: records the
    // application's threads put in a ring (driver/worker/launch_lane.h), so that their
    // path takes no lock and allocates nothing. The worker drains the lane in
    // order, and before each task everything put there before the task was
    // posted: what the hooks saw in one order, the worker does in that order.
    class Lane {
    public:
        virtual ~Lane() = default;
        // The position the next record will take (MpscRing::end). Any thread.
        virtual uint64_t end() const = 0;
        // On the worker: handles the records before `end`.
        virtual void drain_until(uint64_t end) = 0;
        // On the worker: whether nothing was put that it has not handled.
        virtual bool empty() const = 0;
        // In a forked child, where nobody else uses it: empty again.
        virtual void reset() = 0;
    };

    // Before anything is put in the lane or posted: the lane the worker drains.
    void set_lane(Lane* lane);
    // After a record was put in the lane. Costs a wake-up (a system call) only
    // where the worker sleeps, which it does only once idle for kIdleBeforeSleep.
    void lane_filled();
    // False once stopping: what is put in the lane then is never handled.
    bool accepting() const { return !stopping_.load(std::memory_order_acquire); }

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
    // there and the parent's queued tasks and lane records refer to the parent's
    // contexts. Start afresh; the worker starts again with the child's first task.
    void forget_after_fork();

private:
    struct Queued {
        Task task;
        uint64_t lane_end; // the lane's end when the task was posted
    };

    bool enqueue(Task task, size_t limit);
    void start_locked();
    void run();
    // Under the lock: nothing to do.
    bool idle_locked() const { return tasks_.empty() && (!lane_ || lane_->empty()); }
    // Under the lock, while idle: polls, then sleeps until woken. False when stopping.
    bool wait_for_work(std::unique_lock<std::mutex>& lock);
    // Tells a sleeping worker there is work; the caller does not hold the lock.
    void wake_if_sleeping();
    void drain_lane(Lane& lane, uint64_t end);

    // How long a woken worker lets tasks gather before it starts on them, and how
    // often an idle one looks for work before it sleeps. Planning a launch this
    // much later costs nothing next to a transfer of milliseconds.
    static constexpr std::chrono::microseconds kGatherTime{100};
    // An idle worker looks for work every kGatherTime this long before it sleeps:
    // while the application launches, the worker never sleeps, and a launch
    // never pays for waking it.
    static constexpr std::chrono::milliseconds kIdleBeforeSleep{20};

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Queued> tasks_;
    Lane* lane_ = nullptr;
    std::atomic<bool> started_{false};
    std::atomic<bool> stopping_{false};
    // Waiting for work with nothing to wake it but a notify: only then does
    // posting or filling the lane wake it.
    std::atomic<bool> sleeping_{false};
    std::unordered_map<CUcontext, CUstream> streams_; // worker thread only
};

} // namespace uvmp::driver

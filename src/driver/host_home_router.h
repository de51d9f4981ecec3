// Which converted allocations of this run live on the host (UVMP_HOST_HOMES):
// the homes learned from an earlier run's trace recorded with kernel timing
// (core/placement/recorded_homes.h), routed by allocation order and size
// (core/placement/home_sequence.h). Set up on the first conversion, once the
// device's budget is known; every later conversion asks it in order.
#pragma once

#include "core/config/options.h"
#include "core/placement/home_sequence.h"

#include <atomic>
#include <cstdint>
#include <mutex>

namespace uvmp::driver {

class HostHomeRouter {
public:
    explicit HostHomeRouter(const Config& config) : config_(config) {}

    // The home of the run's next converted allocation, of `bytes` on `device`
    // whose budget is `budget_bytes`. Any thread; the calls' order is the
    // order the sequence follows.
    placement::Home home_of(int device, uint64_t bytes, uint64_t budget_bytes);
    // What routing did, in one log line (at exit).
    void report() const;

    // Around fork(): the sequence's lock, held while the process is copied. A
    // child allocates as nothing recorded: it homes everything on the GPU.
    void lock_for_fork() { mutex_.lock(); }
    void unlock_after_fork() { mutex_.unlock(); }
    void forget_after_fork() { routing_.store(false, std::memory_order_relaxed); }

private:
    void set_up(int device, uint64_t budget_bytes);

    const Config& config_;
    std::once_flag once_;
    std::atomic<bool> routing_{false};
    int device_ = -1; // the device the homes were chosen for: its budget decided them
    mutable std::mutex mutex_;
    placement::HomeSequence sequence_;
};

} // namespace uvmp::driver

// Per-device accounting of converted memory against the physical guard and the
// budget. Pure arithmetic: the caller supplies the device's figures once.
#pragma once

#include "core/config/options.h"

#include <atomic>
#include <cstdint>
#include <string>

namespace uvmp {

class DeviceBudget {
public:
    // free_at_start/total: what the device reported before the first conversion.
    void configure(const Config& config, uint64_t free_at_start, uint64_t total);
    bool configured() const { return configured_.load(std::memory_order_acquire); }

    // Reserves bytes for a new converted allocation. False when the physical guard
    // refuses (the reservation is then not made).
    bool try_reserve(uint64_t bytes);
    void release(uint64_t bytes);

    // Keeps `*devices_over` counting this device while its converted memory exceeds
    // its budget: a caller that asks on every launch whether all converted memory
    // fits reads one counter instead of every device. Set before any reservation.
    void count_over_budget_in(std::atomic<uint32_t>* devices_over) { devices_over_ = devices_over; }
    bool over_budget() const { return converted_live() > budget_; }

    uint64_t guard_limit() const { return guard_limit_; }
    uint64_t budget() const { return budget_; }
    uint64_t total() const { return total_; }
    uint64_t converted_live() const { return converted_live_.load(std::memory_order_relaxed); }
    bool guard_enforced() const { return guard_enforced_; }

    // What cuMemGetInfo reports to the job: the budget as the capacity, and what is
    // left of it after the job's own allocations.
    void report(uint64_t other_live_bytes, uint64_t& free_out, uint64_t& total_out) const;

    // Why the guard refused, and what to set: one sentence.
    std::string refusal_message(uint64_t requested) const;

private:
    std::atomic<bool> configured_{false};
    uint64_t guard_limit_ = 0;
    uint64_t budget_ = 0;
    uint64_t total_ = 0;
    bool guard_enforced_ = true;
    std::atomic<uint64_t> converted_live_{0};
    std::atomic<uint32_t>* devices_over_ = nullptr;

    // Counts a crossing of the budget by one change of converted_live_ from `before`
    // to `after`: each change is one atomic step, so the crossings alternate.
    void note_crossing(uint64_t before, uint64_t after);
};

} // namespace uvmp

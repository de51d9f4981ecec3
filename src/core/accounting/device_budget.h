// Per-device accounting of converted memory, in two figures: the physical guard
// counts what the library asked of the driver (the managed pool's slabs), the
// budget counts the bytes of live blocks handed to the application. Pure
// arithmetic: the caller supplies the device's figures once.
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

    // The physical guard. Reserves bytes about to be asked of the driver (a slab);
    // false when the guard refuses (the reservation is then not made).
    bool try_reserve(uint64_t bytes);
    void release(uint64_t bytes);
    uint64_t reserved() const { return reserved_.load(std::memory_order_relaxed); }

    // The budget's figure: bytes of live blocks, whatever slabs hold them.
    void add_live(uint64_t bytes);
    void remove_live(uint64_t bytes);
    uint64_t converted_live() const { return converted_live_.load(std::memory_order_relaxed); }

    // Keeps `*devices_over` counting this device while its live converted memory
    // exceeds its budget: a caller that asks on every launch whether all converted
    // memory fits reads one counter instead of every device. Set before any change.
    void count_over_budget_in(std::atomic<uint32_t>* devices_over) { devices_over_ = devices_over; }
    bool over_budget() const { return converted_live() > budget_; }

    uint64_t guard_limit() const { return guard_limit_; }
    uint64_t budget() const { return budget_; }
    uint64_t total() const { return total_; }
    bool guard_enforced() const { return guard_enforced_; }

    // What cuMemGetInfo reports to the job: the budget as the capacity, and what is
    // left of it after the job's converted live allocations and `other_used_bytes`
    // (memory it holds outside the pool, and what a native pool would keep cached).
    void report(uint64_t other_used_bytes, uint64_t& free_out, uint64_t& total_out) const;

    // Why the guard refused `reservation` bytes asked for an allocation of
    // `requested`, and what to set: one sentence.
    std::string refusal_message(uint64_t requested, uint64_t reservation) const;

private:
    std::atomic<bool> configured_{false};
    uint64_t guard_limit_ = 0;
    uint64_t budget_ = 0;
    uint64_t total_ = 0;
    bool guard_enforced_ = true;
    std::atomic<uint64_t> reserved_{0};
    std::atomic<uint64_t> converted_live_{0};
    std::atomic<uint32_t>* devices_over_ = nullptr;

    // Counts a crossing of the budget by one change of converted_live_ from `before`
    // to `after`: each change is one atomic step, so the crossings alternate.
    void note_crossing(uint64_t before, uint64_t after);
};

} // namespace uvmp

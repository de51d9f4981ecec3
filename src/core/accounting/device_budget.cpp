#include "core/accounting/device_budget.h"

#include "core/util/size_parse.h"

#include <algorithm>

namespace uvmp {

void DeviceBudget::configure(const Config& config, uint64_t free_at_start, uint64_t total) {
    total_ = total;
    guard_limit_ = free_at_start > config.reserve ? free_at_start - config.reserve : 0;
    guard_enforced_ = !config.allow_physical_oversubscription;
    budget_ = config.budget ? config.budget->resolve(total) : guard_limit_;
    configured_.store(true, std::memory_order_release);
}

bool DeviceBudget::try_reserve(uint64_t bytes) {
    const uint64_t before = reserved_.fetch_add(bytes, std::memory_order_relaxed);
    if (!guard_enforced_ || before + bytes <= guard_limit_) return true;
    release(bytes);
    return false;
}

void DeviceBudget::release(uint64_t bytes) { reserved_.fetch_sub(bytes, std::memory_order_relaxed); }

void DeviceBudget::add_live(uint64_t bytes) {
    const uint64_t before = converted_live_.fetch_add(bytes, std::memory_order_relaxed);
    note_crossing(before, before + bytes);
}

void DeviceBudget::remove_live(uint64_t bytes) {
    const uint64_t before = converted_live_.fetch_sub(bytes, std::memory_order_relaxed);
    note_crossing(before, before - bytes);
}

void DeviceBudget::note_crossing(uint64_t before, uint64_t after) {
    if (!devices_over_) return;
    const bool was_over = before > budget_, is_over = after > budget_;
    if (!was_over && is_over) devices_over_->fetch_add(1, std::memory_order_release);
    else if (was_over && !is_over) devices_over_->fetch_sub(1, std::memory_order_release);
}

void DeviceBudget::report(uint64_t other_used_bytes, uint64_t& free_out, uint64_t& total_out) const {
    const uint64_t used = converted_live() + other_used_bytes;
    total_out = budget_;
    free_out = used >= budget_ ? 0 : budget_ - used;
}

std::string DeviceBudget::refusal_message(uint64_t requested, uint64_t reservation) const {
    return "allocation of " + format_size(requested) + " refused: the library's managed memory would reach " +
           format_size(reserved() + reservation) + ", past the physical guard of " + format_size(guard_limit_) +
           " (free device memory at start less UVMP_RESERVE). Lower the job's footprint, lower "
           "UVMP_RESERVE, or set UVMP_ALLOW_PHYSICAL_OVERSUBSCRIPTION=1 if this GPU is not shared";
}

} // namespace uvmp

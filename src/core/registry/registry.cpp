#include "core/registry/registry.h"

#include <mutex>
#include <new>

namespace uvmp {

uint32_t Registry::add(uint64_t base, uint64_t size, int32_t device, void* context, bool stream_ordered,
                       bool host_homed) {
    std::unique_lock lock(mutex_);
    const uint32_t id = next_id_++;
    by_base_[base] = Allocation{id, base, size, device, context, stream_ordered, host_homed};
    if (base < low_.load(std::memory_order_relaxed)) low_.store(base, std::memory_order_relaxed);
    if (base + size > high_.load(std::memory_order_relaxed))
        high_.store(base + size, std::memory_order_relaxed);
    return id;
}

std::optional<Allocation> Registry::remove(uint64_t base) {
    std::unique_lock lock(mutex_);
    auto it = by_base_.find(base);
    if (it == by_base_.end()) return std::nullopt;
    Allocation a = it->second;
    by_base_.erase(it);
    // The bounds only shrink when the map empties: a stale wider bound costs a
    // map look-up, never a wrong answer.
    if (by_base_.empty()) {
        low_.store(UINT64_MAX, std::memory_order_relaxed);
        high_.store(0, std::memory_order_relaxed);
    }
    return a;
}

std::optional<Allocation> Registry::find_base(uint64_t base) const {
    std::shared_lock lock(mutex_);
    auto it = by_base_.find(base);
    if (it == by_base_.end()) return std::nullopt;
    return it->second;
}

std::optional<Allocation> Registry::home_in_place(uint64_t base, uint32_t id, bool on_host) {
    std::unique_lock lock(mutex_);
    auto it = by_base_.find(base);
    if (it == by_base_.end() || it->second.id != id) return std::nullopt;
    Allocation& a = it->second;
    if (a.host_homed != a.homed_in_place || a.homed_in_place == on_host) return std::nullopt;
    a.host_homed = a.homed_in_place = on_host;
    return a;
}

std::optional<AccessHit> Registry::find(uint64_t address) const {
    if (!may_contain(address)) return std::nullopt;
    std::shared_lock lock(mutex_);
    return find_locked(address);
}

void Registry::find_all(std::span<const uint64_t> addresses, std::vector<AccessHit>& hits) const {
    if (addresses.empty()) return;
    std::shared_lock lock(mutex_);
    for (uint64_t address : addresses)
        if (auto hit = find_locked(address)) hits.push_back(*hit);
}

std::optional<AccessHit> Registry::find_locked(uint64_t address) const {
    auto it = by_base_.upper_bound(address);
    if (it == by_base_.begin()) return std::nullopt;
    --it;
    const Allocation& a = it->second;
    if (address >= a.base + a.size) return std::nullopt;
    return AccessHit{a.id, address - a.base};
}

size_t Registry::size() const {
    std::shared_lock lock(mutex_);
    return by_base_.size();
}

std::vector<Allocation> Registry::snapshot() const {
    std::shared_lock lock(mutex_);
    std::vector<Allocation> out;
    out.reserve(by_base_.size());
    for (const auto& [base, a] : by_base_) out.push_back(a);
    return out;
}

void Registry::unlock_after_fork(bool in_child) {
    if (in_child) new (&mutex_) std::shared_mutex;
    else mutex_.unlock();
}

void Registry::clear() {
    std::unique_lock lock(mutex_);
    by_base_.clear();
    low_.store(UINT64_MAX, std::memory_order_relaxed);
    high_.store(0, std::memory_order_relaxed);
}

} // namespace uvmp

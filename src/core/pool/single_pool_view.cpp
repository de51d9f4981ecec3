#include "core/pool/single_pool_view.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace uvmp::pool {
namespace {

void raise_to(std::atomic<uint64_t>& mark, uint64_t value) {
    uint64_t seen = mark.load(std::memory_order_relaxed);
    while (seen < value && !mark.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
}

} // namespace

SinglePoolView::SinglePoolView(uint64_t granularity) : granularity_(granularity) {
    if (!std::has_single_bit(granularity)) throw std::invalid_argument("pool view: granularity must be a power of two");
}

void SinglePoolView::allocated(uint64_t bytes) {
    const uint64_t live = live_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    const uint64_t reserved = rounded(live);
    raise_to(cached_, reserved);
    raise_to(high_, reserved);
}

void SinglePoolView::freed(uint64_t bytes) {
    uint64_t seen = live_.load(std::memory_order_relaxed);
    // A free the view never saw allocated (made before it counted) must not wrap.
    while (!live_.compare_exchange_weak(seen, seen - std::min(seen, bytes), std::memory_order_relaxed)) {
    }
}

void SinglePoolView::trimmed(uint64_t keep_bytes) {
    const uint64_t floor = rounded(live());
    uint64_t seen = cached_.load(std::memory_order_relaxed);
    while (!cached_.compare_exchange_weak(seen, std::max(floor, std::min(seen, rounded(keep_bytes))),
                                          std::memory_order_relaxed)) {
    }
}

uint64_t SinglePoolView::reserved(uint64_t held) const {
    const uint64_t floor = rounded(live());
    return std::max(floor, std::min(cached_.load(std::memory_order_relaxed), held));
}

uint64_t SinglePoolView::reserved_high(uint64_t held) const {
    return std::max(high_.load(std::memory_order_relaxed), reserved(held));
}

void SinglePoolView::reset_high(uint64_t held) { high_.store(reserved(held), std::memory_order_relaxed); }

} // namespace uvmp::pool

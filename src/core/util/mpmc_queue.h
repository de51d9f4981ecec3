// A fixed queue of small values that any number of threads put in and take
// from (Dmitry Vyukov's bounded queue, as core/util/mpsc_ring.h for many
// consumers): neither side allocates, locks or waits. A full queue refuses the
// value, an empty one gives none.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace uvmp {

template <typename T>
class MpmcQueue {
public:
    // Room for `capacity` values, rounded up to a power of two; allocated here, once.
    explicit MpmcQueue(size_t capacity)
        : capacity_(std::bit_ceil(capacity < 2 ? size_t{2} : capacity)), slots_(new Slot[capacity_]) {
        for (size_t i = 0; i < capacity_; ++i) slots_[i].sequence.store(i, std::memory_order_relaxed);
    }
    MpmcQueue(const MpmcQueue&) = delete;
    MpmcQueue& operator=(const MpmcQueue&) = delete;

    bool try_push(const T& value) {
        return claim(head_, 0, [&](Slot& slot, uint64_t position) {
            slot.value = value;
            slot.sequence.store(position + 1, std::memory_order_release);
        });
    }

    bool try_pop(T& out) {
        return claim(tail_, 1, [&](Slot& slot, uint64_t position) {
            out = slot.value;
            slot.sequence.store(position + capacity_, std::memory_order_release);
        });
    }

    size_t capacity() const { return capacity_; }

private:
    struct Slot {
        std::atomic<uint64_t> sequence{0};
        T value{};
    };

    // Claims the place at `end` (the producers' head or the consumers' tail) once
    // its sequence is `end + turn`, then has use(slot, position) fill or empty it.
    // False when the place is a lap behind: the queue is full (for producers) or
    // empty (for consumers).
    template <typename Use>
    bool claim(std::atomic<uint64_t>& end, uint64_t turn, Use&& use) {
        uint64_t position = end.load(std::memory_order_relaxed);
        for (;;) {
            Slot& slot = slots_[position & (capacity_ - 1)];
            const auto lead =
                static_cast<int64_t>(slot.sequence.load(std::memory_order_acquire) - (position + turn));
            if (lead == 0) {
                if (end.compare_exchange_weak(position, position + 1, std::memory_order_relaxed)) {
                    use(slot, position);
                    return true;
                }
            } else if (lead < 0) {
                return false;
            } else {
                position = end.load(std::memory_order_relaxed);
            }
        }
    }

    const size_t capacity_;
    const std::unique_ptr<Slot[]> slots_;
    alignas(64) std::atomic<uint64_t> head_{0};
    alignas(64) std::atomic<uint64_t> tail_{0};
};

} // namespace uvmp

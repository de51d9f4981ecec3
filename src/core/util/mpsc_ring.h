// A fixed ring of records that any number of threads put in and one thread
// takes out, in the order their places were claimed (a bounded queue after
// Dmitry Vyukov's: each place carries a sequence number saying whose turn it is).
// Putting a record never allocates, locks or waits: a full ring refuses the
// record, so that a producer never waits on the consumer. The consumer may have
// to wait for a record whose place was claimed and not yet written, which takes
// the producer no more than the copy of the record.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

namespace uvmp {

template <typename T>
class MpscRing {
public:
    // Room for `capacity` records, rounded up to a power of two; allocated here, once.
    explicit MpscRing(size_t capacity)
        : capacity_(std::bit_ceil(capacity < 2 ? size_t{2} : capacity)), slots_(new Slot[capacity_]) {
        reset();
    }
    MpscRing(const MpscRing&) = delete;
    MpscRing& operator=(const MpscRing&) = delete;

    // Any thread: claims the next place and has fill(T&) write the record there;
    // false, with fill not called, when the ring is full.
    template <typename Fill>
    bool try_push(Fill&& fill) {
        uint64_t position = head_.load(std::memory_order_relaxed);
        Slot* slot;
        for (;;) {
            slot = &slots_[position & (capacity_ - 1)];
            const uint64_t sequence = slot->sequence.load(std::memory_order_acquire);
            const auto lead = static_cast<int64_t>(sequence - position);
            if (lead == 0) {
                if (head_.compare_exchange_weak(position, position + 1, std::memory_order_relaxed)) break;
            } else if (lead < 0) {
                return false; // the record a lap ago is not taken yet
            } else {
                position = head_.load(std::memory_order_relaxed);
            }
        }
        fill(slot->record);
        slot->sequence.store(position + 1, std::memory_order_release);
        return true;
    }

    // The place the next record will take: every record put before this call is before it.
    uint64_t end() const { return head_.load(std::memory_order_acquire); }

    // Consumer: takes the records before `end` in order, take(const T&) each,
    // waiting for any still being written. Returns how many it took. A record
    // whose take throws is taken all the same: the exception leaves the rest.
    template <typename Take>
    size_t pop_until(uint64_t end, Take&& take) {
        size_t taken = 0;
        while (tail_ < end) {
            Slot& slot = slots_[tail_ & (capacity_ - 1)];
            for (unsigned spins = 0; slot.sequence.load(std::memory_order_acquire) != tail_ + 1; ++spins)
                if (spins >= kSpinsBeforeYield) std::this_thread::yield();
            const Release release{*this, slot};
            ++taken;
            take(static_cast<const T&>(slot.record));
        }
        return taken;
    }

    // Consumer: whether no place was claimed past what was taken.
    bool empty() const { return head_.load(std::memory_order_acquire) == tail_; }

    size_t capacity() const { return capacity_; }

    // Back to empty, forgetting what it holds. Only where no other thread can be
    // using it (a forked child, where the threads of the parent do not exist).
    void reset() {
        for (size_t i = 0; i < capacity_; ++i) slots_[i].sequence.store(i, std::memory_order_relaxed);
        head_.store(0, std::memory_order_relaxed);
        tail_ = 0;
    }

private:
    // A place a producer claimed is written at once: past a few rounds of spinning
    // the producer has been preempted, and the consumer lets it run.
    static constexpr unsigned kSpinsBeforeYield = 64;

    // One cache line (or more) a place: producers writing neighbouring places, and
    // the consumer reading the one before, do not share one.
    struct alignas(64) Slot {
        std::atomic<uint64_t> sequence{0};
        T record{};
    };

    // Hands the consumer's place back to the producers, a lap on.
    struct Release {
        MpscRing& ring;
        Slot& slot;
        ~Release() {
            slot.sequence.store(ring.tail_ + ring.capacity_, std::memory_order_release);
            ++ring.tail_;
        }
    };

    const size_t capacity_;
    const std::unique_ptr<Slot[]> slots_;
    alignas(64) std::atomic<uint64_t> head_{0};
    alignas(64) uint64_t tail_ = 0; // the consumer's
};

} // namespace uvmp

// A hash map from 64-bit keys to small values, for hot lookups (the pool's
// live blocks by address, streams and fences by handle; the registry's address
// granules): open addressing with linear probing and backward-shift deletion,
// so that neither a lookup nor an erase allocates. Keys are anything but
// kEmpty (no block starts at, no handle is, and no granule is 2^64 - 1).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace uvmp {

template <class V>
class FlatMap {
public:
    static constexpr uint64_t kEmpty = ~uint64_t{0};

    FlatMap() { rehash(64); }

    V* find(uint64_t key) {
        for (size_t i = home(key);; i = (i + 1) & mask_) {
            if (slots_[i].key == key) return &slots_[i].value;
            if (slots_[i].key == kEmpty) return nullptr;
        }
    }
    const V* find(uint64_t key) const { return const_cast<FlatMap*>(this)->find(key); }

    // `key` must be absent.
    void insert(uint64_t key, V value) {
        if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
        size_t i = home(key);
        while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
        slots_[i] = {key, value};
        ++size_;
    }

    bool erase(uint64_t key) { return take(key, nullptr); }

    // Erases `key`, its value to *out; false when absent.
    bool take(uint64_t key, V* out) {
        size_t i = home(key);
        while (slots_[i].key != key) {
            if (slots_[i].key == kEmpty) return false;
            i = (i + 1) & mask_;
        }
        if (out) *out = slots_[i].value;
        for (size_t j = (i + 1) & mask_; slots_[j].key != kEmpty; j = (j + 1) & mask_) {
            const size_t k = home(slots_[j].key);
            // The entry at j may fill the hole at i if i lies on its probe path.
            if (((i - k) & mask_) < ((j - k) & mask_)) {
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i].key = kEmpty;
        --size_;
        return true;
    }

    size_t size() const { return size_; }

    template <class F>
    void for_each(F&& f) const {
        for (const Entry& e : slots_)
            if (e.key != kEmpty) f(e.key, e.value);
    }

private:
    struct Entry {
        uint64_t key = kEmpty;
        V value{};
    };
    size_t home(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }
    void rehash(size_t slots) {
        std::vector<Entry> old = std::move(slots_);
        slots_.assign(slots, Entry{});
        mask_ = slots - 1;
        shift_ = 64 - static_cast<unsigned>(std::countr_zero(slots));
        size_ = 0;
        for (const Entry& e : old)
            if (e.key != kEmpty) insert(e.key, e.value);
    }

    std::vector<Entry> slots_;
    size_t mask_ = 0;
    unsigned shift_ = 0;
    size_t size_ = 0;
};

} // namespace uvmp

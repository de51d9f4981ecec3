// Free pieces of the pool by size, for best fit: bins exact below 128 units of
// the alignment, then 64 to each power of two; each bin's list in ascending
// size (equal sizes: the most recently freed first). A bitmap finds the next
// bin that holds any. The pieces link into their bin themselves (Piece's
// bin_prev, bin_next), so inserting and erasing allocate nothing.
#pragma once

#include "core/pool/pool_pieces.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace uvmp::pool {

class FreeIndex {
public:
    static constexpr unsigned kBins = 128 + 56 * 64;
    static constexpr unsigned kWords = (kBins + 63) / 64;
    static_assert(kWords <= 64);
    // Free pieces looked at in one search before it jumps to the sizes that
    // always fit: bounded work for a request that must start on a chunk boundary.
    static constexpr int kScan = 16;
    // Pieces of one size bin walked to keep it in ascending size.
    static constexpr int kInsertWalk = 64;

    // `unit_shift`: log2 of the alignment, the unit of the exact bins.
    explicit FreeIndex(unsigned unit_shift = 0) : shift_(unit_shift) {}

    bool empty() const { return count_ == 0; }

    void insert(Piece* s) {
        const uint32_t b = bin_of(s->size);
        s->index = this;
        s->bin = b;
        Piece*& head = heads_[b];
        if (!head || head->size >= s->size) {
            s->bin_prev = nullptr;
            s->bin_next = head;
            if (head) head->bin_prev = s;
            head = s;
            words_[b >> 6] |= uint64_t{1} << (b & 63);
            summary_ |= uint64_t{1} << (b >> 6);
        } else {
            // Bounded: past kInsertWalk pieces the list is left out of order
            // there (searches check every size; the fit may be a little worse).
            Piece* p = head;
            for (int n = 0; p->bin_next && p->bin_next->size < s->size && n < kInsertWalk; ++n) p = p->bin_next;
            s->bin_prev = p;
            s->bin_next = p->bin_next;
            if (p->bin_next) p->bin_next->bin_prev = s;
            p->bin_next = s;
        }
        ++count_;
    }

    void erase(Piece* s) {
        const uint32_t b = s->bin;
        if (s->bin_prev) s->bin_prev->bin_next = s->bin_next;
        else heads_[b] = s->bin_next;
        if (s->bin_next) s->bin_next->bin_prev = s->bin_prev;
        if (!heads_[b]) {
            words_[b >> 6] &= ~(uint64_t{1} << (b & 63));
            if (!words_[b >> 6]) summary_ &= ~(uint64_t{1} << (b >> 6));
        }
        s->bin_prev = s->bin_next = nullptr;
        s->index = nullptr;
        --count_;
    }

    // The smallest piece that holds `size` where `place` puts it; pieces of at
    // least `sure` bytes hold it wherever they lie. Bounded: past kScan pieces
    // the search takes the first piece of a bin above sure's.
    template <class Place>
    Piece* best(uint64_t size, uint64_t sure, Place&& place, uint64_t& start) const {
        if (count_ == 0) return nullptr;
        int looked = 0;
        const uint32_t first = bin_of(size);
        for (uint32_t b = first; b < kBins; b = next_bin(b + 1)) {
            for (Piece* p = heads_[b]; p; p = p->bin_next) {
                if (++looked > kScan) goto jump;
                if (p->size >= size && place(p, size, start)) return p;
            }
        }
        return nullptr;
    jump:
        for (uint32_t b = next_bin(bin_of(sure) + 1); b < kBins; b = next_bin(b + 1))
            for (Piece* p = heads_[b]; p; p = p->bin_next)
                if (place(p, size, start)) return p;
        return nullptr;
    }

    // Each piece of at least `size` bytes, smallest first, until `visit` returns
    // false or `limit` pieces have been visited.
    template <class Visit>
    void each_holding(uint64_t size, int limit, Visit&& visit) const {
        if (count_ == 0) return;
        int visited = 0;
        for (uint32_t b = next_bin(bin_of(size)); b < kBins; b = next_bin(b + 1))
            for (Piece* p = heads_[b]; p; p = p->bin_next) {
                if (p->size < size) continue;
                if (++visited > limit || !visit(p)) return;
            }
    }

private:
    uint32_t bin_of(uint64_t size) const {
        const uint64_t u = size >> shift_;
        if (u < 128) return static_cast<uint32_t>(u);
        const unsigned top = 63u - static_cast<unsigned>(std::countl_zero(u));
        const uint32_t b = 128 + (top - 7) * 64 + static_cast<uint32_t>((u >> (top - 6)) & 63);
        return std::min(b, kBins - 1);
    }
    // The first bin at or after b that holds a piece; kBins if none.
    uint32_t next_bin(uint32_t b) const {
        if (b >= kBins) return kBins;
        unsigned w = b >> 6;
        uint64_t bits = words_[w] & (~uint64_t{0} << (b & 63));
        if (!bits) {
            const uint64_t rest = w + 1 < 64 ? summary_ & (~uint64_t{0} << (w + 1)) : 0;
            if (!rest) return kBins;
            w = static_cast<unsigned>(std::countr_zero(rest));
            bits = words_[w];
        }
        return w * 64 + static_cast<uint32_t>(std::countr_zero(bits));
    }

    std::array<Piece*, kBins> heads_{};
    std::array<uint64_t, kWords> words_{};
    uint64_t summary_ = 0;
    size_t count_ = 0;
    unsigned shift_ = 0;
};

} // namespace uvmp::pool

// Where the managed pool puts a block: best fit among the free pieces usable
// on the allocating stream, a block of a chunk or more on a chunk boundary of
// its slab, smaller ones on the alignment. With a placement hint
// (core/pool/placement_hint.h), a block of a chunk or more goes over dead
// bytes whose pages still lie on the GPU, where any do.
#pragma once

#include "core/pool/free_index.h"
#include "core/pool/pool_pieces.h"
#include "core/util/round_up.h"

#include <cstdint>
#include <memory>

namespace uvmp::pool {

class PlacementHint;

class BlockPlacement {
public:
    explicit BlockPlacement(const PoolConfig& config) : cfg_(config) {}

    // Where a block of `size` would start in free piece `s`, if it fits.
    bool place(const Piece* s, uint64_t size, uint64_t& start) const {
        if (s->size < size) return false;
        if (size < cfg_.chunk_bytes) {
            start = s->addr;
            return true;
        }
        const uint64_t base = s->slab->base;
        const uint64_t at = base + round_up(s->addr - base, cfg_.chunk_bytes);
        if (at - s->addr > s->size - size) return false;
        start = at;
        return true;
    }

    // The best fit for `size` in one index.
    Piece* best_in(const FreeIndex& index, uint64_t size, uint64_t& start) const {
        return index.best(size, sure_size(size),
                          [this](const Piece* s, uint64_t n, uint64_t& at) { return place(s, n, at); }, start);
    }

    // Best fit over the pieces usable on a stream: `ready` ones and those of
    // `own_pending` (the stream's pending frees; nullptr: none), preferred when
    // as small: ready memory stays for everyone. With a hint, a block of a
    // chunk or more goes where it covers the most dead bytes still on the GPU,
    // if any (find_fit_on_resident_dead).
    Piece* find_fit(uint64_t size, const FreeIndex& ready, const FreeIndex* own_pending, uint64_t& start) const;

    void set_hint(std::shared_ptr<const PlacementHint> hint) { hint_ = std::move(hint); }
    // Whether the hint says GPU room is short (PlacementHint::room_is_short).
    bool room_is_short() const;
    // Tells the hint, if any, of a block freed at [begin, end) (PlacementHint::block_freed).
    void block_freed(uint64_t begin, uint64_t end) const;

private:
    // Pieces of at least this size hold a block of `size` wherever they lie.
    uint64_t sure_size(uint64_t size) const {
        return size < cfg_.chunk_bytes ? size : size + cfg_.chunk_bytes - cfg_.alignment;
    }
    Piece* find_fit_on_resident_dead(uint64_t size, const FreeIndex& ready, const FreeIndex* own_pending,
                                     uint64_t& start) const;

    const PoolConfig& cfg_;
    std::shared_ptr<const PlacementHint> hint_;
};

} // namespace uvmp::pool

// The slabs that the managed pool asked of the driver (through its
// SlabSource), and the pieces that cover each: the list of a slab's pieces in
// address order, the chunk directory that finds the piece holding an address,
// which chunks some block has covered (what the pool holds: reserved), and
// when a slab wholly free is given back (release_after_ns, retain_bytes).
#pragma once

#include "core/pool/node_recycler.h"
#include "core/pool/pool_pieces.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace uvmp::pool {

class PendingFrees;

// A slab taken out of the book, given back to the SlabSource once the lock is left.
struct ReleasedSlab {
    uint32_t id;
    uint64_t base, bytes;
};

class SlabSet {
public:
    explicit SlabSet(const PoolConfig& config);

    // A slab made at `base`: one ready piece (slab->first), in no index yet.
    Slab* add(uint64_t base, uint64_t bytes, bool is_arena);
    // Takes a wholly free slab out (its piece out of its index), onto `gone`.
    void remove(Slab* slab, std::vector<ReleasedSlab>& gone);
    // Wholly free slabs but the arena, the most recently used first.
    std::vector<Slab*> wholly_free_newest_first() const;
    void release_wholly_free(std::vector<ReleasedSlab>& gone);
    // The slab holding `address`, if any.
    const Slab* slab_holding(uint64_t address) const;

    // --- pieces ------------------------------------------------------------
    // A new piece [addr, addr + size), linked in before or after `s`.
    Piece* new_piece(Piece* s, uint64_t addr, uint64_t size, bool before);
    // `keep` takes over the adjacent `gone`'s range; `gone`'s node is recycled.
    Piece* join(Piece* keep, Piece* gone);
    // The piece of `slab` holding `address` (within it).
    Piece* piece_at(const Slab& slab, uint64_t address) const {
        Piece* s = slab.chunk_piece[(address - slab.base) >> chunk_shift_];
        while (s && address - s->addr >= s->size) s = s->next;
        return s;
    }
    // Marks the chunks of [addr, addr + size) covered; returns the span from the
    // first to the last of them that no block had covered before (empty: none).
    std::pair<uint64_t, uint64_t> note_backed(Slab& slab, uint64_t addr, uint64_t size);

    // --- giving idle slabs back ----------------------------------------------
    void became_wholly_free(Slab* slab, uint64_t since);
    // The slab's last live block was freed at `now`, some of its frees pending.
    void emptied_pending(uint64_t now) {
        next_idle_check_ = std::min(next_idle_check_, saturating_add(now, release_after_ns_));
    }
    bool idle_check_due(uint64_t now) const { return now >= next_idle_check_; }
    // From here on a slab goes back as soon as it is wholly free (but for
    // retain_bytes): GPU room is short (PlacementHint::room_is_short).
    void release_at_once() {
        release_after_ns_ = 0;
        next_idle_check_ = 0;
    }
    bool releases_at_once() const { return release_after_ns_ == 0; }
    // Gives back (onto `gone`) the slabs wholly free for release_after_ns, but
    // for the newest that fit in retain_bytes; asks first the fences of slabs
    // due but for pending frees.
    void release_idle(uint64_t now, PendingFrees& pending, std::vector<ReleasedSlab>& gone);

    const std::vector<std::unique_ptr<Slab>>& slabs() const { return slabs_; }
    uint64_t reserved() const { return reserved_; }
    uint64_t reserved_high() const { return reserved_high_; }
    void reset_reserved_high() { reserved_high_ = reserved_; }
    uint64_t slab_bytes() const { return slab_bytes_; }

private:
    // The chunks whose first byte lies in [lo, hi) now belong to `s`.
    void claim(Piece* s, uint64_t lo, uint64_t hi) {
        Slab* slab = s->slab;
        const uint64_t first = (lo - slab->base + cfg_.chunk_bytes - 1) >> chunk_shift_;
        for (uint64_t c = first; slab->base + (c << chunk_shift_) < hi; ++c) slab->chunk_piece[c] = s;
    }

    const PoolConfig& cfg_;
    const unsigned chunk_shift_;
    std::map<uint64_t, Slab*> slab_at_; // by base
    std::vector<std::unique_ptr<Slab>> slabs_;
    NodeRecycler<Piece> piece_nodes_;
    uint32_t next_slab_id_;
    uint64_t reserved_ = 0, reserved_high_ = 0; // backed bytes of the slabs
    uint64_t slab_bytes_ = 0;
    uint64_t release_after_ns_; // cfg_'s, until release_at_once
    // release_idle runs from allocate/free only once now_ns reaches this.
    uint64_t next_idle_check_ = kNever;
    // The last pass kept slabs for retain_bytes: a slab that becomes wholly free
    // may push the oldest of them out.
    bool retaining_ = false;
};

} // namespace uvmp::pool

// The managed pool's free memory: the index of pieces ready for every stream,
// the pieces' merging (adjacent free pieces alike merge on every change, so
// that no two could), and the gathering of a named range into one piece for
// the arena. Pieces pending on a stream are indexed by their stream
// (core/pool/pending_frees.h), which hands them back here when their fence
// completes.
#pragma once

#include "core/pool/free_index.h"
#include "core/pool/pending_frees.h"
#include "core/pool/pool_pieces.h"
#include "core/pool/slab_set.h"

#include <cstdint>

namespace uvmp::pool {

class FreeRanges final : public ReadyPieceSink {
public:
    // `unit_shift`: the alignment's log2, for the indexes.
    FreeRanges(unsigned unit_shift, SlabSet& slabs, PendingFrees& pending)
        : slabs_(slabs), pending_(pending), ready_(unit_shift), arena_free_(unit_shift) {}

    const FreeIndex& ready() const { return ready_; }
    FreeIndex& ready_index(const Slab* slab) { return slab->arena ? arena_free_ : ready_; }
    FreeIndex& pending_index(StreamFrees& st, const Slab* slab) { return slab->arena ? arena_free_ : st.pending; }

    // A block just freed (in no index) as free memory ready for every stream.
    void free_ready(Piece* s);
    // A block just freed (in no index) as free memory pending on `f`. It takes
    // in the ready memory beside it (see take_in_ready).
    void free_pending(Piece* s, HeldFence* f);
    // A free piece [addr, addr + size) like `s` (its kind, its fence), linked in
    // before or after it and inserted into `index`: what carving a block out of
    // `s` leaves.
    void split_off(Piece* s, uint64_t addr, uint64_t size, bool before, FreeIndex& index);

    // The free memory [address, address + size) of `slab` as one piece usable
    // on `stream`, or nullptr where any of it is live or waits on a fence not
    // yet completed.
    Piece* gather(const Slab& slab, uint64_t address, uint64_t size, StreamKey stream);

    void piece_ready(Piece* s) override;

private:
    static bool mergeable(const Piece* a, const Piece* b) {
        if (a->kind != b->kind || a->kind == PieceKind::Live) return false;
        return a->kind == PieceKind::Ready || a->stream == b->stream;
    }
    Piece* coalesce(Piece* s) {
        if (s->prev && mergeable(s->prev, s)) s = absorb(s, s->prev);
        if (s->next && mergeable(s->next, s)) s = absorb(s, s->next);
        return s;
    }
    Piece* absorb(Piece* s, Piece* nb);
    Piece* take_in_ready(Piece* s);
    Piece* absorb_ready(Piece* s, Piece* nb);

    SlabSet& slabs_;
    PendingFrees& pending_;
    FreeIndex ready_;
    // The arena's free pieces, ready or pending alike: never searched (allocate_at
    // finds its piece by address), kept only so that a free piece has an index.
    FreeIndex arena_free_;
};

} // namespace uvmp::pool

#include "core/pool/free_ranges.h"

namespace uvmp::pool {

void FreeRanges::free_ready(Piece* s) {
    s->kind = PieceKind::Ready;
    s = coalesce(s);
    ready_index(s->slab).insert(s);
}

void FreeRanges::free_pending(Piece* s, HeldFence* f) {
    Slab* slab = s->slab;
    s->kind = PieceKind::Pending;
    PendingFrees::attach(s, f);
    ++slab->pending;
    s = take_in_ready(coalesce(s));
    // The merged piece waits on the later of the fences: f's, unless f was
    // handed before (then f may be gone).
    pending_index(*s->fence->owner, slab).insert(s);
}

void FreeRanges::split_off(Piece* s, uint64_t addr, uint64_t size, bool before, FreeIndex& index) {
    Piece* n = slabs_.new_piece(s, addr, size, before);
    n->kind = s->kind;
    if (s->kind == PieceKind::Pending) {
        PendingFrees::attach(n, s->fence);
        ++s->slab->pending;
    }
    index.insert(n);
}

void FreeRanges::piece_ready(Piece* s) {
    s->index->erase(s);
    s->kind = PieceKind::Ready;
    Slab* slab = s->slab;
    --slab->pending;
    s = coalesce(s);
    ready_index(slab).insert(s);
    if (slab->live == 0 && slab->pending == 0) slabs_.became_wholly_free(slab, slab->empty_since);
}

// Merges the adjacent free pieces `s` (in no index) and `nb` (in one) and
// returns the piece kept: the larger node stays, so the chunk directory changes
// for the smaller's chunks only.
Piece* FreeRanges::absorb(Piece* s, Piece* nb) {
    nb->index->erase(nb);
    Piece* keep = nb->size > s->size ? nb : s;
    Piece* gone = keep == s ? nb : s;
    if (s->kind == PieceKind::Pending) {
        // Pending on one stream: one piece pending on the later fence.
        HeldFence* a = keep->fence;
        HeldFence* b = gone->fence;
        PendingFrees::detach(gone);
        --s->slab->pending;
        if (a != b) {
            if (b->seq > a->seq) {
                PendingFrees::detach(keep);
                PendingFrees::attach(keep, b);
            }
            pending_.settle(a);
            pending_.settle(b);
        }
    }
    return slabs_.join(keep, gone);
}

// A block just freed on a stream (pending, in no index) takes in the ready
// pieces beside it. The stream may use both at once either way, and one piece
// holds what two halves cannot: with the GPU a step behind, most frees are
// pending when their memory is asked for again, and blocks kept apart from
// their ready neighbours went to fresh memory instead (resnet50 covered all of
// its 12 GiB of slabs for 11.1 GiB live). Other streams wait for the fence for
// the whole, which costs a program of one stream nothing.
Piece* FreeRanges::take_in_ready(Piece* s) {
    if (s->prev && s->prev->kind == PieceKind::Ready) s = absorb_ready(s, s->prev);
    if (s->next && s->next->kind == PieceKind::Ready) s = absorb_ready(s, s->next);
    return s;
}

Piece* FreeRanges::absorb_ready(Piece* s, Piece* nb) {
    nb->index->erase(nb);
    Piece* keep = nb->size > s->size ? nb : s;
    Piece* gone = keep == s ? nb : s;
    if (keep == nb) {
        // The ready node stays: it waits on the block's fence from now on.
        HeldFence* f = s->fence;
        PendingFrees::detach(s);
        PendingFrees::attach(nb, f);
        nb->kind = PieceKind::Pending;
    }
    return slabs_.join(keep, gone);
}

// Pieces pending on other streams are completed once their fences have;
// then, the range being ready pieces and pieces pending on `stream` by turns
// (alike ones would have merged), a pending one takes in the others, as a free
// on the stream takes in the ready memory beside it.
Piece* FreeRanges::gather(const Slab& slab, uint64_t address, uint64_t size, StreamKey stream) {
    const uint64_t end = address + size;
    for (bool completed = true; completed;) {
        completed = false;
        for (Piece* p = slabs_.piece_at(slab, address); p && p->addr < end; p = p->next) {
            if (p->kind == PieceKind::Live) return nullptr;
            if (p->kind == PieceKind::Ready || (stream != kNoStream && p->stream == stream)) continue;
            HeldFence* f = p->fence;
            if (!pending_.completed_now(f)) return nullptr;
            // Completing merges pieces: the range is walked again.
            pending_.complete_through(*f->owner, f->seq);
            completed = true;
            break;
        }
    }
    Piece* s = slabs_.piece_at(slab, address);
    if (s->addr + s->size >= end) return s;
    if (stream == kNoStream) return nullptr; // not one piece: some of it is pending
    while (s->kind != PieceKind::Pending) s = s->next;
    s->index->erase(s);
    while (s->addr > address || s->addr + s->size < end) {
        Piece* nb = s->addr > address ? s->prev : s->next;
        s = nb->kind == PieceKind::Ready ? absorb_ready(s, nb) : absorb(s, nb);
    }
    pending_index(*s->fence->owner, s->slab).insert(s);
    return s;
}

} // namespace uvmp::pool

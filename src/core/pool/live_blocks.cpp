#include "core/pool/live_blocks.h"

#include <algorithm>

namespace uvmp::pool {

Block LiveBlocks::carve(Piece* s, uint64_t start, uint64_t size, PoolTag tag) {
    FreeIndex& index = *s->index;
    index.erase(s);
    Slab* slab = s->slab;
    slab->wholly_free = false;
    const uint64_t lo = s->addr, end = s->addr + s->size;
    const uint64_t front = start - lo, back = end - start - size;
    // The block or the rest after it keeps the node, so the chunk directory
    // changes for the others only: for a best fit, the gap in front is less
    // than a chunk; a block placed over dead memory may leave more there.
    if (front) free_.split_off(s, lo, front, true, index);
    Piece* block = s;
    if (back > size) {
        block = slabs_.new_piece(s, start, size, true);
        s->addr = start + size;
        s->size = back;
        index.insert(s);
    } else {
        if (back) free_.split_off(s, start + size, back, false, index);
        s->addr = start;
        s->size = size;
        if (s->kind == PieceKind::Pending) {
            HeldFence* f = s->fence;
            PendingFrees::detach(s);
            --slab->pending;
            pending_.settle(f);
        }
    }
    block->kind = PieceKind::Live;
    const auto [fresh_begin, fresh_end] = slabs_.note_backed(*slab, block->addr, size);
    TagUsage* t = tag == last_tag_ && last_usage_ ? last_usage_ : &tags_[tag];
    last_tag_ = tag;
    last_usage_ = t;
    block->tag = t;
    ++slab->live;
    live_.insert(block->addr, block);
    t->used += size;
    t->high = std::max(t->high, t->used);
    ++t->blocks;
    used_ += size;
    used_high_ = std::max(used_high_, used_);
    ++blocks_;
    return Block{block->addr, size, slab->id, slab->base, fresh_begin, fresh_end};
}

std::optional<uint64_t> LiveBlocks::release(uint64_t address, StreamKey stream, FenceKey fence, uint64_t now) {
    Piece* s = nullptr;
    if (!live_.take(address, &s)) {
        pending_.disown(fence);
        return std::nullopt;
    }
    const uint64_t size = s->size;
    TagUsage& t = *s->tag;
    t.used -= size;
    --t.blocks;
    used_ -= size;
    --blocks_;
    s->tag = nullptr;
    Slab* slab = s->slab;
    --slab->live;
    if (stream == kNoStream || fence == 0) {
        pending_.disown(fence);
        free_.free_ready(s);
    } else {
        free_.free_pending(s, pending_.fence_for(fence, stream));
    }
    if (slab->live == 0) {
        slab->empty_since = now;
        if (slab->pending == 0) slabs_.became_wholly_free(slab, now);
        else slabs_.emptied_pending(now);
    }
    return size;
}

std::optional<Block> LiveBlocks::find(uint64_t address) const {
    const Slab* slab = slabs_.slab_holding(address);
    if (!slab) return std::nullopt;
    const Piece* s = slabs_.piece_at(*slab, address);
    if (!s || s->kind != PieceKind::Live) return std::nullopt;
    return Block{s->addr, s->size, slab->id, slab->base};
}

} // namespace uvmp::pool

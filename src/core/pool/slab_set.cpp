#include "core/pool/slab_set.h"

#include "core/pool/free_index.h"
#include "core/pool/pending_frees.h"

#include <algorithm>
#include <bit>

namespace uvmp::pool {

SlabSet::SlabSet(const PoolConfig& config)
    : cfg_(config), chunk_shift_(static_cast<unsigned>(std::countr_zero(config.chunk_bytes))),
      next_slab_id_(config.first_slab_id), release_after_ns_(config.release_after_ns) {}

Slab* SlabSet::add(uint64_t base, uint64_t bytes, bool is_arena) {
    auto& slab = slabs_.emplace_back(std::make_unique<Slab>());
    slab->id = next_slab_id_++;
    slab->base = base;
    slab->bytes = bytes;
    slab->arena = is_arena;
    Piece* s = piece_nodes_.make();
    s->addr = base;
    s->size = bytes;
    s->slab = slab.get();
    s->kind = PieceKind::Ready;
    slab->first = s;
    slab->chunk_piece.assign(bytes >> chunk_shift_, s);
    slab->backed.assign(bytes >> chunk_shift_, false);
    slab_at_[base] = slab.get();
    slab_bytes_ += bytes;
    return slab.get();
}

void SlabSet::remove(Slab* slab, std::vector<ReleasedSlab>& gone) {
    Piece* s = slab->first;
    s->index->erase(s);
    piece_nodes_.recycle(s);
    reserved_ -= slab->backed_bytes;
    slab_bytes_ -= slab->bytes;
    gone.push_back({slab->id, slab->base, slab->bytes});
    slab_at_.erase(slab->base);
    auto it = std::find_if(slabs_.begin(), slabs_.end(), [&](const auto& p) { return p.get() == slab; });
    *it = std::move(slabs_.back());
    slabs_.pop_back();
}

std::vector<Slab*> SlabSet::wholly_free_newest_first() const {
    std::vector<Slab*> idle;
    for (const auto& slab : slabs_)
        if (slab->wholly_free && !slab->arena) idle.push_back(slab.get());
    std::sort(idle.begin(), idle.end(), [](const Slab* a, const Slab* b) {
        return a->empty_since != b->empty_since ? a->empty_since > b->empty_since : a->id > b->id;
    });
    return idle;
}

void SlabSet::release_wholly_free(std::vector<ReleasedSlab>& gone) {
    for (Slab* slab : wholly_free_newest_first()) remove(slab, gone);
}

const Slab* SlabSet::slab_holding(uint64_t address) const {
    auto it = slab_at_.upper_bound(address);
    if (it == slab_at_.begin()) return nullptr;
    const Slab* slab = std::prev(it)->second;
    return address - slab->base < slab->bytes ? slab : nullptr;
}

Piece* SlabSet::new_piece(Piece* s, uint64_t addr, uint64_t size, bool before) {
    Piece* n = piece_nodes_.make();
    n->addr = addr;
    n->size = size;
    n->slab = s->slab;
    if (before) {
        n->prev = s->prev;
        n->next = s;
        if (s->prev) s->prev->next = n;
        else s->slab->first = n;
        s->prev = n;
    } else {
        n->prev = s;
        n->next = s->next;
        if (s->next) s->next->prev = n;
        s->next = n;
    }
    claim(n, addr, addr + size);
    return n;
}

Piece* SlabSet::join(Piece* keep, Piece* gone) {
    if (gone->addr < keep->addr) keep->addr = gone->addr;
    keep->size += gone->size;
    if (gone->prev) gone->prev->next = gone->next;
    else gone->slab->first = gone->next;
    if (gone->next) gone->next->prev = gone->prev;
    claim(keep, gone->addr, gone->addr + gone->size);
    piece_nodes_.recycle(gone);
    return keep;
}

std::pair<uint64_t, uint64_t> SlabSet::note_backed(Slab& slab, uint64_t addr, uint64_t size) {
    if (slab.backed_bytes == slab.bytes) return {0, 0}; // the common case once a slab has been used throughout
    const uint64_t first = (addr - slab.base) >> chunk_shift_, last = (addr + size - 1 - slab.base) >> chunk_shift_;
    uint64_t fresh_first = last + 1, fresh_last = 0;
    for (uint64_t c = first; c <= last; ++c) {
        if (slab.backed[c]) continue;
        slab.backed[c] = true;
        slab.backed_bytes += cfg_.chunk_bytes; // slabs hold whole chunks
        reserved_ += cfg_.chunk_bytes;
        fresh_first = std::min(fresh_first, c);
        fresh_last = c;
    }
    reserved_high_ = std::max(reserved_high_, reserved_);
    if (fresh_first > last) return {0, 0};
    return {slab.base + (fresh_first << chunk_shift_), slab.base + ((fresh_last + 1) << chunk_shift_)};
}

void SlabSet::became_wholly_free(Slab* slab, uint64_t since) {
    slab->wholly_free = true;
    slab->empty_since = since;
    next_idle_check_ = retaining_ ? 0 : std::min(next_idle_check_, saturating_add(since, release_after_ns_));
}

void SlabSet::release_idle(uint64_t now, PendingFrees& pending, std::vector<ReleasedSlab>& gone) {
    const uint64_t after = release_after_ns_;
    auto due = [&](uint64_t since) { return now >= since && now - since >= after; };
    // A recheck for slabs whose last frees are still pending on the GPU.
    const uint64_t recheck = std::clamp<uint64_t>(after / 4, 1'000'000, 100'000'000);
    uint64_t next = kNever;

    // Slabs without live blocks, due but for pending frees: ask their fences.
    FenceQueries asked;
    std::vector<FenceKey> keys;
    for (const auto& slab : slabs_) {
        if (slab->live != 0 || slab->pending == 0 || slab->arena) continue;
        if (!due(slab->empty_since)) {
            next = std::min(next, saturating_add(slab->empty_since, after));
            continue;
        }
        for (Piece* s = slab->first; s; s = s->next)
            if (s->kind == PieceKind::Pending && std::find(keys.begin(), keys.end(), s->fence->key) == keys.end())
                keys.push_back(s->fence->key);
    }
    for (FenceKey key : keys) {
        HeldFence* f = pending.held(key);
        if (!f || !f->listed) continue; // completed meanwhile
        pending.complete_if_done(f, asked);
    }
    for (const auto& slab : slabs_)
        if (slab->live == 0 && slab->pending != 0 && !slab->arena && due(slab->empty_since))
            next = std::min(next, saturating_add(now, recheck));

    // Wholly free slabs: the newest retain_bytes are kept; older ones unused
    // for release_after_ns go.
    retaining_ = false;
    uint64_t kept = 0;
    for (Slab* slab : wholly_free_newest_first()) {
        if (kept + slab->bytes <= cfg_.retain_bytes) {
            kept += slab->bytes;
            retaining_ = true;
            continue;
        }
        if (due(slab->empty_since)) remove(slab, gone);
        else next = std::min(next, saturating_add(slab->empty_since, after));
    }
    next_idle_check_ = next;
    pending.forget_idle_streams();
}

} // namespace uvmp::pool

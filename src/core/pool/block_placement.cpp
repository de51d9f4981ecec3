#include "core/pool/block_placement.h"

#include "core/pool/placement_hint.h"

#include <algorithm>
#include <array>
#include <optional>
#include <span>

namespace uvmp::pool {
namespace {

// Pieces of each index weighed by a placement over dead memory.
constexpr int kHintCandidates = 16;
// Dead extents of one piece weighed, at most.
constexpr size_t kHintExtents = 16;

} // namespace

Piece* BlockPlacement::find_fit(uint64_t size, const FreeIndex& ready, const FreeIndex* own_pending,
                                uint64_t& start) const {
    if (hint_ && size >= cfg_.chunk_bytes)
        if (Piece* on_dead = find_fit_on_resident_dead(size, ready, own_pending, start)) return on_dead;
    Piece* fit = best_in(ready, size, start);
    if (own_pending && !own_pending->empty()) {
        uint64_t own_start = 0;
        Piece* own = best_in(*own_pending, size, own_start);
        if (own && (!fit || own->size <= fit->size)) {
            fit = own;
            start = own_start;
        }
    }
    return fit;
}

// A block placed over dead bytes resident on the GPU takes their pages as they
// are; placed beside them, it has pages made and leaves them to be evicted.
// Among the first pieces of each index that hold the block (smallest first),
// and within each at its start or flush with a dead extent's either end, the
// placement covering the most dead bytes; ties go to the smaller piece, then to
// the stream's own pending one. nullptr when none covers any.
Piece* BlockPlacement::find_fit_on_resident_dead(uint64_t size, const FreeIndex& ready,
                                                 const FreeIndex* own_pending, uint64_t& start) const {
    Piece* best = nullptr;
    uint64_t best_start = 0, best_cover = 0;
    std::array<Extent, kHintExtents> extents;
    auto weigh = [&](Piece* p) {
        uint64_t at = 0;
        if (!place(p, size, at)) return true;
        const uint64_t piece_end = p->addr + p->size;
        const size_t n = hint_->resident_dead(p->addr, piece_end, extents);
        if (n == 0) return true;
        const std::span<const Extent> dead(extents.data(), n);
        const uint64_t base = p->slab->base;
        auto cover = [&](uint64_t from) {
            uint64_t bytes = 0;
            for (const Extent& e : dead) {
                const uint64_t lo = std::max(e.begin, from), hi = std::min(e.end, from + size);
                if (lo < hi) bytes += hi - lo;
            }
            return bytes;
        };
        // The chunk-aligned start at or below `want`, moved up into the piece
        // and down to where the block still ends within it.
        auto aligned = [&](uint64_t want) -> std::optional<uint64_t> {
            uint64_t from = base + (std::max(want, at) - base) / cfg_.chunk_bytes * cfg_.chunk_bytes;
            if (from < at) from = at;
            if (from + size > piece_end) {
                if (piece_end - size < at) return std::nullopt;
                from = base + (piece_end - size - base) / cfg_.chunk_bytes * cfg_.chunk_bytes;
                if (from < at) return std::nullopt;
            }
            return from;
        };
        auto consider = [&](uint64_t from) {
            const uint64_t bytes = cover(from);
            const bool better =
                bytes > best_cover || (bytes == best_cover && bytes > 0 && best && p->size < best->size);
            if (better) {
                best = p;
                best_start = from;
                best_cover = bytes;
            }
        };
        consider(at);
        for (const Extent& e : dead) {
            if (const auto from = aligned(e.begin)) consider(*from);
            if (e.end >= size)
                if (const auto from = aligned(e.end - size)) consider(*from);
        }
        // Nothing covers more than the whole block, and later pieces are no smaller.
        return best_cover < size;
    };
    if (own_pending) own_pending->each_holding(size, kHintCandidates, weigh);
    if (best_cover < size) ready.each_holding(size, kHintCandidates, weigh);
    if (!best) return nullptr;
    start = best_start;
    return best;
}

bool BlockPlacement::room_is_short() const { return hint_ && hint_->room_is_short(); }

void BlockPlacement::block_freed(uint64_t begin, uint64_t end) const {
    if (hint_) hint_->block_freed(begin, end);
}

} // namespace uvmp::pool

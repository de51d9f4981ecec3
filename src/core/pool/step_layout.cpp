#include "core/pool/step_layout.h"

#include "core/util/round_up.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <utility>

namespace uvmp::pool {

namespace {

// A lifetime on the circle as at most two half-open pieces of [0, period).
struct Lifetime {
    uint64_t begin[2] = {0, 0};
    uint64_t end[2] = {0, 0};
    int pieces = 0;
};

Lifetime lifetime_of(const LayoutBlock& b, uint64_t period) {
    Lifetime life;
    // A block freed where it was made still holds its memory for that moment.
    const uint64_t freed = std::max(b.freed, b.made + 1);
    if (freed <= period) {
        life.begin[0] = b.made;
        life.end[0] = freed;
        life.pieces = 1;
    } else {
        life.begin[0] = b.made;
        life.end[0] = period;
        life.begin[1] = 0;
        life.end[1] = freed - period;
        life.pieces = 2;
    }
    return life;
}

bool meet(const Lifetime& a, const Lifetime& b) {
    for (int i = 0; i < a.pieces; ++i)
        for (int j = 0; j < b.pieces; ++j)
            if (a.begin[i] < b.end[j] && b.begin[j] < a.end[i]) return true;
    return false;
}

bool plannable(const LayoutBlock& b, uint64_t period, uint64_t chunk_bytes) {
    // (A block freed a whole period after it was made would meet its own next
    // instance.)
    return b.bytes >= chunk_bytes && b.freed != LayoutBlock::kNotFreed && b.freed < b.made + period;
}

} // namespace

StepLayout plan_step_layout(std::span<const LayoutBlock> blocks, uint64_t period, uint64_t chunk_bytes,
                            size_t max_blocks) {
    if (period == 0) throw std::invalid_argument("plan_step_layout: a step of no positions");
    if (!std::has_single_bit(chunk_bytes))
        throw std::invalid_argument("plan_step_layout: the chunk must be a power of two");
    for (const LayoutBlock& b : blocks)
        if (b.made >= period) throw std::invalid_argument("plan_step_layout: a block made past the step's end");

    StepLayout layout;
    layout.offsets.assign(blocks.size(), std::nullopt);
    std::vector<size_t> order;
    for (size_t i = 0; i < blocks.size(); ++i)
        if (plannable(blocks[i], period, chunk_bytes)) order.push_back(i);
    auto rounded = [&](size_t i) { return round_up(blocks[i].bytes, chunk_bytes); };
    // Largest first; among equals the earlier made, so that a step's repeated
    // shapes settle in the order they come.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const uint64_t sa = rounded(a), sb = rounded(b);
        return sa != sb ? sa > sb : blocks[a].made < blocks[b].made;
    });
    if (order.size() > max_blocks) order.resize(max_blocks);

    std::vector<Lifetime> lives(blocks.size());
    for (size_t i : order) lives[i] = lifetime_of(blocks[i], period);

    // The least arena: the most the planned blocks hold at once.
    std::vector<std::pair<uint64_t, int64_t>> changes;
    for (size_t i : order)
        for (int k = 0; k < lives[i].pieces; ++k) {
            changes.emplace_back(lives[i].begin[k], static_cast<int64_t>(rounded(i)));
            changes.emplace_back(lives[i].end[k], -static_cast<int64_t>(rounded(i)));
        }
    // At one position the ends come before the beginnings (half-open lifetimes),
    // so what is held never drops below nothing.
    std::sort(changes.begin(), changes.end());
    int64_t held = 0;
    for (const auto& [position, delta] : changes) {
        held += delta;
        layout.peak_live_bytes = std::max(layout.peak_live_bytes, static_cast<uint64_t>(held));
    }

    std::vector<std::pair<uint64_t, uint64_t>> taken; // [offset, end) of placed blocks whose lifetimes meet
    for (size_t k = 0; k < order.size(); ++k) {
        const size_t i = order[k];
        const uint64_t size = rounded(i);
        taken.clear();
        for (size_t placed = 0; placed < k; ++placed) {
            const size_t j = order[placed];
            if (meet(lives[i], lives[j])) taken.emplace_back(*layout.offsets[j], *layout.offsets[j] + rounded(j));
        }
        std::sort(taken.begin(), taken.end());
        uint64_t offset = 0;
        for (const auto& [lo, hi] : taken) {
            if (offset + size <= lo) break;
            offset = std::max(offset, hi);
        }
        layout.offsets[i] = offset;
        layout.arena_bytes = std::max(layout.arena_bytes, offset + size);
    }
    layout.planned = order.size();
    return layout;
}

} // namespace uvmp::pool

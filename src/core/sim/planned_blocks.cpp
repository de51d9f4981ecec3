#include "core/sim/planned_blocks.h"

#include <iterator>

namespace uvmp::sim {

LearnedStepLayout learned_step_layout(std::span<const ChunkSchedule::AllocEvent> events,
                                      std::span<const uint64_t> bounds, uint64_t chunk_bytes) {
    LearnedStepLayout out;
    if (bounds.size() < 3) return out;
    const uint64_t step_begin = bounds[1];
    out.step_end = bounds[2];
    // Positions count the pool's events (allocations and frees) from the step's first.
    std::vector<pool::LayoutBlock> blocks;
    std::unordered_map<uint32_t, size_t> block_of;
    uint64_t position = 0, period = 0;
    for (const ChunkSchedule::AllocEvent& e : events) {
        if (e.kind != trace::AllocKind::Pooled || e.launches_before < step_begin) continue;
        if (e.launches_before >= out.step_end && period == 0) period = position;
        // A free a whole period after the step's end leaves its block unplanned either way.
        if (period != 0 && position >= 2 * period) break;
        if (e.is_free) {
            const auto it = block_of.find(e.alloc_id);
            if (it != block_of.end()) blocks[it->second].freed = position;
        } else if (e.launches_before < out.step_end) {
            block_of.emplace(e.alloc_id, blocks.size());
            blocks.push_back({e.size, position, pool::LayoutBlock::kNotFreed});
            out.alloc_ids.push_back(e.alloc_id);
            out.sizes.push_back(e.size);
        }
        ++position;
    }
    if (period == 0) period = position;
    if (period != 0) out.layout = pool::plan_step_layout(blocks, period, chunk_bytes);
    return out;
}

PlannedBlocks::PlannedBlocks(std::span<const ChunkSchedule::AllocEvent> events, std::span<const uint64_t> bounds,
                             uint64_t chunk_bytes, uint64_t arena_base)
    : arena_base_(arena_base) {
    LearnedStepLayout learned = learned_step_layout(events, bounds, chunk_bytes);
    step_end_ = learned.step_end;
    layout_ = std::move(learned.layout);
    if (layout_.planned == 0) return;
    std::vector<placement::HomeEntry> entries;
    for (const uint64_t size : learned.sizes) entries.push_back({size, placement::Home::Gpu});
    sequence_ = placement::HomeSequence({}, std::move(entries));
}

std::optional<uint64_t> PlannedBlocks::allocate(uint32_t alloc_id, uint64_t size, uint64_t launch) {
    if (launch < step_end_ || layout_.planned == 0) return std::nullopt;
    std::optional<size_t> entry;
    sequence_.next(size, &entry);
    if (!entry || !layout_.offsets[*entry]) return std::nullopt;
    const uint64_t address = arena_base_ + *layout_.offsets[*entry];
    const uint64_t end = address + size;
    // Taken: a live planned block begins before this one ends and ends after it begins.
    auto next = live_.lower_bound(address);
    const bool taken = (next != live_.end() && next->first < end) ||
                       (next != live_.begin() && std::prev(next)->second > address);
    if (taken) {
        ++displaced_;
        return std::nullopt;
    }
    live_.emplace(address, end);
    address_of_.emplace(alloc_id, address);
    ++placed_;
    return address;
}

std::optional<uint64_t> PlannedBlocks::free(uint32_t alloc_id) {
    const auto it = address_of_.find(alloc_id);
    if (it == address_of_.end()) return std::nullopt;
    const uint64_t address = it->second;
    address_of_.erase(it);
    live_.erase(address);
    return address;
}

} // namespace uvmp::sim

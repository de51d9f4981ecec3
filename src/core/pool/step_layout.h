// A layout planned for the blocks of one training step, to be used by the steps
// after it. A pool that places each block as it comes (best fit, or over dead
// bytes still on the GPU) lays a step out differently every time under a
// budget: a large block whose memory smaller ones took in the step before finds
// no dead memory that holds it, has pages made anew, and as many dead bytes are
// evicted for them elsewhere. Steps repeat their allocations (order, sizes,
// lifetimes), so the whole step can be laid out once: each block at an offset
// of an arena, no two blocks live at once overlapping, the arena about as large
// as the step's peak of live bytes. A block of a later step then lies where the
// same block lay one step before, over pages left there, and nothing moves for
// it.
//
// Lifetimes are positions in the step's sequence of allocation and free events,
// on a circle of `period` positions: a block made late in a step and freed in
// the next (gradients, an optimiser's buffers) lives across the step's end.
// Blocks smaller than a chunk are not planned (they share chunks, and matter
// little to what moves), nor blocks that live a whole step or more. The plan is
// greedy: largest block first, each at the lowest chunk-aligned offset clear of
// the blocks already placed whose lifetimes meet its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace uvmp::pool {

struct LayoutBlock {
    uint64_t bytes = 0;
    uint64_t made = 0;  // position of its allocation, below the period
    uint64_t freed = 0; // position of its free: after `made`, up to a period later; kNotFreed if never
    static constexpr uint64_t kNotFreed = ~uint64_t{0};
};

struct StepLayout {
    // Per block, in the order given: its offset in the arena, or none (not planned).
    std::vector<std::optional<uint64_t>> offsets;
    uint64_t arena_bytes = 0;   // a multiple of the chunk
    size_t planned = 0;         // blocks with an offset
    uint64_t peak_live_bytes = 0; // of the planned blocks, their sizes rounded to chunks: the least arena possible
};

// `chunk_bytes`: a power of two. At most `max_blocks` blocks are planned (the
// largest ones), to bound the work (it grows with the square of the count).
// std::invalid_argument for a period of 0, a chunk that is not a power of two,
// or a block made at or past the period.
StepLayout plan_step_layout(std::span<const LayoutBlock> blocks, uint64_t period, uint64_t chunk_bytes,
                            size_t max_blocks = 8192);

} // namespace uvmp::pool

// Lengthens a recorded trace by repeating its last iteration, so that a few
// recorded steps can stand for a long job: how a learned policy does once it
// has learned shows only in the steps after the one it learns from.
#pragma once

#include "core/trace/format/model.h"

#include <cstdint>
#include <span>
#include <vector>

namespace uvmp {

// Appends `times` copies of the launches of iteration [bounds[n-2], bounds[n-1])
// after the trace's last launch, with their durations and iteration marks; a
// trailing partial iteration is dropped first, and allocations, frees and slab
// records after it move to the new end. A copy names the original launch's access list
// rather than a copy of it (a long repeat would copy gigabytes): a change to
// an access, such as an inferred extent, is the same in every copy. Throws
// std::invalid_argument when there is no full iteration, or when the last
// iteration allocates or frees memory or changes the pool's slabs (copies would
// need allocations of their own).
// Returns the lengthened trace's iteration bounds: `bounds` up to the repeated
// iteration's end, then each copy's end. (Detecting them again would cost a
// pass over the whole lengthened trace, and the copies are known iterations.)
std::vector<uint64_t> repeat_last_iteration(trace::Trace& trace, std::span<const uint64_t> bounds, uint32_t times);

// The same for a last iteration that makes and frees blocks of the pool, as a
// training step does, for a simulation that places the pool's blocks anew
// (the copies' recorded addresses are the originals'). Each copy makes blocks
// of its own (new ids, after the trace's largest) in the iteration's order and
// sizes, and its launches name them. Blocks live across the iteration's end
// as the iteration's own do: the blocks of the span before it that it frees
// pair with its own blocks that outlive it, by size, each size's in order of
// making, the last with the last (the span before may be part of an
// iteration, a recording begun within one, which lacks its first blocks);
// where the iteration frees a paired block, each copy frees (and names) the
// copy before's block paired with it (the iteration's, for the first). The
// frees after the iteration of its blocks that the first copy frees are
// dropped; other records after it move to the end, as above. Allocations and
// frees are left in their order of time. Throws std::invalid_argument with
// fewer than three bounds (a span before the last iteration, whole or not, and
// the iteration), or when the last makes memory other than
// the pool's blocks.
std::vector<uint64_t> repeat_last_iteration_with_blocks(trace::Trace& trace, std::span<const uint64_t> bounds,
                                                        uint32_t times);

} // namespace uvmp

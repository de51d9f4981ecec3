// Lengthens a recorded trace by repeating its last iteration, so that a few
// recorded steps can stand for a long job: how a learned policy does once it
// has learned shows only in the steps after the one it learns from.
#pragma once

#include "core/trace/model.h"

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

} // namespace uvmp

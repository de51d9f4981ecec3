// Makes a recorded trace smaller and fit to share: the first steps of a long
// recording, and option values without the recording machine's directories.
#pragma once

#include "core/trace/format/model.h"

#include <cstdint>
#include <span>

namespace uvmp::trace {

// Keeps what came before the first step and the first `steps` steps (step k
// spans launches [bounds[k], bounds[k + 1])), as if the program had stopped
// there. At the cut, allocations, moves and new slabs are the next step's (as a
// replay's steps have them), and so is what follows the iteration mark there,
// where the trace has one. Every later launch, allocation, move, mark and new
// slab is dropped. The frees of kept allocations and the releases of kept slabs that
// came later stay, as the program's teardown: at the cut, after its mark, in their
// order, their times moved earlier by the time the dropped launches took.
// Throws std::invalid_argument when `steps` is 0 or the trace has fewer whole steps.
void keep_first_steps(Trace& trace, std::span<const uint64_t> bounds, uint64_t steps);

// Reduces the values of the options that are paths (trace_out, stats_file, ...:
// the option table's Path options, and absolute paths in options it does not
// know, a newer library's) to their file names.
void strip_option_directories(Header& header);

} // namespace uvmp::trace

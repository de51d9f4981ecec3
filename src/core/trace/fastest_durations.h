// Kernel durations of a trace recorded under memory pressure, as they would be
// with every operand on the GPU. CUPTI times a kernel from its start to its
// end, faults included, so a kernel that waited for its data carries the wait
// in its duration. A training step launches the same kernel on operands of the
// same sizes many times (once a layer, once a step), and some of those launches
// found their data resident: each launch takes the least duration recorded for
// its kind, a kind being the kernel, its grid and block, and the bytes its
// accesses name. A kind launched once keeps its own duration.
#pragma once

#include "core/trace/model.h"

#include <cstdint>

namespace uvmp::trace {

// Returns how many launches took another duration. Untimed launches (0) of a
// kind that has timed ones take the kind's least duration too.
uint64_t use_fastest_durations(Trace& trace);

} // namespace uvmp::trace

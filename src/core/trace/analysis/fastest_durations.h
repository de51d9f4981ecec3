// Kernel durations of a trace recorded under memory pressure, as they would be
// with every operand on the GPU. CUPTI times a kernel from its start to its
// end, faults included, so a kernel that waited for its data carries the wait
// in its duration. A training step launches the same kernel on operands of the
// same sizes many times (once a layer, once a step), and some of those launches
// found their data resident: each launch takes the least duration recorded for
// its kind, a kind being the kernel, its grid and block, and the bytes its
// accesses name. A kind launched once keeps its own duration.
//
// A kind launched once a step (a loss's softmax over the logits) may have
// waited every time it was recorded, and its least duration is then a stall:
// in a GPT-2 step under pressure the softmax backward took 42 ms against 3.4
// natively, which reads as a kernel that re-reads its data, and the home choice
// keeps gigabytes on the GPU that it would have homed on the host. The run knows
// which launches found data they name on its way to the GPU (chunks that were
// not resident, blocks just populated, prefetches just queued, behind the
// evictions that made room). A kind with a launch that waited for nothing
// takes the least of all its launches, those that waited included: each is a
// bound from above, and one the model says waited can still be the launch that
// ran clean, where one it says did not was stalled by what it does not see (a
// prefetch queued launches before, another launch's eviction). A kind whose
// every launch waited takes the least of their durations less an estimate of
// that wait.
#pragma once

#include "core/trace/analysis/launch_kind.h"
#include "core/trace/format/model.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace uvmp::trace {

// Returns how many launches took another duration. Untimed launches (0) of a
// kind that has timed ones take the kind's least duration too.
uint64_t use_fastest_durations(Trace& trace);

// By launch sequence number (Launch::seq): the time the launch's kernel
// waited for moves, as estimated from their bytes.
using LaunchWaits = std::unordered_map<uint64_t, uint64_t>;

struct CleanedDurations {
    uint64_t shortened = 0;       // launches that took another duration
    uint64_t waited_launches = 0; // timed launches with a wait
    // Kinds timed only on launches that waited: their duration is the least
    // over those of the duration less the wait.
    uint64_t kinds_from_waits = 0;
    // Those kinds: the recording never showed their local time, only a bound
    // from above (placement/remote_trial.h holds them to the streaming line).
    std::vector<LaunchKind> kinds_untimed;
    // Their kernels, each once, by the most time their waits took off a launch.
    std::vector<uint32_t> kernels_from_waits;
    // Of those, the kernels with no kind timed on a launch that waited for
    // nothing, ascending: the recording never showed how long they take with
    // their data in place, only a bound from above (the wait is estimated from
    // below). Placement tries them remote rather than trusting that bound
    // (placement/timing_prior.h).
    std::vector<uint32_t> kernels_untimed;
};

// The same, with `waits`: a kind with a timed launch that waited for nothing
// takes the least over all its timed launches; a kind with none takes the least
// over its launches of their duration less their wait, but no less than its
// named bytes take at `memory_gbps` (the GPU's memory bandwidth: no kernel moves
// its bytes faster; 0 for no such bound).
CleanedDurations use_fastest_durations(Trace& trace, const LaunchWaits& waits, double memory_gbps);

} // namespace uvmp::trace

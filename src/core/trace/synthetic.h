// Synthetic traces of a training loop, for the tests and for `uvmtrace synth`,
// where no recording from a GPU is at hand or a trace of a chosen size is needed
// (simulator speed measurements).
#pragma once

#include "core/trace/model.h"

#include <cstdint>
#include <string>

namespace uvmp::trace {

struct TrainingLoopShape {
    uint32_t layers = 8;             // each layer: a weight, a gradient, an optimizer state, an activation
    uint64_t steps = 20;             // training steps recorded
    bool autotune_first_step = true; // the first step runs extra kernels, as cuDNN autotuning does
    bool mark_iterations = false;    // record uvmp_mark_iteration calls
    bool library_moves = true;       // record prefetches and evictions from step 1 on
    uint32_t seed = 1;
};

// Each step: allocate the activations, forward (2 kernels a layer), loss,
// backward (3 kernels a layer), optimizer (1 kernel a layer, on a second
// stream), free the activations. Weights, gradients and optimizer state live
// through the whole run. Sizes and durations are pseudo-random but fixed by
// the seed.
Trace make_training_loop(const TrainingLoopShape& shape);

} // namespace uvmp::trace

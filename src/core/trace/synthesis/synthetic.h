// Synthetic traces of a training loop, for the tests and for `uvmtrace synth`,
// where no recording from a GPU is at hand or a trace of a chosen size is needed
// (simulator speed measurements).
#pragma once

#include "core/trace/format/model.h"

#include <cstdint>
#include <string>

namespace uvmp::trace {

struct TrainingLoopShape {
    uint32_t layers = 8;             // each layer: a weight, a gradient, an optimizer state, an activation
    uint64_t steps = 20;             // training steps recorded
    bool autotune_first_step = true; // the first step runs extra kernels, as cuDNN autotuning does
    bool mark_iterations = false;    // record uvmp_mark_iteration calls
    bool library_moves = true;       // record prefetches and evictions from step 1 on (not pooled)
    uint32_t seed = 1;
    bool pooled = false;             // every device allocation a block of the managed pool (below)
    // Pooled: what a recorded job does around its steps. `carry_loss`: each step
    // makes a 4-byte block (the loss) that the next step frees, as a loop holds
    // its last loss until the next one replaces it. `teardown`: after the last
    // step a closing mark (with mark_iterations) and the frees of every block left,
    // as a program frees its model when it ends.
    bool carry_loss = false;
    bool teardown = false;
};

// Each step: allocate the activations, forward (2 kernels a layer), loss,
// backward (3 kernels a layer), optimizer (1 kernel a layer, on a second
// stream), free the activations. Weights, gradients and optimizer state live
// through the whole run. Sizes and durations are pseudo-random but fixed by
// the seed.
//
// Pooled: weights, gradients, optimizer state and activations are blocks of
// slabs (format 1.1: Pooled allocations and slab records), placed first fit as
// a caching pool places them. Each layer's activation keeps its size from step
// to step and is allocated as the forward pass reaches the layer; the backward
// pass allocates each activation's gradient and frees an activation and its
// gradient after their last use, so later gradients are placed over them, and
// every step finds its buffers at the addresses the last one had.
Trace make_training_loop(const TrainingLoopShape& shape);

} // namespace uvmp::trace

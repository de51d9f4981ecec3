// The probes allocate managed memory themselves, outside the library and its physical
// guard, on a GPU that others share: each first checks that the GPU has the room.
#pragma once

#include "cuda_check.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>

namespace bench {

// Left free for the GPU's other users beyond what a probe allocates.
constexpr size_t kFreeMemoryMargin = size_t{2} << 30;

// True when the current device has `bytes` plus the margin free; otherwise says
// that `probe` is skipped and why.
inline bool gpu_has_room(const char* probe, size_t bytes) {
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (free_bytes >= bytes + kFreeMemoryMargin) return true;
    constexpr double kGiB = double(size_t{1} << 30);
    std::printf("%s: skipped, %.1f GiB free on the GPU, %.1f GiB needed\n", probe,
                static_cast<double>(free_bytes) / kGiB, static_cast<double>(bytes + kFreeMemoryMargin) / kGiB);
    return false;
}

} // namespace bench

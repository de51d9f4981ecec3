// Whether work done beside the application holds its launches back: the slowest
// launch call of an empty kernel while something else runs on another thread.
#pragma once

#include "cuda_check.h"
#include "probe_timing.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

namespace bench {

constexpr int kLatencyLaunches = 2000;

__global__ void empty_kernel() {}

// The slowest launch call on `stream`, in ms, over at least kLatencyLaunches calls
// and until `done` (where given) is set; `started` (where given) is set before the
// first. `launches` (where given) gets the number made.
inline double slowest_launch_ms(cudaStream_t stream, std::atomic<bool>* started, const std::atomic<bool>* done,
                                int* launches) {
    double slowest = 0;
    if (started) started->store(true);
    int made = 0;
    while (made < kLatencyLaunches || (done && !done->load())) {
        const auto start = Clock::now();
        empty_kernel<<<1, 1, 0, stream>>>();
        slowest = std::max(slowest, ms_since(start));
        ++made;
    }
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(stream));
    if (launches) *launches = made;
    return slowest;
}

} // namespace bench

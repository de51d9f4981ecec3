// GPU-side timing for the probes: work issued on a stream, timed by events
// recorded before and after it, and how long issuing it held the host thread.
#pragma once

#include "cuda_check.h"
#include "probe_timing.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>

namespace bench {

struct StreamTiming {
    double host_call_ms; // how long issuing the work blocked the calling thread
    double gpu_ms;       // from the event before the work to the event after it
};

template <typename Issue>
StreamTiming time_on_stream(cudaStream_t stream, Issue issue) {
    cudaEvent_t before, after;
    CUDA_CHECK(cudaEventCreate(&before));
    CUDA_CHECK(cudaEventCreate(&after));
    CUDA_CHECK(cudaEventRecord(before, stream));
    const auto host_start = Clock::now();
    issue();
    const double host_call_ms = ms_since(host_start);
    CUDA_CHECK(cudaEventRecord(after, stream));
    CUDA_CHECK(cudaEventSynchronize(after));
    float gpu_ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&gpu_ms, before, after));
    CUDA_CHECK(cudaEventDestroy(before));
    CUDA_CHECK(cudaEventDestroy(after));
    return {host_call_ms, gpu_ms};
}

// One line: `path` padded to `width`, the GB/s of `bytes` over the stream's time,
// and both times.
inline void print_stream_timing(const char* path, int width, size_t bytes, const StreamTiming& timing) {
    std::printf("%-*s %6.1f GB/s  (%.2f ms on the stream, host call %.2f ms)\n", width, path,
                gigabytes_per_second(bytes, timing.gpu_ms), timing.gpu_ms, timing.host_call_ms);
}

} // namespace bench

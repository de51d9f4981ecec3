// Kernels that touch every word of a buffer once, for the probes that time
// what writing or reading memory in some place costs, and the grid they run on.
#pragma once

#include <cstddef>

namespace bench {

constexpr unsigned kWordGridBlocks = 1024;
constexpr unsigned kWordBlockThreads = 256;

__global__ void write_all(unsigned int* data, size_t count) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count; i += stride)
        data[i] = static_cast<unsigned int>(i);
}

// Sums what it reads into one word, so that no read can be left out.
__global__ void read_all(const unsigned int* data, size_t count, unsigned int* sink) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    unsigned int sum = 0;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count; i += stride) sum += data[i];
    if (sum == 0x9e3779b9u) *sink = sum;
}

} // namespace bench

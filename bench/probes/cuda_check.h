// The probes check every CUDA call: a failure names the call and where it was
// made, and ends the program with status 3.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace bench {

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, call, cudaGetErrorString(status),
                     cudaGetErrorName(status));
        std::exit(3);
    }
}

} // namespace bench

#define CUDA_CHECK(call) ::bench::check_cuda((call), #call, __FILE__, __LINE__)

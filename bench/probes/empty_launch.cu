// Host time of a kernel launch: an empty kernel launched N times in a loop.
//
// Run natively and under the library, the difference is what the launch hook costs
// per launch. Usage: empty_launch [N] (default 1000000).
// Prints "ns per launch: X", "total: Y ms" and one JSON line for scripts.

#include "cuda_check.h"
#include "probe_args.h"
#include "probe_timing.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace {

// One pointer parameter, to a real allocation, so that the hook finds it as it would
// for any real kernel (under the library the allocation is converted, and each launch
// has an access to plan and to record); the pointer is never dereferenced.
__global__ void empty_kernel(float* unused) {}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 2) {
        std::fprintf(stderr, "usage: empty_launch [N]   (N launches, default 1000000)\n");
        return 2;
    }
    const auto launches_argument = bench::number_argument(argc, argv, 1, "empty_launch", "N", 1, 1000000000L, 1000000);
    if (!launches_argument) return 2;
    const long launches = *launches_argument;

    // The first launch loads the module and creates the context's launch state; it is
    // kept out of the measurement.
    float* buffer = nullptr;
    CUDA_CHECK(cudaMalloc(&buffer, 4096));
    empty_kernel<<<1, 1>>>(buffer);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    const auto start = bench::Clock::now();
    for (long i = 0; i < launches; ++i) empty_kernel<<<1, 1>>>(buffer);
    const double total_ms = bench::ms_since(start);
    // Launch errors are sticky, so one check after the loop catches a failure in any launch
    // without adding a call to every iteration of the measured loop.
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaFree(buffer));

    const double ns_per_launch = total_ms * 1e6 / static_cast<double>(launches);
    std::printf("launches: %ld\n", launches);
    std::printf("ns per launch: %.1f\n", ns_per_launch);
    std::printf("total: %.1f ms\n", total_ms);
    std::printf("{\"launches\": %ld, \"ns_per_launch\": %.1f, \"total_ms\": %.1f}\n", launches, ns_per_launch,
                total_ms);
    return 0;
}

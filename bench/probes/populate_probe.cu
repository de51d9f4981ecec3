// How fast fresh (never touched) managed memory can be placed on the GPU, three ways:
//   prefetch        cudaMemPrefetchAsync of the whole buffer to device 0
//   discard+prefetch cudaMemDiscardAndPrefetchBatchAsync (contents may be dropped)
//   first touch     a kernel writing every element, so pages are populated by faults
// Each uses its own fresh buffer, so no path benefits from pages another path populated.
// These rates decide how the library places new allocations (the "populate" option).
//
// Usage: populate_probe [GiB per buffer] (default 2, at most 2; three buffers in all).
// Prints one line per path and one JSON line; exit 77 when the GPU lacks the free memory.

#include "cuda_check.h"
#include "probe_args.h"
#include "probe_guard.h"
#include "probe_timing.h"
#include "stream_timing.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace {

constexpr size_t kGiB = size_t{1} << 30;

__global__ void first_touch(unsigned int* data, size_t count) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count; i += stride)
        data[i] = static_cast<unsigned int>(i);
}

using Timing = bench::StreamTiming;

using bench::gigabytes_per_second;
using bench::time_on_stream;

// The width of the path column of the printed lines.
constexpr int kPathWidth = 17;

}  // namespace

int main(int argc, char** argv) {
    if (argc > 2) {
        std::fprintf(stderr, "usage: populate_probe [GiB per buffer, 1 or 2]\n");
        return 2;
    }
    const auto gib_argument = bench::number_argument(argc, argv, 1, "populate_probe", "size in GiB per buffer", 1, 2, 2);
    if (!gib_argument) return 2;
    const size_t gib_per_buffer = static_cast<size_t>(*gib_argument);
    const size_t bytes = gib_per_buffer * kGiB;

    int device = 0;
    CUDA_CHECK(cudaSetDevice(device));
    if (!bench::gpu_has_room("populate_probe", 3 * bytes)) return 77;

    // Batch and discard calls refuse the legacy default stream.
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaMemLocation gpu{};
    gpu.type = cudaMemLocationTypeDevice;
    gpu.id = device;

    void* prefetched = nullptr;
    CUDA_CHECK(cudaMallocManaged(&prefetched, bytes));
    const Timing prefetch = time_on_stream(stream, [&] {
        CUDA_CHECK(cudaMemPrefetchAsync(prefetched, bytes, gpu, 0, stream));
    });

    void* discarded = nullptr;
    CUDA_CHECK(cudaMallocManaged(&discarded, bytes));
    const Timing discard_prefetch = time_on_stream(stream, [&] {
        void* pointers[1] = {discarded};
        size_t sizes[1] = {bytes};
        size_t location_starts[1] = {0};
        CUDA_CHECK(cudaMemDiscardAndPrefetchBatchAsync(pointers, sizes, 1, &gpu, location_starts, 1, 0, stream));
    });

    void* touched = nullptr;
    CUDA_CHECK(cudaMallocManaged(&touched, bytes));
    const Timing touch = time_on_stream(stream, [&] {
        first_touch<<<1024, 256, 0, stream>>>(static_cast<unsigned int*>(touched), bytes / sizeof(unsigned int));
        CUDA_CHECK(cudaGetLastError());
    });

    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaFree(prefetched));
    CUDA_CHECK(cudaFree(discarded));
    CUDA_CHECK(cudaFree(touched));
    CUDA_CHECK(cudaStreamDestroy(stream));

    std::printf("fresh managed buffers of %zu GiB each, moved to device %d:\n", gib_per_buffer, device);
    bench::print_stream_timing("prefetch", kPathWidth, bytes, prefetch);
    bench::print_stream_timing("discard+prefetch", kPathWidth, bytes, discard_prefetch);
    bench::print_stream_timing("first touch", kPathWidth, bytes, touch);
    std::printf("{\"bytes\": %zu, \"prefetch_gbps\": %.2f, \"discard_prefetch_gbps\": %.2f, "
                "\"first_touch_gbps\": %.2f, \"prefetch_host_call_ms\": %.2f, "
                "\"discard_prefetch_host_call_ms\": %.2f}\n",
                bytes, gigabytes_per_second(bytes, prefetch.gpu_ms),
                gigabytes_per_second(bytes, discard_prefetch.gpu_ms), gigabytes_per_second(bytes, touch.gpu_ms),
                prefetch.host_call_ms, discard_prefetch.host_call_ms);
    return 0;
}

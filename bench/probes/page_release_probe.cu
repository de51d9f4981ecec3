// Whether dropping a managed range's GPU copy gives its GPU pages back for other
// managed memory of the same process. The budget counts what the job holds of the
// GPU; a range counts until its pages are free for something else. Neither an
// eviction nor a discard raises cudaMemGetInfo's free figure (unified memory keeps
// pages it took from the driver), so this asks the other way round: after range A
// is resident and then kept, evicted or discarded, how much new memory does the
// GPU hand out when range B, as large, is prefetched? Pages A gave back are used
// for B and the free figure falls by little; pages A still holds are not, and it
// falls by all of B.
//
// Usage: page_release_probe keep|evict|discard [GiB per range, 1-4] (default 2).
// Run each mode in a process of its own: pages given back stay with the process.
// Prints one line and one JSON line; exit 77 when the GPU lacks the free memory.

#include "cuda_check.h"
#include "probe_args.h"
#include "probe_guard.h"
#include "probe_timing.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

namespace {

constexpr size_t kGiB = size_t{1} << 30;

size_t free_now() {
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return free_bytes;
}

double mib(long long bytes) { return static_cast<double>(bytes) / double(1 << 20); }

} // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3 ||
        (std::strcmp(argv[1], "keep") != 0 && std::strcmp(argv[1], "evict") != 0 && std::strcmp(argv[1], "discard") != 0)) {
        std::fprintf(stderr, "usage: page_release_probe keep|evict|discard [GiB per range, 1-4]\n");
        return 2;
    }
    const char* mode = argv[1];
    const auto gib_argument =
        bench::number_argument(argc, argv, 2, "page_release_probe", "size in GiB per range", 1, 4, 2);
    if (!gib_argument) return 2;
    const size_t gib = static_cast<size_t>(*gib_argument);
    const size_t bytes = gib * kGiB;

    const int device = 0;
    CUDA_CHECK(cudaSetDevice(device));
    if (!bench::gpu_has_room("page_release_probe", 2 * bytes)) return 77;
    // Batch and discard calls refuse the legacy default stream.
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaMemLocation gpu{};
    gpu.type = cudaMemLocationTypeDevice;
    gpu.id = device;
    cudaMemLocation host{};
    host.type = cudaMemLocationTypeHost;

    void* a = nullptr;
    void* b = nullptr;
    CUDA_CHECK(cudaMallocManaged(&a, bytes));
    CUDA_CHECK(cudaMallocManaged(&b, bytes));
    // A written on the GPU: its pages are there and hold data.
    CUDA_CHECK(cudaMemPrefetchAsync(a, bytes, gpu, 0, stream));
    CUDA_CHECK(cudaMemsetAsync(a, 0x5a, bytes, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    const size_t with_a = free_now();

    auto start = bench::Clock::now();
    if (std::strcmp(mode, "evict") == 0) {
        CUDA_CHECK(cudaMemPrefetchAsync(a, bytes, host, 0, stream));
    } else if (std::strcmp(mode, "discard") == 0) {
        void* pointers[1] = {a};
        size_t sizes[1] = {bytes};
        CUDA_CHECK(cudaMemDiscardBatchAsync(pointers, sizes, 1, 0, stream));
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
    const double drop_ms = bench::ms_since(start);
    const size_t after_drop = free_now();

    start = bench::Clock::now();
    CUDA_CHECK(cudaMemPrefetchAsync(b, bytes, gpu, 0, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    const double b_ms = bench::ms_since(start);
    const size_t with_b = free_now();

    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaStreamDestroy(stream));

    const long long fell_for_b = static_cast<long long>(after_drop) - static_cast<long long>(with_b);
    const double released = 1.0 - static_cast<double>(fell_for_b) / static_cast<double>(bytes);
    std::printf("%s: %zu GiB ranges; A dropped in %.1f ms (free %+.0f MiB), B fetched in %.1f ms; free fell "
                "%.0f MiB for B: %.0f%% of A's pages served B\n",
                mode, gib, drop_ms, mib(static_cast<long long>(after_drop) - static_cast<long long>(with_a)), b_ms,
                mib(fell_for_b), 100.0 * released);
    std::printf("{\"mode\": \"%s\", \"bytes\": %zu, \"drop_ms\": %.2f, \"fetch_b_ms\": %.2f, \"free_after_drop_delta\": "
                "%lld, \"free_fell_for_b\": %lld, \"share_released\": %.3f}\n",
                mode, bytes, drop_ms, b_ms, static_cast<long long>(after_drop) - static_cast<long long>(with_a),
                fell_for_b, released);
    return 0;
}

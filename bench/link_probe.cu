// How fast the link moves managed memory that holds data, both ways, moved the way
// the library moves it (cudaMemPrefetchAsync of one large range): to the GPU (a
// fetch) and back to the host (an eviction). The oversubscription benchmark divides
// the bytes a step must move by these rates for its transfer bound, so the bound
// follows the machine of the day rather than figures measured once.
//
// Usage: link_probe [MiB] (default 2048, at most 4096). Each direction is the median
// of 5 moves of the whole buffer. Prints one line per direction and one JSON line;
// exit 77 when the GPU lacks the free memory.

#include "cuda_check.h"
#include "probe_args.h"
#include "probe_guard.h"
#include "probe_timing.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr int kRepeats = 5;

double move_ms(void* data, size_t bytes, cudaMemLocation to, cudaStream_t stream) {
    const auto start = bench::Clock::now();
    CUDA_CHECK(cudaMemPrefetchAsync(data, bytes, to, 0, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    return bench::ms_since(start);
}

double gbps(size_t bytes, double ms) { return static_cast<double>(bytes) / (ms * 1e6); }

} // namespace

int main(int argc, char** argv) {
    size_t mib = 2048;
    if (argc > 2) {
        std::fprintf(stderr, "usage: link_probe [MiB, 1 to 4096]\n");
        return 2;
    }
    if (argc == 2) {
        const auto value = bench::whole_number_in(argv[1], 1, 4096);
        if (!value) {
            std::fprintf(stderr, "link_probe: invalid size '%s': expected a whole number of MiB from 1 to 4096\n",
                         argv[1]);
            return 2;
        }
        mib = static_cast<size_t>(*value);
    }
    const size_t bytes = mib * kMiB;
    int device = 0;
    CUDA_CHECK(cudaSetDevice(device));
    if (!bench::gpu_has_room("link_probe", bytes)) return 77;

    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, device};
    cudaMemLocation host{cudaMemLocationTypeHost, 0};
    void* data = nullptr;
    CUDA_CHECK(cudaMallocManaged(&data, bytes));
    // Written on the host, so every page holds data there before the first fetch.
    std::memset(data, 1, bytes);

    std::vector<double> fetch, evict;
    for (int i = 0; i < kRepeats; ++i) {
        fetch.push_back(move_ms(data, bytes, gpu, stream));
        evict.push_back(move_ms(data, bytes, host, stream));
    }
    const double fetch_ms = bench::median(fetch), evict_ms = bench::median(evict);
    std::printf("fetch (host to GPU) %zu MiB: %.2f ms, %.1f GB/s\n", mib, fetch_ms, gbps(bytes, fetch_ms));
    std::printf("evict (GPU to host) %zu MiB: %.2f ms, %.1f GB/s\n", mib, evict_ms, gbps(bytes, evict_ms));
    std::printf("{\"bytes\": %zu, \"h2d_gbps\": %.2f, \"d2h_gbps\": %.2f, \"fetch_ms\": %.3f, \"evict_ms\": %.3f}\n",
                bytes, gbps(bytes, fetch_ms), gbps(bytes, evict_ms), fetch_ms, evict_ms);

    CUDA_CHECK(cudaFree(data));
    CUDA_CHECK(cudaStreamDestroy(stream));
    return 0;
}

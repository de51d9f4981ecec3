// How fast the link moves managed memory that holds data, both ways, moved the way
// the library moves it (cudaMemPrefetchAsync of one large range): to the GPU (a
// fetch) and back to the host (an eviction). The oversubscription benchmark divides
// the bytes a step must move by these rates for its transfer bound, so the bound
// follows the machine of the day rather than figures measured once.
//
// Then the rates of the host tier: the same buffer left on the host, advised
// PreferredLocation host and AccessedBy the GPU, written and read by kernels over
// the link (nothing migrates): the remote floor S/w + S/r beside S/e + S/f.
//
// Usage: link_probe [MiB] (default 2048, at most 4096). Each figure is the median
// of 5 runs over the whole buffer. Prints one line per figure and one JSON line;
// exit 77 when the GPU lacks the free memory.

#include "cuda_check.h"
#include "probe_args.h"
#include "probe_guard.h"
#include "probe_timing.h"
#include "stream_timing.h"

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

__global__ void write_words(uint4* data, size_t words, unsigned value) {
    for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < words; i += size_t{gridDim.x} * blockDim.x)
        data[i] = make_uint4(value, value, value, value);
}

__global__ void read_words(const uint4* data, size_t words, unsigned* sink) {
    unsigned sum = 0;
    for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < words; i += size_t{gridDim.x} * blockDim.x) {
        const uint4 w = data[i];
        sum ^= w.x ^ w.y ^ w.z ^ w.w;
    }
    // Kept, so that the reads are not optimised away.
    if (sum == 0x9e3779b9u) *sink = sum;
}

// One kernel over the buffer, timed on the GPU.
template <typename Launch>
double kernel_ms(cudaStream_t stream, Launch launch) {
    return bench::time_on_stream(stream, [&] {
               launch();
               CUDA_CHECK(cudaGetLastError());
           }).gpu_ms;
}

} // namespace

int main(int argc, char** argv) {
    if (argc > 2) {
        std::fprintf(stderr, "usage: link_probe [MiB, 1 to 4096]\n");
        return 2;
    }
    const auto mib_argument = bench::number_argument(argc, argv, 1, "link_probe", "size in MiB", 1, 4096, 2048);
    if (!mib_argument) return 2;
    const size_t mib = static_cast<size_t>(*mib_argument);
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

    // The last move left every page on the host: from here on it stays there.
    CUDA_CHECK(cudaMemAdvise(data, bytes, cudaMemAdviseSetPreferredLocation, host));
    CUDA_CHECK(cudaMemAdvise(data, bytes, cudaMemAdviseSetAccessedBy, gpu));
    unsigned* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&sink, sizeof(unsigned)));
    const size_t words = bytes / sizeof(uint4);
    auto* vectors = static_cast<uint4*>(data);
    constexpr int kBlocks = 1024, kThreads = 512;
    std::vector<double> remote_write, remote_read;
    for (int i = 0; i < kRepeats; ++i) {
        remote_write.push_back(kernel_ms(stream, [&] { write_words<<<kBlocks, kThreads, 0, stream>>>(vectors, words, i); }));
        remote_read.push_back(kernel_ms(stream, [&] { read_words<<<kBlocks, kThreads, 0, stream>>>(vectors, words, sink); }));
    }
    const double write_ms = bench::median(remote_write), read_ms = bench::median(remote_read);
    std::printf("remote write (GPU kernel, host pages) %zu MiB: %.2f ms, %.1f GB/s\n", mib, write_ms, gbps(bytes, write_ms));
    std::printf("remote read (GPU kernel, host pages) %zu MiB: %.2f ms, %.1f GB/s\n", mib, read_ms, gbps(bytes, read_ms));
    std::printf("{\"bytes\": %zu, \"h2d_gbps\": %.2f, \"d2h_gbps\": %.2f, \"fetch_ms\": %.3f, \"evict_ms\": %.3f, "
                "\"remote_write_gbps\": %.2f, \"remote_read_gbps\": %.2f}\n",
                bytes, gbps(bytes, fetch_ms), gbps(bytes, evict_ms), fetch_ms, evict_ms, gbps(bytes, write_ms),
                gbps(bytes, read_ms));

    CUDA_CHECK(cudaFree(sink));
    CUDA_CHECK(cudaFree(data));
    CUDA_CHECK(cudaStreamDestroy(stream));
    return 0;
}

// What it takes to give the GPU back the pages of managed memory whose contents
// are dead (a freed block of the pool), measured by the device's free memory:
//   resident   a buffer prefetched to the GPU
//   discard    cudaMemDiscardBatchAsync of it: does the GPU get its pages back?
//   refill     a prefetch to the GPU of the discarded buffer (populating it again)
//   write      a kernel writing every byte of it after the refill
//   evict      a prefetch of it to the host
// A budget that stands in for a smaller GPU has to count dead pages that stay on
// the GPU; this says what dropping them costs, and whether a discard drops them.
// The last two steps issue a discard and a refill behind 200 ms of kernel on the
// stream: their host call times say whether such a call holds its thread until
// the stream gets to it (which an application's thread cannot afford).
//
// Usage: dead_memory_probe [GiB] (default 4, at most 4). Prints a line per step
// and one JSON line; exit 77 when the GPU lacks the free memory.

#include "cuda_check.h"
#include "probe_args.h"
#include "probe_guard.h"
#include "probe_timing.h"
#include "stream_timing.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace {

constexpr size_t kGiB = size_t{1} << 30;

__global__ void write_all(unsigned int* data, size_t count) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count; i += stride)
        data[i] = static_cast<unsigned int>(i);
}

// Keeps the stream busy for about `ns`, so that a call issued behind it shows
// whether it holds the host thread until the stream reaches it.
__global__ void spin(unsigned long long ns) {
    unsigned long long start = 0, now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

double free_gib() {
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return static_cast<double>(free_bytes) / static_cast<double>(kGiB);
}

double gbps(size_t bytes, double ms) { return ms > 0.0 ? bytes / (ms * 1e6) : 0.0; }

struct Step {
    const char* name; // also its key in the JSON line

    bench::StreamTiming timing;
    double free_after_gib;
};

} // namespace

int main(int argc, char** argv) {
    size_t gib = 4;
    if (argc > 2) {
        std::fprintf(stderr, "usage: dead_memory_probe [GiB, 1 to 4]\n");
        return 2;
    }
    if (argc == 2) {
        const auto value = bench::whole_number_in(argv[1], 1, 4);
        if (!value) {
            std::fprintf(stderr, "dead_memory_probe: invalid size '%s': expected 1 to 4 (GiB)\n", argv[1]);
            return 2;
        }
        gib = static_cast<size_t>(*value);
    }
    const size_t bytes = gib * kGiB;
    const int device = 0;
    CUDA_CHECK(cudaSetDevice(device));
    if (!bench::gpu_has_room("dead_memory_probe", bytes)) return 77;

    // Batch and discard calls refuse the legacy default stream.
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaMemLocation gpu{};
    gpu.type = cudaMemLocationTypeDevice;
    gpu.id = device;
    cudaMemLocation host{};
    host.type = cudaMemLocationTypeHost;
    host.id = 0;

    const double free_before = free_gib();
    void* buffer = nullptr;
    CUDA_CHECK(cudaMallocManaged(&buffer, bytes));
    const auto settle_and_read = [] {
        // The driver may give pages back lazily: read after a pause as well.
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        return free_gib();
    };
    Step steps[7];
    steps[0] = {"resident", bench::time_on_stream(stream, [&] { CUDA_CHECK(cudaMemPrefetchAsync(buffer, bytes, gpu, 0, stream)); }), 0};
    steps[0].free_after_gib = settle_and_read();
    steps[1] = {"discard", bench::time_on_stream(stream, [&] {
                    void* pointers[1] = {buffer};
                    size_t sizes[1] = {bytes};
                    CUDA_CHECK(cudaMemDiscardBatchAsync(pointers, sizes, 1, 0, stream));
                }), 0};
    steps[1].free_after_gib = settle_and_read();
    steps[2] = {"refill", bench::time_on_stream(stream, [&] { CUDA_CHECK(cudaMemPrefetchAsync(buffer, bytes, gpu, 0, stream)); }), 0};
    steps[2].free_after_gib = settle_and_read();
    steps[3] = {"write", bench::time_on_stream(stream, [&] {
                    write_all<<<1024, 256, 0, stream>>>(static_cast<unsigned int*>(buffer), bytes / sizeof(unsigned int));
                    CUDA_CHECK(cudaGetLastError());
                }), 0};
    steps[3].free_after_gib = settle_and_read();
    steps[4] = {"evict", bench::time_on_stream(stream, [&] { CUDA_CHECK(cudaMemPrefetchAsync(buffer, bytes, host, 0, stream)); }), 0};
    steps[4].free_after_gib = settle_and_read();
    // The same calls behind 200 ms of kernel on the stream (the buffer is back on the GPU first).
    CUDA_CHECK(cudaMemPrefetchAsync(buffer, bytes, gpu, 0, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    constexpr unsigned long long kSpinNs = 200'000'000ull;
    steps[5] = {"discard_behind_200ms", bench::time_on_stream(stream, [&] {
                    spin<<<1, 1, 0, stream>>>(kSpinNs);
                    CUDA_CHECK(cudaGetLastError());
                    void* pointers[1] = {buffer};
                    size_t sizes[1] = {bytes};
                    CUDA_CHECK(cudaMemDiscardBatchAsync(pointers, sizes, 1, 0, stream));
                }), 0};
    steps[5].free_after_gib = free_gib();
    steps[6] = {"refill_behind_200ms", bench::time_on_stream(stream, [&] {
                    spin<<<1, 1, 0, stream>>>(kSpinNs);
                    CUDA_CHECK(cudaGetLastError());
                    CUDA_CHECK(cudaMemPrefetchAsync(buffer, bytes, gpu, 0, stream));
                }), 0};
    steps[6].free_after_gib = free_gib();
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaFree(buffer));
    CUDA_CHECK(cudaStreamDestroy(stream));

    std::printf("managed buffer of %zu GiB on device %d; %.2f GiB free before it\n", gib, device, free_before);
    for (const Step& s : steps)
        std::printf("%-21s %8.2f ms on the stream (%7.1f GB/s), host call %7.2f ms, then %.2f GiB free\n", s.name,
                    s.timing.gpu_ms, gbps(bytes, s.timing.gpu_ms), s.timing.host_call_ms, s.free_after_gib);
    std::printf("{\"bytes\": %zu, \"free_before_gib\": %.3f", bytes, free_before);
    for (const Step& s : steps)
        std::printf(", \"%s\": {\"gpu_ms\": %.3f, \"host_call_ms\": %.3f, \"free_after_gib\": %.3f}", s.name,
                    s.timing.gpu_ms, s.timing.host_call_ms, s.free_after_gib);
    std::printf("}\n");
    return 0;
}

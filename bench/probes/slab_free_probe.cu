// What giving a managed slab back costs, against evicting its bytes. Under a
// budget the pool's freed blocks leave dead bytes on the GPU; room for live data
// comes either from evicting them (host pages populated for bytes nobody reads)
// or from freeing a slab that holds nothing live, after which a new slab's pages
// are populated on the GPU when blocks land there. Which is cheaper decides
// whether the pool gives wholly free slabs back as soon as room is short.
//
// For each of `rounds` ranges of `GiB` (fresh managed memory each time):
//   evict        a GPU-resident range prefetched to the host (stream time)
//   free         cudaFree of a GPU-resident range, the GPU idle (host time)
//   free busy    cudaFree of one while a kernel of about 100 ms runs on another
//                stream: whether the free waits for the GPU's work
//   free mixed   cudaFree of a range half of whose pages were evicted
//   launch beside a free
//                the host time of a kernel launch on a third stream, made
//                while another thread's cudaFree waits for the running kernel:
//                whether a free made off the launching thread holds its
//                launches up
//   make         cudaMallocManaged of a range (host time)
//   populate     a fresh range prefetched to the GPU (stream time)
//
// Usage: slab_free_probe [GiB per range, 1-4] [rounds, 1-8] (default 1 and 4).
// Prints one line per measure (median of the rounds) and one JSON line; exit 77
// when the GPU lacks the free memory.

#include "cuda_check.h"
#include "probe_args.h"
#include "probe_guard.h"
#include "probe_timing.h"
#include "stream_timing.h"

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

constexpr size_t kGiB = size_t{1} << 30;

// Spins for about `cycles` clock cycles: GPU work that is still running when the free is called.
__global__ void spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

__global__ void empty_kernel() {}

struct Ranges {
    std::vector<double> evict_ms, free_ms, free_busy_ms, free_mixed_ms, make_ms, populate_ms, launch_beside_free_ms;
};

void* resident_range(size_t bytes, cudaMemLocation gpu, cudaStream_t stream, double* make_ms = nullptr,
                     double* populate_ms = nullptr) {
    void* p = nullptr;
    const auto start = bench::Clock::now();
    CUDA_CHECK(cudaMallocManaged(&p, bytes));
    if (make_ms) *make_ms = bench::ms_since(start);
    const bench::StreamTiming t =
        bench::time_on_stream(stream, [&] { CUDA_CHECK(cudaMemPrefetchAsync(p, bytes, gpu, 0, stream)); });
    if (populate_ms) *populate_ms = t.gpu_ms;
    return p;
}

double timed_free(void* p) {
    const auto start = bench::Clock::now();
    CUDA_CHECK(cudaFree(p));
    return bench::ms_since(start);
}

} // namespace

int main(int argc, char** argv) {
    if (argc > 3) {
        std::fprintf(stderr, "usage: slab_free_probe [GiB per range, 1-4] [rounds, 1-8]\n");
        return 2;
    }
    const auto gib = bench::number_argument(argc, argv, 1, "slab_free_probe", "size in GiB per range", 1, 4, 1);
    if (!gib) return 2;
    const auto rounds = bench::number_argument(argc, argv, 2, "slab_free_probe", "rounds", 1, 8, 4);
    if (!rounds) return 2;
    const size_t bytes = static_cast<size_t>(*gib) * kGiB;

    int device = 0;
    CUDA_CHECK(cudaSetDevice(device));
    // At most two ranges are held at once.
    if (!bench::gpu_has_room("slab_free_probe", 2 * bytes)) return 77;
    int clock_khz = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));

    cudaStream_t stream, busy, side;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    // Loaded before anything is timed: a first launch also loads its module.
    empty_kernel<<<1, 1, 0, side>>>();
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(side));
    cudaMemLocation gpu{}, host{};
    gpu.type = cudaMemLocationTypeDevice;
    gpu.id = device;
    host.type = cudaMemLocationTypeHost;
    host.id = 0;

    Ranges r;
    const long long spin_cycles = static_cast<long long>(clock_khz) * 100; // about 100 ms
    double spin_alone_ms = 0.0;
    for (long i = 0; i < *rounds; ++i) {
        double make_ms = 0.0, populate_ms = 0.0;
        void* a = resident_range(bytes, gpu, stream, &make_ms, &populate_ms);
        r.make_ms.push_back(make_ms);
        r.populate_ms.push_back(populate_ms);
        r.evict_ms.push_back(
            bench::time_on_stream(stream, [&] { CUDA_CHECK(cudaMemPrefetchAsync(a, bytes, host, 0, stream)); }).gpu_ms);
        CUDA_CHECK(cudaFree(a));

        r.free_ms.push_back(timed_free(resident_range(bytes, gpu, stream)));

        void* b = resident_range(bytes, gpu, stream);
        CUDA_CHECK(cudaDeviceSynchronize());
        const auto spin_start = bench::Clock::now();
        spin<<<1, 1, 0, busy>>>(spin_cycles);
        CUDA_CHECK(cudaGetLastError());
        r.free_busy_ms.push_back(timed_free(b));
        CUDA_CHECK(cudaStreamSynchronize(busy));
        spin_alone_ms = bench::ms_since(spin_start);

        void* d = resident_range(bytes, gpu, stream);
        CUDA_CHECK(cudaDeviceSynchronize());
        spin<<<1, 1, 0, busy>>>(spin_cycles);
        CUDA_CHECK(cudaGetLastError());
        std::atomic<bool> freeing{false};
        std::thread freer([&] {
            freeing.store(true);
            CUDA_CHECK(cudaFree(d));
        });
        while (!freeing.load()) std::this_thread::yield();
        // Long enough for the free to be waiting on the kernel, well inside its 100 ms.
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        const auto launch_start = bench::Clock::now();
        empty_kernel<<<1, 1, 0, side>>>();
        CUDA_CHECK(cudaGetLastError());
        r.launch_beside_free_ms.push_back(bench::ms_since(launch_start));
        freer.join();
        CUDA_CHECK(cudaDeviceSynchronize());

        void* c = resident_range(bytes, gpu, stream);
        CUDA_CHECK(cudaMemPrefetchAsync(c, bytes / 2, host, 0, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        r.free_mixed_ms.push_back(timed_free(c));
    }
    CUDA_CHECK(cudaStreamDestroy(stream));
    CUDA_CHECK(cudaStreamDestroy(busy));
    CUDA_CHECK(cudaStreamDestroy(side));

    const double evict = bench::median(r.evict_ms), freed = bench::median(r.free_ms),
                 busy_free = bench::median(r.free_busy_ms), mixed = bench::median(r.free_mixed_ms),
                 make = bench::median(r.make_ms), populate = bench::median(r.populate_ms),
                 beside = bench::median(r.launch_beside_free_ms);
    std::printf("managed ranges of %ld GiB, median of %ld rounds:\n", *gib, *rounds);
    std::printf("evict      %8.2f ms  (%.1f GB/s)\n", evict, bench::gigabytes_per_second(bytes, evict));
    std::printf("free       %8.2f ms  (GPU idle)\n", freed);
    std::printf("free busy  %8.2f ms  (a kernel of %.0f ms running on another stream)\n", busy_free, spin_alone_ms);
    std::printf("free mixed %8.2f ms  (half the pages evicted first)\n", mixed);
    std::printf("launch     %8.3f ms  (beside another thread's free of a busy GPU)\n", beside);
    std::printf("make       %8.2f ms\n", make);
    std::printf("populate   %8.2f ms  (%.1f GB/s)\n", populate, bench::gigabytes_per_second(bytes, populate));
    std::printf("{\"bytes\": %zu, \"rounds\": %ld, \"evict_ms\": %.3f, \"free_ms\": %.3f, \"free_busy_ms\": %.3f, "
                "\"busy_kernel_ms\": %.3f, \"free_mixed_ms\": %.3f, \"launch_beside_free_ms\": %.3f, \"make_ms\": %.3f, "
                "\"populate_ms\": %.3f}\n",
                bytes, *rounds, evict, freed, busy_free, spin_alone_ms, mixed, beside, make, populate);
    return 0;
}

// What a host home made of pinned host memory would cost, against the managed one
// of host_home_probe: a managed host home's pages are made by the GPU's first
// writes (4-5 GB/s measured), inside the first step that uses it. Pinned memory
// has its pages made and pinned when it is allocated, which a thread of the
// library could do ahead of that step, if the allocation leaves the application's
// launches alone meanwhile. Measured, on 1 or 2 GiB buffers:
//   pinned alloc        cudaHostAlloc(mapped): the host call
//   first write         a kernel writing every element of it, through its mapping
//   read                a kernel reading every element
//   launches beside     the slowest of the empty-kernel launch calls made while
//                       another thread allocates a second pinned buffer, and the
//                       slowest of 2000 made with nothing beside them
//   touched, registered a malloc'd buffer whose pages 8 threads write first, then
//                       cudaHostRegister(mapped): both host times
// Where pinned alloc runs well above the first write's rate and the launches beside
// it do not wait for it, host homes could be made ahead, off the application's path.
//
// Usage: pinned_home_probe [GiB per buffer] (default 1, at most 2; two pinned
// buffers and one registered). Prints one line per path and one JSON line; exit
// 77 when the host lacks the free memory.

#include "cuda_check.h"
#include "launch_latency.cuh"
#include "probe_args.h"
#include "probe_timing.h"
#include "stream_timing.h"
#include "word_kernels.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

constexpr size_t kGiB = size_t{1} << 30;
constexpr unsigned kTouchThreads = 8;
using bench::gigabytes_per_second;
using bench::slowest_launch_ms;
using bench::kWordBlockThreads;
using bench::kWordGridBlocks;
using bench::read_all;
using bench::write_all;

// Whether the host has `bytes` of memory free (pages neither used nor cached).
bool host_has_room(size_t bytes) {
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 && static_cast<size_t>(pages) * static_cast<size_t>(page) >= bytes;
}

} // namespace

int main(int argc, char** argv) {
    const auto bytes_argument = bench::gib_per_buffer_argument(argc, argv, "pinned_home_probe");
    if (!bytes_argument) return 2;
    const size_t bytes = *bytes_argument;
    // Two pinned buffers and one registered: never more than the host has free.
    if (!host_has_room(3 * bytes)) {
        std::fprintf(stderr, "pinned_home_probe: the host has less than %zu GiB free\n", 3 * bytes / kGiB);
        return 77;
    }
    const size_t count = bytes / sizeof(unsigned int);

    CUDA_CHECK(cudaSetDevice(0));
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    unsigned int* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&sink, sizeof(unsigned int)));
    bench::empty_kernel<<<1, 1, 0, stream>>>(); // the module loaded before any timing
    CUDA_CHECK(cudaStreamSynchronize(stream));

    void* pinned = nullptr;
    const auto alloc_start = bench::Clock::now();
    CUDA_CHECK(cudaHostAlloc(&pinned, bytes, cudaHostAllocMapped));
    const double alloc_ms = bench::ms_since(alloc_start);
    void* mapped = nullptr;
    CUDA_CHECK(cudaHostGetDevicePointer(&mapped, pinned, 0));
    const bench::StreamTiming first_write = bench::time_on_stream(stream, [&] {
        write_all<<<kWordGridBlocks, kWordBlockThreads, 0, stream>>>(static_cast<unsigned int*>(mapped), count);
        CUDA_CHECK(cudaGetLastError());
    });
    const bench::StreamTiming read = bench::time_on_stream(stream, [&] {
        read_all<<<kWordGridBlocks, kWordBlockThreads, 0, stream>>>(static_cast<const unsigned int*>(mapped), count, sink);
        CUDA_CHECK(cudaGetLastError());
    });

    std::atomic<bool> launching{false}, allocated{false};
    void* second = nullptr;
    double second_alloc_ms = 0;
    std::thread allocator([&] {
        while (!launching.load()) std::this_thread::yield();
        const auto start = bench::Clock::now();
        CUDA_CHECK(cudaHostAlloc(&second, bytes, cudaHostAllocMapped));
        second_alloc_ms = bench::ms_since(start);
        allocated.store(true);
    });
    int beside_launches = 0;
    const double beside_ms = slowest_launch_ms(stream, &launching, &allocated, &beside_launches);
    allocator.join();
    const double alone_ms = slowest_launch_ms(stream, nullptr, nullptr, nullptr);

    // Pages made by host threads first, then pinned and mapped.
    char* plain = static_cast<char*>(std::aligned_alloc(4096, bytes));
    if (!plain) {
        std::fprintf(stderr, "pinned_home_probe: aligned_alloc of %zu bytes failed\n", bytes);
        return 1;
    }
    const auto touch_start = bench::Clock::now();
    std::vector<std::thread> touchers;
    for (unsigned t = 0; t < kTouchThreads; ++t)
        touchers.emplace_back([&, t] {
            const size_t share = bytes / kTouchThreads;
            std::memset(plain + t * share, 0, t + 1 == kTouchThreads ? bytes - t * share : share);
        });
    for (std::thread& t : touchers) t.join();
    const double touch_ms = bench::ms_since(touch_start);
    const auto register_start = bench::Clock::now();
    CUDA_CHECK(cudaHostRegister(plain, bytes, cudaHostRegisterMapped));
    const double register_ms = bench::ms_since(register_start);

    CUDA_CHECK(cudaHostUnregister(plain));
    std::free(plain);
    CUDA_CHECK(cudaFreeHost(pinned));
    CUDA_CHECK(cudaFreeHost(second));
    CUDA_CHECK(cudaFree(sink));
    CUDA_CHECK(cudaStreamDestroy(stream));

    const double alloc_gbps = gigabytes_per_second(bytes, alloc_ms);
    const double write_gbps = gigabytes_per_second(bytes, first_write.gpu_ms);
    const double read_gbps = gigabytes_per_second(bytes, read.gpu_ms);
    const double touch_gbps = gigabytes_per_second(bytes, touch_ms);
    const double register_gbps = gigabytes_per_second(bytes, register_ms);
    std::printf("pinned host buffers of %zu GiB, mapped by device 0:\n", bytes / kGiB);
    std::printf("%-20s %6.1f GB/s  (host call %.2f ms)\n", "pinned alloc", alloc_gbps, alloc_ms);
    bench::print_stream_timing("first write", 20, bytes, first_write);
    bench::print_stream_timing("read", 20, bytes, read);
    std::printf("%-20s slowest of %d launch calls %.3f ms beside a pinned alloc of %.2f ms; of %d alone %.3f ms\n",
                "launches beside", beside_launches, beside_ms, second_alloc_ms, bench::kLatencyLaunches, alone_ms);
    std::printf("%-20s %6.1f GB/s touched by %u threads (%.2f ms), %6.1f GB/s registered (%.2f ms)\n",
                "touched, registered", touch_gbps, kTouchThreads, touch_ms, register_gbps, register_ms);
    std::printf("{\"bytes\": %zu, \"pinned_alloc_gbps\": %.2f, \"pinned_first_write_gbps\": %.2f, "
                "\"pinned_read_gbps\": %.2f, \"launch_beside_alloc_ms\": %.3f, \"launch_alone_ms\": %.3f, "
                "\"beside_alloc_ms\": %.2f, \"touch_gbps\": %.2f, \"register_gbps\": %.2f}\n",
                bytes, alloc_gbps, write_gbps, read_gbps, beside_ms, alone_ms, second_alloc_ms, touch_gbps,
                register_gbps);
    return 0;
}

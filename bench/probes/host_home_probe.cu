// What a new host home costs the first time kernels write it. The library makes a
// host-homed slab as managed memory that prefers the host and that the GPU maps
// (src/driver/pool/host_advice.cpp), and the first kernel to write each of its pages
// makes that page on the host by a fault. Three fresh buffers, advised so:
//   first write       a kernel writes every element: the pages are made by its faults
//   rewrite           the same kernel again over the same buffer: pages in place
//   host populate     cudaMemPrefetchAsync to the host of a second fresh buffer: its pages
//                     made there ahead, nothing copied
//   write populated   the kernel over that buffer after its population
//   read populated    a kernel reading every element of a third buffer populated the
//                     same way (what a reader of a host home pays)
//   host touch        8 host threads read one byte of every page of a fourth fresh
//                     buffer (a read leaves data that a kernel may be writing meanwhile
//                     as it is), while this thread launches empty kernels: the pages'
//                     rate, and the slowest launch call beside them
//   write touched     the kernel over that buffer afterwards (at the first write's rate
//                     where the reads made no writable page)
//   populate write    8 host threads madvise(MADV_POPULATE_WRITE) a fifth fresh buffer
//                     (no byte written; "n/a" where the kernel refuses it), launches beside
// Where a path makes the pages well above the first write's rate and leaves the
// launches alone, a thread of the library can make a host slab's pages ahead of its
// first writer, off the application's path.
//
// Usage: host_home_probe [GiB per buffer] (default 1, at most 2; five buffers).
// Prints one line per path and one JSON line; exit 77 when the GPU lacks the free memory.

#include "cuda_check.h"
#include "launch_latency.cuh"
#include "probe_args.h"
#include "probe_guard.h"
#include "probe_timing.h"
#include "stream_timing.h"
#include "word_kernels.cuh"

#include <cuda_runtime.h>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace {

constexpr size_t kGiB = size_t{1} << 30;
using bench::kWordBlockThreads;
using bench::kWordGridBlocks;
using bench::read_all;
using bench::write_all;

using Timing = bench::StreamTiming;

using bench::gigabytes_per_second;
using bench::time_on_stream;

// The width of the path column of the printed lines.
constexpr int kPathWidth = 16;

// A fresh managed buffer advised as the library advises a host home.
void* host_home(size_t bytes, int device) {
    void* buffer = nullptr;
    CUDA_CHECK(cudaMallocManaged(&buffer, bytes));
    cudaMemLocation host{};
    host.type = cudaMemLocationTypeHost;
    cudaMemLocation gpu{};
    gpu.type = cudaMemLocationTypeDevice;
    gpu.id = device;
    CUDA_CHECK(cudaMemAdvise(buffer, bytes, cudaMemAdviseSetPreferredLocation, host));
    CUDA_CHECK(cudaMemAdvise(buffer, bytes, cudaMemAdviseSetAccessedBy, gpu));
    return buffer;
}

Timing write_timed(cudaStream_t stream, void* buffer, size_t bytes) {
    return time_on_stream(stream, [&] {
        write_all<<<kWordGridBlocks, kWordBlockThreads, 0, stream>>>(static_cast<unsigned int*>(buffer),
                                                              bytes / sizeof(unsigned int));
        CUDA_CHECK(cudaGetLastError());
    });
}

Timing populate_timed(cudaStream_t stream, void* buffer, size_t bytes) {
    cudaMemLocation host{};
    host.type = cudaMemLocationTypeHost;
    return time_on_stream(stream, [&] { CUDA_CHECK(cudaMemPrefetchAsync(buffer, bytes, host, 0, stream)); });
}

constexpr unsigned kHostThreads = 8;
constexpr size_t kPage = 4096;

// Pages made on the host by kHostThreads threads, each over its share of the
// buffer, while this thread launches empty kernels on `stream`.
struct HostPages {
    bool done = false;          // false where a thread's call failed
    double ms = 0;              // until the last thread ended
    double slowest_launch_ms = 0;
};

template <typename MakePages>
HostPages make_host_pages(cudaStream_t stream, char* buffer, size_t bytes, MakePages make_pages) {
    std::atomic<bool> launching{false}, finished{false}, failed{false};
    HostPages result;
    std::thread maker([&] {
        while (!launching.load()) std::this_thread::yield();
        const auto start = bench::Clock::now();
        std::vector<std::thread> threads;
        const size_t share = (bytes / kHostThreads + kPage - 1) / kPage * kPage;
        for (unsigned t = 0; t < kHostThreads; ++t)
            threads.emplace_back([&, t] {
                const size_t begin = std::min(bytes, t * share), end = std::min(bytes, begin + share);
                if (begin < end && !make_pages(buffer + begin, end - begin)) failed.store(true);
            });
        for (std::thread& thread : threads) thread.join();
        result.ms = bench::ms_since(start);
        finished.store(true);
    });
    result.slowest_launch_ms = bench::slowest_launch_ms(stream, &launching, &finished, nullptr);
    maker.join();
    result.done = !failed.load();
    return result;
}

bool touch_pages(char* begin, size_t bytes) {
    const volatile char* pages = begin;
    char sum = 0;
    for (size_t offset = 0; offset < bytes; offset += kPage) sum = static_cast<char>(sum + pages[offset]);
    return sum == 0; // fresh managed memory reads as zeros
}

bool populate_write(char* begin, size_t bytes) {
    if (madvise(begin, bytes, MADV_POPULATE_WRITE) == 0) return true;
    std::fprintf(stderr, "host_home_probe: madvise(MADV_POPULATE_WRITE) failed: errno %d\n", errno);
    return false;
}

void print_host_pages(const char* path, size_t bytes, const HostPages& pages) {
    if (!pages.done) {
        std::printf("%-*s    n/a (slowest launch call beside it %.3f ms)\n", kPathWidth, path, pages.slowest_launch_ms);
        return;
    }
    std::printf("%-*s %6.1f GB/s  (%.2f ms by %u host threads; slowest launch call beside them %.3f ms)\n", kPathWidth,
                path, gigabytes_per_second(bytes, pages.ms), pages.ms, kHostThreads, pages.slowest_launch_ms);
}

// The GB/s of a host path as JSON: null where it failed.
std::string host_rate_json(size_t bytes, const HostPages& pages) {
    if (!pages.done) return "null";
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", gigabytes_per_second(bytes, pages.ms));
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    const auto bytes_argument = bench::gib_per_buffer_argument(argc, argv, "host_home_probe");
    if (!bytes_argument) return 2;
    const size_t bytes = *bytes_argument;
    const size_t gib_per_buffer = bytes / kGiB;
    int device = 0;
    CUDA_CHECK(cudaSetDevice(device));
    // Host homes take host pages, but they are managed memory all the same: counted
    // as if the GPU had to hold them.
    if (!bench::gpu_has_room("host_home_probe", 5 * bytes + sizeof(unsigned int))) return 77;

    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    unsigned int* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&sink, sizeof(unsigned int)));

    void* faulted = host_home(bytes, device);
    const Timing first_write = write_timed(stream, faulted, bytes);
    const Timing rewrite = write_timed(stream, faulted, bytes);

    void* populated = host_home(bytes, device);
    const Timing host_populate = populate_timed(stream, populated, bytes);
    const Timing write_populated = write_timed(stream, populated, bytes);

    void* read_buffer = host_home(bytes, device);
    populate_timed(stream, read_buffer, bytes);
    const Timing read_populated = time_on_stream(stream, [&] {
        read_all<<<kWordGridBlocks, kWordBlockThreads, 0, stream>>>(static_cast<const unsigned int*>(read_buffer),
                                                             bytes / sizeof(unsigned int), sink);
        CUDA_CHECK(cudaGetLastError());
    });

    // The kernels' module loaded before any launch is timed.
    bench::empty_kernel<<<1, 1, 0, stream>>>();
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(stream));
    char* touched = static_cast<char*>(host_home(bytes, device));
    const HostPages host_touch = make_host_pages(stream, touched, bytes, touch_pages);
    const Timing write_touched = write_timed(stream, touched, bytes);
    char* madvised = static_cast<char*>(host_home(bytes, device));
    const HostPages madvise_populate = make_host_pages(stream, madvised, bytes, populate_write);

    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaFree(touched));
    CUDA_CHECK(cudaFree(madvised));
    CUDA_CHECK(cudaFree(faulted));
    CUDA_CHECK(cudaFree(populated));
    CUDA_CHECK(cudaFree(read_buffer));
    CUDA_CHECK(cudaFree(sink));
    CUDA_CHECK(cudaStreamDestroy(stream));

    std::printf("fresh host-homed managed buffers of %zu GiB each (prefer the host, mapped by device %d):\n",
                gib_per_buffer, device);
    bench::print_stream_timing("first write", kPathWidth, bytes, first_write);
    bench::print_stream_timing("rewrite", kPathWidth, bytes, rewrite);
    bench::print_stream_timing("host populate", kPathWidth, bytes, host_populate);
    bench::print_stream_timing("write populated", kPathWidth, bytes, write_populated);
    bench::print_stream_timing("read populated", kPathWidth, bytes, read_populated);
    print_host_pages("host touch", bytes, host_touch);
    bench::print_stream_timing("write touched", kPathWidth, bytes, write_touched);
    print_host_pages("populate write", bytes, madvise_populate);
    std::printf("{\"bytes\": %zu, \"first_write_gbps\": %.2f, \"rewrite_gbps\": %.2f, \"host_populate_gbps\": %.2f, "
                "\"write_populated_gbps\": %.2f, \"read_populated_gbps\": %.2f, \"host_populate_call_ms\": %.2f, "
                "\"host_touch_gbps\": %s, \"host_touch_launch_ms\": %.3f, \"write_touched_gbps\": %.2f, "
                "\"populate_write_gbps\": %s, \"populate_write_launch_ms\": %.3f}\n",
                bytes, gigabytes_per_second(bytes, first_write.gpu_ms), gigabytes_per_second(bytes, rewrite.gpu_ms),
                gigabytes_per_second(bytes, host_populate.gpu_ms),
                gigabytes_per_second(bytes, write_populated.gpu_ms),
                gigabytes_per_second(bytes, read_populated.gpu_ms), host_populate.host_call_ms,
                host_rate_json(bytes, host_touch).c_str(), host_touch.slowest_launch_ms,
                gigabytes_per_second(bytes, write_touched.gpu_ms), host_rate_json(bytes, madvise_populate).c_str(),
                madvise_populate.slowest_launch_ms);
    return 0;
}

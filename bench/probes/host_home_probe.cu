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
// Where host populate plus write populated come well under first write, making a
// host slab's pages ahead of its first writer pays, and can be done off the
// application's path.
//
// Usage: host_home_probe [GiB per buffer] (default 1, at most 2; three buffers).
// Prints one line per path and one JSON line; exit 77 when the GPU lacks the free memory.

#include "cuda_check.h"
#include "probe_args.h"
#include "probe_guard.h"
#include "probe_timing.h"
#include "stream_timing.h"
#include "word_kernels.cuh"

#include <cuda_runtime.h>

#include <cstdio>

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
    if (!bench::gpu_has_room("host_home_probe", 3 * bytes + sizeof(unsigned int))) return 77;

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

    CUDA_CHECK(cudaStreamSynchronize(stream));
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
    std::printf("{\"bytes\": %zu, \"first_write_gbps\": %.2f, \"rewrite_gbps\": %.2f, \"host_populate_gbps\": %.2f, "
                "\"write_populated_gbps\": %.2f, \"read_populated_gbps\": %.2f, \"host_populate_call_ms\": %.2f}\n",
                bytes, gigabytes_per_second(bytes, first_write.gpu_ms), gigabytes_per_second(bytes, rewrite.gpu_ms),
                gigabytes_per_second(bytes, host_populate.gpu_ms),
                gigabytes_per_second(bytes, write_populated.gpu_ms),
                gigabytes_per_second(bytes, read_populated.gpu_ms), host_populate.host_call_ms);
    return 0;
}

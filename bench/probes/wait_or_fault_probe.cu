// Data a kernel needs now is on the host: is it faster to let the kernel fault
// it in, to prefetch it and let the kernel wait for the prefetch, or to do both
// at once (the kernel faults while another thread's prefetch moves the same
// data)? The learned policy meets this choice for every chunk it did not fetch
// ahead in time. Three ways, for several sizes, each the median of 5 runs:
//   fault            the kernel reads host-resident managed memory and faults it in
//   prefetch, wait   cudaMemPrefetchAsync on a second stream, the kernel's stream
//                    waits on an event behind it (stream order, no host wait)
//   prefetch beside  another thread issues the prefetch while the kernel runs and
//                    faults, as the library's worker does
// Each time is from the moment the work is issued until the kernel has finished.
// Resident: the same kernel with the data already on the GPU (the floor).
//
// Usage: wait_or_fault_probe. Prints a table and one JSON line; exit 77 when the
// GPU lacks the free memory.

#include "cuda_check.h"
#include "probe_guard.h"
#include "probe_timing.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;
constexpr size_t kLargest = 1 * kGiB;
constexpr int kRepeats = 5;

// Reads every element, so every page is touched; the sum keeps the reads alive.
__global__ void read_all(const float* data, size_t count, float* sum) {
    float local = 0.0f;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count; i += stride)
        local += data[i];
    if (local == -1.0f) *sum = local; // never true for the zeros written below
}

struct Streams {
    cudaStream_t kernel;
    cudaStream_t copy;
    cudaMemLocation gpu;
    cudaMemLocation host;
};

void launch(const Streams& s, const float* data, size_t bytes, float* sum) {
    read_all<<<1024, 256, 0, s.kernel>>>(data, bytes / sizeof(float), sum);
    CUDA_CHECK(cudaGetLastError());
}

void place_on_host(const Streams& s, float* data, size_t bytes) {
    CUDA_CHECK(cudaMemPrefetchAsync(data, bytes, s.host, 0, s.copy));
    CUDA_CHECK(cudaStreamSynchronize(s.copy));
}

// Host time from issuing the work until the kernel's stream has finished it.
template <typename Issue>
double ms_until_kernel_done(const Streams& s, Issue issue) {
    const auto start = bench::Clock::now();
    issue();
    CUDA_CHECK(cudaStreamSynchronize(s.kernel));
    return bench::ms_since(start);
}

double resident(const Streams& s, float* data, size_t bytes, float* sum) {
    CUDA_CHECK(cudaMemPrefetchAsync(data, bytes, s.gpu, 0, s.copy));
    CUDA_CHECK(cudaStreamSynchronize(s.copy));
    return ms_until_kernel_done(s, [&] { launch(s, data, bytes, sum); });
}

double fault(const Streams& s, float* data, size_t bytes, float* sum) {
    place_on_host(s, data, bytes);
    return ms_until_kernel_done(s, [&] { launch(s, data, bytes, sum); });
}

double prefetch_and_wait(const Streams& s, float* data, size_t bytes, float* sum, cudaEvent_t done) {
    place_on_host(s, data, bytes);
    return ms_until_kernel_done(s, [&] {
        CUDA_CHECK(cudaMemPrefetchAsync(data, bytes, s.gpu, 0, s.copy));
        CUDA_CHECK(cudaEventRecord(done, s.copy));
        CUDA_CHECK(cudaStreamWaitEvent(s.kernel, done, 0));
        launch(s, data, bytes, sum);
    });
}

double prefetch_beside(const Streams& s, float* data, size_t bytes, float* sum) {
    place_on_host(s, data, bytes);
    std::thread mover;
    const double ms = ms_until_kernel_done(s, [&] {
        mover = std::thread([&] { CUDA_CHECK(cudaMemPrefetchAsync(data, bytes, s.gpu, 0, s.copy)); });
        launch(s, data, bytes, sum);
    });
    mover.join();
    CUDA_CHECK(cudaStreamSynchronize(s.copy));
    return ms;
}

} // namespace

int main(int argc, char**) {
    if (argc > 1) {
        std::fprintf(stderr, "usage: wait_or_fault_probe\n");
        return 2;
    }
    int device = 0;
    CUDA_CHECK(cudaSetDevice(device));
    if (!bench::gpu_has_room("wait_or_fault_probe", kLargest)) return 77;

    Streams s{};
    CUDA_CHECK(cudaStreamCreateWithFlags(&s.kernel, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s.copy, cudaStreamNonBlocking));
    s.gpu.type = cudaMemLocationTypeDevice;
    s.gpu.id = device;
    s.host.type = cudaMemLocationTypeHost;
    s.host.id = 0;
    cudaEvent_t done;
    CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));

    float* data = nullptr;
    float* sum = nullptr;
    CUDA_CHECK(cudaMallocManaged(&data, kLargest));
    CUDA_CHECK(cudaMalloc(&sum, sizeof(float)));
    CUDA_CHECK(cudaMemset(data, 0, kLargest));
    CUDA_CHECK(cudaDeviceSynchronize());

    std::printf("%-10s %12s %12s %16s %16s\n", "size", "resident ms", "fault ms", "prefetch,wait ms",
                "prefetch beside");
    std::string json = "{\"runs\": [";
    for (size_t bytes : {64 * kMiB, 256 * kMiB, kLargest}) {
        std::vector<double> r, f, w, b;
        for (int i = 0; i < kRepeats; ++i) {
            r.push_back(resident(s, data, bytes, sum));
            f.push_back(fault(s, data, bytes, sum));
            w.push_back(prefetch_and_wait(s, data, bytes, sum, done));
            b.push_back(prefetch_beside(s, data, bytes, sum));
        }
        const double mr = bench::median(r), mf = bench::median(f), mw = bench::median(w), mb = bench::median(b);
        std::printf("%6zu MiB %12.2f %12.2f %16.2f %16.2f\n", bytes / kMiB, mr, mf, mw, mb);
        char entry[256];
        std::snprintf(entry, sizeof entry,
                      "%s{\"bytes\": %zu, \"resident_ms\": %.3f, \"fault_ms\": %.3f, \"prefetch_wait_ms\": %.3f, "
                      "\"prefetch_beside_ms\": %.3f}",
                      bytes == 64 * kMiB ? "" : ", ", bytes, mr, mf, mw, mb);
        json += entry;
    }
    json += "]}";
    std::printf("%s\n", json.c_str());

    CUDA_CHECK(cudaFree(data));
    CUDA_CHECK(cudaFree(sum));
    CUDA_CHECK(cudaEventDestroy(done));
    CUDA_CHECK(cudaStreamDestroy(s.kernel));
    CUDA_CHECK(cudaStreamDestroy(s.copy));
    return 0;
}

// A job of two GPUs on the fake driver (run with FAKECUDA_DEVICES=2): what the
// library does on one device must be charged to that device and change nothing
// of the other's. Linked against libcuda.so.1 (the fake), so that the preloaded
// library's exported hooks take the calls. Every expectation holds with the
// library and without it, unless it says it is the library's.
//
// Usage: devices_test driver        the fake's two devices: contexts, memory, events
//        devices_test passthrough   memory the library passes through on device 1
//                                   is device 1's in cuMemGetInfo, not device 0's
//        devices_test managed       so is the application's own managed memory
//        devices_test planning      kernels on both devices under a budget each:
//                                   every move for a launch goes to the launching
//                                   device, behind that device's fence, and the
//                                   buffers hold what they would without the library
#include "check_list.h"
#include "fakecuda.h"
#include "library_api.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using namespace uvmp_integration;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr int kDevices = 2;

struct Job {
    CheckList checks;
    LibraryApi library = find_library_api();
    CUcontext contexts[kDevices] = {};

    bool on(int device) {
        const CUresult r = cuCtxSetCurrent(contexts[device]);
        checks.expect(r == CUDA_SUCCESS, "cuCtxSetCurrent(device " + std::to_string(device) + ")");
        return r == CUDA_SUCCESS;
    }

    // What cuMemGetInfo tells a job on each device (the budget's view under the library).
    void free_memory(std::uint64_t (&out)[kDevices]) {
        for (int d = 0; d < kDevices; ++d) {
            size_t free = 0, total = 0;
            out[d] = on(d) && cuMemGetInfo_v2(&free, &total) == CUDA_SUCCESS ? free : 0;
        }
    }

    // Device 1's free memory fell by `bytes` between the two readings, device 0's not at all.
    void expect_charged_to_device_1(const std::uint64_t (&before)[kDevices], const std::uint64_t (&after)[kDevices],
                                    std::uint64_t bytes, const std::string& what) {
        checks.expect_eq(what + ": device 1's free memory falls by its size", before[1] - after[1], bytes);
        checks.expect_eq(what + ": device 0's free memory does not change", before[0] - after[0], 0);
    }
};

// What the job relies on of the driver: each device has its own context, memory
// and figures, and an event is recorded only on a stream of its own context.
void driver(Job& job) {
    for (int d = 0; d < kDevices; ++d) {
        CUdevice device = -1;
        job.checks.expect(job.on(d) && cuCtxGetDevice(&device) == CUDA_SUCCESS && device == d,
                          "device " + std::to_string(d) + "'s context is current");
    }
    job.checks.expect(job.contexts[0] != job.contexts[1], "each device has a context of its own");
    CUcontext popped = nullptr;
    CUdevice device = -1;
    job.on(0);
    job.checks.expect(cuCtxPushCurrent_v2(job.contexts[1]) == CUDA_SUCCESS && cuCtxGetDevice(&device) == CUDA_SUCCESS &&
                          device == 1,
                      "cuCtxPushCurrent makes device 1's context current");
    job.checks.expect(cuCtxPopCurrent_v2(&popped) == CUDA_SUCCESS && popped == job.contexts[1] &&
                          cuCtxGetDevice(&device) == CUDA_SUCCESS && device == 0,
                      "cuCtxPopCurrent gives device 0's back");

    std::uint64_t before[kDevices], during[kDevices], after[kDevices];
    job.free_memory(before);
    job.on(1);
    CUdeviceptr block = 0;
    job.checks.expect(cuMemAlloc_v2(&block, 2 * kMiB) == CUDA_SUCCESS, "cuMemAlloc_v2 of 2 MiB on device 1");
    int ordinal = -1;
    job.checks.expect(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, block) == CUDA_SUCCESS &&
                          ordinal == 1,
                      "the allocation is device 1's");
    job.free_memory(during);
    job.expect_charged_to_device_1(before, during, 2 * kMiB, "2 MiB allocated on device 1");
    job.on(1);
    job.checks.expect(cuMemFree_v2(block) == CUDA_SUCCESS, "cuMemFree_v2");
    job.free_memory(after);
    job.expect_charged_to_device_1(before, after, 0, "once freed");

    CUstream streams[kDevices] = {};
    CUevent events[kDevices] = {};
    for (int d = 0; d < kDevices; ++d)
        job.checks.expect(job.on(d) && cuStreamCreate(&streams[d], 0) == CUDA_SUCCESS &&
                              cuEventCreate(&events[d], CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS,
                          "a stream and an event on device " + std::to_string(d));
    job.on(1);
    job.checks.expect(cuEventRecord(events[0], streams[1]) == CUDA_ERROR_INVALID_HANDLE,
                      "device 0's event cannot be recorded on device 1's stream");
    job.checks.expect(cuEventRecord(events[1], streams[1]) == CUDA_SUCCESS, "device 1's event is recorded there");
    job.on(0);
    job.checks.expect(cuStreamWaitEvent(streams[0], events[1], 0) == CUDA_SUCCESS,
                      "device 0's stream may wait for device 1's event");
    const fakecuda_device_counts c0 = fakecuda_device_counters(0);
    job.checks.expect_eq("waits on device 0 for another device's event", c0.foreign_event_waits, 1);
    job.checks.expect_eq("refused event records", fakecuda_counters().event_records_refused, 1);
    for (int d = 0; d < kDevices; ++d)
        job.checks.expect(job.on(d) && cuEventDestroy_v2(events[d]) == CUDA_SUCCESS &&
                              cuStreamDestroy_v2(streams[d]) == CUDA_SUCCESS,
                          "device " + std::to_string(d) + "'s stream and event destroyed");
}

// A stream-ordered allocation on a capturing stream is never converted (managed
// memory cannot be allocated into a capture): the driver's own memory, on the
// device whose context is current.
void passthrough(Job& job) {
    if (!job.on(1)) return;
    CUstream stream = nullptr;
    job.checks.expect(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "cuStreamCreate on device 1");
    std::uint64_t before[kDevices], during[kDevices], after[kDevices];
    job.free_memory(before);
    job.on(1);
    job.checks.expect(fakecuda_set_stream_capturing(stream, 1) == 0, "the stream captures");
    CUdeviceptr passed = 0;
    job.checks.expect(cuMemAllocAsync(&passed, 4 * kMiB, stream) == CUDA_SUCCESS,
                      "cuMemAllocAsync of 4 MiB on a capturing stream of device 1");
    job.checks.expect(fakecuda_set_stream_capturing(stream, 0) == 0, "the capture ends");
    job.free_memory(during);
    job.expect_charged_to_device_1(before, during, 4 * kMiB, "4 MiB passed through on device 1");
    job.on(1);
    job.checks.expect(cuMemFreeAsync(passed, stream) == CUDA_SUCCESS, "cuMemFreeAsync of it");
    job.free_memory(after);
    job.expect_charged_to_device_1(before, after, 0, "once freed");
    if (const auto stats = job.library.stats())
        job.checks.expect_eq("the library counts one allocation passed through for the capture",
                             stats->passthrough_capture, 1);
    job.on(1);
    job.checks.expect(cuStreamDestroy_v2(stream) == CUDA_SUCCESS, "cuStreamDestroy");
}

// The application's own managed memory is left as it is (the library neither
// converts nor moves it), but it is the job's: not free on its device.
void managed(Job& job) {
    std::uint64_t before[kDevices], during[kDevices], after[kDevices];
    job.free_memory(before);
    job.on(1);
    CUdeviceptr own = 0;
    job.checks.expect(cuMemAllocManaged(&own, 2 * kMiB, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS,
                      "cuMemAllocManaged of 2 MiB on device 1");
    job.free_memory(during);
    job.expect_charged_to_device_1(before, during, 2 * kMiB, "2 MiB of the application's managed memory on device 1");
    if (const auto stats = job.library.stats()) {
        job.checks.expect_eq("the library counts the application's managed allocation", stats->passthrough_app_managed, 1);
        job.checks.expect_eq("and converts nothing", stats->allocs_converted, 0);
    }
    job.on(1);
    job.checks.expect(cuMemFree_v2(own) == CUDA_SUCCESS, "cuMemFree_v2 of it");
    job.free_memory(after);
    job.expect_charged_to_device_1(before, after, 0, "once freed");
    job.checks.expect_eq("nothing was moved", fakecuda_counters().prefetch_calls, 0);
}

// Kernels on both devices under a budget a device (16 MiB and 8 MiB, footprints
// of twice that), one of device 1's kernels naming a buffer of device 0 as well,
// as a kernel may read a peer's memory. Sets and copies between the launches
// give the buffers contents that the library must not change.
constexpr int kBuffers = 4;
constexpr std::uint64_t kBufferBytes[kDevices] = {8 * kMiB, 4 * kMiB};
constexpr std::size_t kWords = 4096; // of each buffer, set and copied
constexpr int kIterations = 12;

// What the sets and copies leave in the words of each buffer, worked out on the host.
struct Contents {
    std::vector<std::uint32_t> words[kDevices][kBuffers];

    Contents() {
        for (auto& device : words)
            for (auto& buffer : device) buffer.assign(kWords, 0);
    }
};

std::uint32_t fill_value(int iteration, int device, int buffer) {
    return static_cast<std::uint32_t>(iteration * 1000 + device * 100 + buffer);
}

std::uint64_t checksum(const std::vector<std::uint32_t>& words, std::uint64_t hash) {
    for (std::uint32_t w : words) hash = (hash ^ w) * 1099511628211ull; // FNV-1a over words
    return hash;
}

void planning(Job& job) {
    CUdeviceptr buffers[kDevices][kBuffers] = {};
    CUstream streams[kDevices] = {};
    for (int d = 0; d < kDevices; ++d) {
        if (!job.on(d)) return;
        job.checks.expect(cuStreamCreate(&streams[d], CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS,
                          "a stream on device " + std::to_string(d));
        for (auto& buffer : buffers[d])
            job.checks.expect(cuMemAlloc_v2(&buffer, kBufferBytes[d]) == CUDA_SUCCESS,
                              "cuMemAlloc_v2 on device " + std::to_string(d));
    }
    const std::size_t offsets[] = {0, 8, 16};
    const std::size_t sizes[] = {8, 8, 8};
    const CUfunction pair = fakecuda_make_function("pair", 2, offsets, sizes);
    const CUfunction peer = fakecuda_make_function("peer", 3, offsets, sizes);
    if (job.checks.failures() != 0 || !pair || !peer) return;

    Contents expected;
    std::uint64_t launches[kDevices] = {};
    for (int t = 0; t < kIterations; ++t) {
        for (int d = 0; d < kDevices; ++d) {
            job.on(d);
            for (int b = 0; b < kBuffers; ++b) {
                CUdeviceptr x = buffers[d][b], y = buffers[d][(b + 1) % kBuffers], from_peer = buffers[0][0];
                const std::uint32_t value = fill_value(t, d, b);
                job.checks.expect(cuMemsetD32Async(x, value, kWords, streams[d]) == CUDA_SUCCESS, "cuMemsetD32Async");
                std::fill(expected.words[d][b].begin(), expected.words[d][b].end(), value);
                // Device 1's first kernel names device 0's first buffer before its own.
                const bool names_peer = d == 1 && b == 0;
                void* pair_args[] = {&x, &y};
                void* peer_args[] = {&from_peer, &x, &y};
                job.checks.expect(cuLaunchKernel(names_peer ? peer : pair, 1, 1, 1, 32, 1, 1, 0, streams[d],
                                                 names_peer ? peer_args : pair_args, nullptr) == CUDA_SUCCESS,
                                  "launch on device " + std::to_string(d));
                ++launches[d];
                // Half of x into the second half of y.
                const std::size_t half = kWords / 2 * sizeof(std::uint32_t);
                job.checks.expect(cuMemcpyDtoDAsync_v2(y + half, x, half, streams[d]) == CUDA_SUCCESS,
                                  "cuMemcpyDtoDAsync");
                auto& to = expected.words[d][(b + 1) % kBuffers];
                std::copy_n(expected.words[d][b].begin(), kWords / 2, to.begin() + kWords / 2);
            }
        }
        if (job.library.mark_iteration) job.library.mark_iteration();
        // Time for the worker to plan and the mover to move: the application and
        // the GPU are far apart in a real job, and the fake's GPU is never behind.
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));

    // The fake's memory is host memory: the buffers read back as they are.
    std::uint64_t got = 14695981039346656037ull, want = got;
    for (int d = 0; d < kDevices; ++d)
        for (int b = 0; b < kBuffers; ++b) {
            const auto* words = reinterpret_cast<const std::uint32_t*>(buffers[d][b]);
            got = checksum(std::vector<std::uint32_t>(words, words + kWords), got);
            want = checksum(expected.words[d][b], want);
        }
    job.checks.expect_eq("the buffers' contents", got, want);
    std::printf("checksum %016llx\n", static_cast<unsigned long long>(got));

    for (int d = 0; d < kDevices; ++d)
        job.checks.expect_eq("launches reaching device " + std::to_string(d),
                             fakecuda_device_counters(d).launches, launches[d]);
    if (job.library.present()) {
        const fakecuda_counts c = fakecuda_counters();
        job.checks.expect_eq("fences recorded on another context's stream (refused)", c.event_records_refused, 0);
        job.checks.expect_eq("moves issued on another device's stream or behind its fence", c.moves_across_devices, 0);
        for (int d = 0; d < kDevices; ++d) {
            const fakecuda_device_counts dc = fakecuda_device_counters(d);
            const std::string device = "device " + std::to_string(d);
            job.checks.expect(dc.stream_waits > 0, device + ": moves waited for launches' fences (" +
                                                       std::to_string(dc.stream_waits) + " waits)");
            job.checks.expect_eq(device + ": waits for another device's fence", dc.foreign_event_waits, 0);
            job.checks.expect(dc.prefetch_bytes > 0,
                              device + ": data moved to it (" + std::to_string(dc.prefetch_bytes) + " bytes)");
            job.checks.expect(dc.prefetch_to_host_bytes > 0, device + ": its data evicted to make room (" +
                                                                 std::to_string(dc.prefetch_to_host_bytes) + " bytes)");
        }
    }
    for (int d = 0; d < kDevices; ++d) {
        job.on(d);
        for (CUdeviceptr buffer : buffers[d]) job.checks.expect(cuMemFree_v2(buffer) == CUDA_SUCCESS, "cuMemFree_v2");
        job.checks.expect(cuStreamDestroy_v2(streams[d]) == CUDA_SUCCESS, "cuStreamDestroy");
    }
}

} // namespace

int main(int argc, char** argv) {
    const std::string mode = argc == 2 ? argv[1] : "";
    void (*scenario)(Job&) = mode == "driver"        ? driver
                             : mode == "passthrough" ? passthrough
                             : mode == "managed"     ? managed
                             : mode == "planning"    ? planning
                                                     : nullptr;
    if (!scenario) {
        std::fprintf(stderr, "usage: devices_test driver|passthrough|managed|planning\n");
        return 2;
    }
    Job job;
    if (cuInit(0) != CUDA_SUCCESS) {
        job.checks.expect(false, "cuInit");
        return job.checks.exit_status();
    }
    int count = 0;
    job.checks.expect(cuDeviceGetCount(&count) == CUDA_SUCCESS && count == kDevices,
                      "the driver has two devices (FAKECUDA_DEVICES=2)");
    for (int d = 0; d < kDevices && count == kDevices; ++d) {
        CUdevice device = 0;
        job.checks.expect(cuDeviceGet(&device, d) == CUDA_SUCCESS && cuDevicePrimaryCtxRetain(&job.contexts[d], device) == CUDA_SUCCESS,
                          "device " + std::to_string(d) + "'s primary context");
    }
    if (job.checks.failures() == 0) scenario(job);
    return job.checks.exit_status();
}

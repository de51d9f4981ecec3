// Host homes learned from an earlier run's trace (UVMP_HOST_HOMES), on the fake
// driver. The program runs a few steps that allocate the same sequence each
// step: weights W made once, and per step A, B, C, D of 8 MiB. Streaming
// kernels alone name A and C (fill A, copy A into C); a GEMM-like kernel names
// W, B and D. Under a 16 MiB budget the step's 40 MiB must shrink: A and C, whose
// readers stream them, are the ones to live on the host.
//
//   host_homes_test record          run the steps (preloaded with UVMP_TRACE_OUT: the first run)
//   host_homes_test time IN OUT     give IN's launches durations as a GPU would time them
//                                   (the fake times nothing): the streaming kernels move their
//                                   bytes at 2 TB/s, the GEMM at 0.1 TB/s; written to OUT
//   host_homes_test run on|off|none run the steps and check where each allocation lives: on,
//                                   A and C from host slabs advised to the host and accessed by
//                                   the device, never prefetched; off or none (no library), all
//                                   from GPU slabs or the driver. The results are the same in
//                                   every case (a "results" line prints a hash of them).
// Linked against libcuda.so.1 (the fake), so that the preloaded library's hooks take the calls.
#include "check_list.h"
#include "fakecuda.h"
#include "library_api.h"

#include "core/trace/format/reader.h"
#include "core/trace/format/writer.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using namespace uvmp_integration;

namespace {

constexpr size_t kMiB = 1u << 20;
constexpr size_t kBuffer = 8 * kMiB;
constexpr int kSteps = 4;

struct Kernels {
    CUfunction fill = nullptr;   // fill(x): writes x
    CUfunction copy = nullptr;   // copy(dst, src)
    CUfunction gemm = nullptr;   // gemm(w, b, d)
    CUfunction init = nullptr;   // init(w), before the steps
};

Kernels make_kernels() {
    const size_t offsets[] = {0, 8, 16};
    const size_t sizes[] = {8, 8, 8};
    Kernels k;
    k.fill = fakecuda_make_function("stream_fill", 1, offsets, sizes);
    k.copy = fakecuda_make_function("stream_copy", 2, offsets, sizes);
    k.gemm = fakecuda_make_function("gemm", 3, offsets, sizes);
    k.init = fakecuda_make_function("init", 1, offsets, sizes);
    return k;
}

bool launch(CUfunction f, std::vector<CUdeviceptr*> args) {
    std::vector<void*> params(args.begin(), args.end());
    return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params.data(), nullptr) == CUDA_SUCCESS;
}

// The fake's device memory is host memory: the test reads it as it is.
uint64_t sum_words(CUdeviceptr p, size_t bytes) {
    const auto* words = reinterpret_cast<const uint32_t*>(static_cast<uintptr_t>(p));
    uint64_t sum = 0;
    for (size_t i = 0; i < bytes / sizeof(uint32_t); ++i) sum += words[i];
    return sum;
}

bool advised_to_host(CUdeviceptr p) {
    fakecuda_managed_record r{};
    return fakecuda_managed_record_of(p, &r) == 0 && r.preferred_location_type == CU_MEM_LOCATION_TYPE_HOST &&
           r.accessed_by_device == 0;
}

bool never_advised(CUdeviceptr p) {
    fakecuda_managed_record r{};
    // Passed through (no library): not managed at all.
    if (fakecuda_managed_record_of(p, &r) != 0) return true;
    return r.preferred_location_type == -1 && r.accessed_by_device == -1 && r.advice_calls == 0;
}

uint64_t prefetched(CUdeviceptr p) {
    fakecuda_managed_record r{};
    return fakecuda_managed_record_of(p, &r) == 0 ? r.prefetch_bytes : 0;
}

int time_trace(const char* in, const char* out) {
    uvmp::trace::Trace trace = uvmp::trace::read_trace_file(in);
    std::vector<uint64_t> size_of(1, 0);
    for (const auto& a : trace.allocs) {
        if (a.id >= size_of.size()) size_of.resize(a.id + 1, 0);
        size_of[a.id] = a.size;
    }
    for (auto& launch : trace.launches) {
        uint64_t bytes = 0;
        for (const auto& access : trace.accesses_of(launch))
            bytes += access.alloc_id < size_of.size() ? size_of[access.alloc_id] : 0;
        const std::string& name = trace.kernel_names.at(launch.kernel_id);
        // Bytes per nanosecond are GB/s.
        const uint64_t gbps = name.rfind("stream_", 0) == 0 ? 2000 : name == "gemm" ? 100 : 0;
        launch.duration_ns = gbps ? bytes / gbps : 500;
    }
    uvmp::trace::write_trace_file(trace, out);
    std::printf("timed %zu launches into %s\n", trace.launches.size(), out);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "time" && argc == 4) return time_trace(argv[2], argv[3]);
    const std::string homes = argc > 2 ? argv[2] : "";
    if (mode != "record" && !(mode == "run" && (homes == "on" || homes == "off" || homes == "none"))) {
        std::fprintf(stderr, "usage: host_homes_test record | time IN OUT | run on|off|none\n");
        return 2;
    }
    CheckList checks;
    const LibraryApi api = find_library_api();
    if (cuInit(0) != CUDA_SUCCESS) {
        checks.expect(false, "cuInit");
        return checks.exit_status();
    }
    const Kernels k = make_kernels();
    CUmemoryPool pool = nullptr;
    checks.expect(cuDeviceGetDefaultMemPool(&pool, 0) == CUDA_SUCCESS, "the device's default pool");

    CUdeviceptr w = 0;
    checks.expect(cuMemAlloc_v2(&w, kBuffer) == CUDA_SUCCESS, "cuMemAlloc W");
    checks.expect(launch(k.init, {&w}), "launch init(W)");
    if (api.mark_iteration) api.mark_iteration();

    uint64_t host_slab_prefetches = 0, gpu_slab_prefetches = 0;
    uint64_t results = 0; // of every step's buffers, for tests that hold two runs' results equal
    for (int step = 0; step < kSteps; ++step) {
        const std::string at = "step " + std::to_string(step) + ": ";
        CUdeviceptr a = 0, b = 0, c = 0, d = 0;
        for (CUdeviceptr* p : {&a, &b, &c, &d})
            checks.expect(cuMemAllocAsync(p, kBuffer, nullptr) == CUDA_SUCCESS, at + "cuMemAllocAsync");
        cuuint64_t used = 0;
        checks.expect(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) == CUDA_SUCCESS,
                      at + "the pool's used bytes");
        // Wherever the library put them, the application allocated four buffers.
        checks.expect_eq(at + "the pool reports what was allocated", used, 4 * kBuffer);

        const auto value = static_cast<unsigned>(0x01010101u * static_cast<unsigned>(step + 1));
        checks.expect(cuMemsetD32Async(a, value, kBuffer / 4, nullptr) == CUDA_SUCCESS, at + "set A");
        checks.expect(launch(k.fill, {&a}), at + "launch fill(A)");
        checks.expect(cuMemsetD32Async(b, 2, kBuffer / 4, nullptr) == CUDA_SUCCESS, at + "set B");
        checks.expect(launch(k.gemm, {&w, &b, &d}), at + "launch gemm(W, B, D)");
        checks.expect(cuMemcpyDtoDAsync_v2(c, a, kBuffer, nullptr) == CUDA_SUCCESS, at + "copy A into C");
        checks.expect(launch(k.copy, {&c, &a}), at + "launch copy(C, A)");
        checks.expect(cuMemcpyDtoDAsync_v2(d, b, kBuffer, nullptr) == CUDA_SUCCESS, at + "copy B into D");
        checks.expect(launch(k.gemm, {&w, &b, &d}), at + "launch gemm(W, B, D)");
        checks.expect(cuStreamSynchronize(nullptr) == CUDA_SUCCESS, at + "cuStreamSynchronize");
        const uint64_t sum_c = sum_words(c, kBuffer), sum_d = sum_words(d, kBuffer);
        checks.expect_eq(at + "sum of C", sum_c, uint64_t{value} * (kBuffer / 4));
        checks.expect_eq(at + "sum of D", sum_d, 2 * (kBuffer / 4));
        results = (results * 31 + sum_c) * 31 + sum_d;

        if (mode == "run" && homes == "on") {
            checks.expect(advised_to_host(a), at + "A lives in a host slab, accessed by the device");
            checks.expect(advised_to_host(c), at + "C lives in a host slab, accessed by the device");
            checks.expect(never_advised(b) && never_advised(d), at + "B and D live in GPU slabs");
        } else if (mode == "run") {
            for (CUdeviceptr p : {a, b, c, d}) checks.expect(never_advised(p), at + "no allocation advised");
        }
        // Give the planner's moves time to reach the driver before the blocks go.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        host_slab_prefetches += prefetched(a) + prefetched(c);
        gpu_slab_prefetches += prefetched(b);
        for (CUdeviceptr p : {a, b, c, d})
            checks.expect(cuMemFreeAsync(p, nullptr) == CUDA_SUCCESS, at + "cuMemFreeAsync");
        checks.expect(cuStreamSynchronize(nullptr) == CUDA_SUCCESS, at + "cuStreamSynchronize");
        if (api.mark_iteration) api.mark_iteration();
    }
    checks.expect(never_advised(w), "W lives in a GPU slab");

    if (mode == "run" && homes == "on") {
        checks.expect_eq("bytes prefetched in host slabs (never, by anyone)", host_slab_prefetches, 0);
        checks.expect(gpu_slab_prefetches > 0, "the planner did move GPU-homed blocks");
        const auto stats = api.stats();
        checks.expect(stats.has_value(), "the library's counters");
        if (stats) {
            checks.expect_eq("host-homed allocations", stats->host_allocs, 2 * kSteps);
            checks.expect_eq("host-homed bytes", stats->host_bytes_allocated, 2 * kSteps * kBuffer);
            checks.expect_eq("host-homed blocks live", stats->host_blocks_live, 0);
            checks.expect(stats->host_slabs_created > 0, "host slabs made");
            // Each step fill(A) writes A, copy(C, A) writes C and reads A: one trip of each a launch.
            checks.expect_eq("host-homed bytes kernels named to write", stats->remote_write_bytes_named,
                             2 * kSteps * kBuffer);
            checks.expect_eq("host-homed bytes kernels named to read", stats->remote_read_bytes_named, kSteps * kBuffer);
        }
    } else if (mode == "run" && homes == "off") {
        const auto stats = api.stats();
        checks.expect(stats && stats->host_allocs == 0 && stats->host_slabs_created == 0 &&
                          stats->remote_write_bytes_named == 0 && stats->remote_read_bytes_named == 0,
                      "nothing homed on the host, nor named there");
    }
    checks.expect(cuMemFree_v2(w) == CUDA_SUCCESS, "cuMemFree W");
    std::printf("results %016llx\n", static_cast<unsigned long long>(results));
    return checks.exit_status();
}

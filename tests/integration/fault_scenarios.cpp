#include "fault_scenarios.h"

#include "fakecuda.h"
#include "robustness_support.h"

#include <chrono>
#include <thread>
#include <vector>

namespace uvmp_integration {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr unsigned kPointers = 8;

// Makes `which` call of `name` fail (0: every call) until switched off.
void fail(const char* name, uint64_t which, CUresult result) { fakecuda_fail_calls(name, which, result); }
void stop_failing(const char* name) { fakecuda_fail_calls(name, 0, CUDA_SUCCESS); }

size_t reported_free() {
    size_t free_bytes = 0, total_bytes = 0;
    return cuMemGetInfo(&free_bytes, &total_bytes) == CUDA_SUCCESS ? free_bytes : 0;
}

void run_own_calls(CheckList& checks) {
    const LibraryApi api = find_library_api();
    checks.expect(cuInit(0) == CUDA_SUCCESS, "cuInit");
    // First, while the library has no slab yet: it is refused one, and the
    // allocation falls back on the application's own call, which fails.
    fail("cuMemAllocManaged", 0, CUDA_ERROR_OUT_OF_MEMORY);
    fail("cuMemAlloc_v2", 1, CUDA_ERROR_ECC_UNCORRECTABLE);
    CUdeviceptr refused = 0;
    expect_result(checks, "cuMemAlloc", cuMemAlloc(&refused, kMiB), CUDA_ERROR_ECC_UNCORRECTABLE);
    fail("cuMemAllocAsync", 1, CUDA_ERROR_ILLEGAL_ADDRESS);
    expect_result(checks, "cuMemAllocAsync", cuMemAllocAsync(&refused, kMiB, nullptr), CUDA_ERROR_ILLEGAL_ADDRESS);
    stop_failing("cuMemAllocManaged");

    std::vector<CUdeviceptr> memory(2);
    checks.expect(cuMemAlloc(&memory[0], kMiB) == CUDA_SUCCESS && cuMemAlloc(&memory[1], kMiB) == CUDA_SUCCESS,
                  "allocations succeed once the driver allows");
    CUfunction kernel = make_pointer_kernel("fault_kernel", kPointers);
    fail("cuLaunchKernel", 1, CUDA_ERROR_LAUNCH_FAILED);
    expect_result(checks, "cuLaunchKernel", launch_over(kernel, kPointers, memory), CUDA_ERROR_LAUNCH_FAILED);
    expect_result(checks, "the next cuLaunchKernel", launch_over(kernel, kPointers, memory), CUDA_SUCCESS);
    std::vector<void*> params(kPointers, &memory[0]);
    fail("cuLaunchKernel_ptsz", 1, CUDA_ERROR_ILLEGAL_ADDRESS);
    expect_result(checks, "cuLaunchKernel_ptsz",
                  cuLaunchKernel_ptsz(kernel, 1, 1, 1, 32, 1, 1, 0, nullptr, params.data(), nullptr),
                  CUDA_ERROR_ILLEGAL_ADDRESS);
    CUlaunchConfig config{};
    config.gridDimX = config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = config.blockDimY = config.blockDimZ = 1;
    fail("cuLaunchKernelEx", 1, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    expect_result(checks, "cuLaunchKernelEx", cuLaunchKernelEx(&config, kernel, params.data(), nullptr),
                  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    expect_result(checks, "the next cuLaunchKernelEx", cuLaunchKernelEx(&config, kernel, params.data(), nullptr),
                  CUDA_SUCCESS);

    void* host = nullptr;
    checks.expect(cuMemAllocHost(&host, 4096) == CUDA_SUCCESS, "cuMemAllocHost");
    fail("cuMemFreeHost", 1, CUDA_ERROR_INVALID_CONTEXT);
    expect_result(checks, "cuMemFreeHost", cuMemFreeHost(host), CUDA_ERROR_INVALID_CONTEXT);
    expect_result(checks, "cuMemFreeHost again", cuMemFreeHost(host), CUDA_SUCCESS);

    for (CUdeviceptr p : memory) expect_result(checks, "cuMemFree", cuMemFree(p), CUDA_SUCCESS);
    checks.expect_eq("device bytes the driver holds at the end", fakecuda_counters().live_device_bytes, 0);
    if (api.present()) {
        const uvmp_stats s = library_stats(api);
        checks.expect_eq("converted bytes live", s.bytes_converted_live, 0);
        checks.expect_eq("frees of converted allocations", s.frees_converted, s.allocs_converted);
    }
}

void run_frees(CheckList& checks) {
    const LibraryApi api = find_library_api();
    checks.expect(cuInit(0) == CUDA_SUCCESS, "cuInit");
    CUstream stream = nullptr;
    checks.expect(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "a stream");
    const size_t free_at_start = reported_free();
    auto live = [&] { return library_stats(api).bytes_converted_live; };

    if (api.present()) {
        // Converted, plain: the synchronisation cuMemFree owes fails, as it would
        // in the driver's own cuMemFree.
        CUdeviceptr a = 0;
        checks.expect(cuMemAlloc(&a, kMiB) == CUDA_SUCCESS, "a converted allocation");
        fail("cuCtxSynchronize", 1, CUDA_ERROR_ILLEGAL_ADDRESS);
        expect_result(checks, "cuMemFree whose synchronisation fails", cuMemFree(a), CUDA_ERROR_ILLEGAL_ADDRESS);
        checks.expect_eq("converted bytes still live after the failed free", live(), kMiB);
        expect_result(checks, "cuMemFree again", cuMemFree(a), CUDA_SUCCESS);
        checks.expect_eq("converted bytes live after it", live(), 0);

        // Converted, stream-ordered: the library's own event cannot be recorded;
        // it waits for the stream instead, and the free succeeds.
        CUdeviceptr b = 0;
        checks.expect(cuMemAllocAsync(&b, kMiB, stream) == CUDA_SUCCESS, "a converted stream-ordered allocation");
        fail("cuEventRecord", 0, CUDA_ERROR_ILLEGAL_ADDRESS);
        expect_result(checks, "cuMemFreeAsync while events cannot be recorded", cuMemFreeAsync(b, stream),
                      CUDA_SUCCESS);
        stop_failing("cuEventRecord");
        checks.expect_eq("converted bytes live after it", live(), 0);

        // Converted, stream-ordered, no event to be had and the wait for the
        // stream fails: that is the application's stream failing.
        CUdeviceptr c = 0;
        checks.expect(cuMemAllocAsync(&c, kMiB, stream) == CUDA_SUCCESS, "a converted stream-ordered allocation");
        fail("cuEventCreate", 0, CUDA_ERROR_OUT_OF_MEMORY);
        fail("cuStreamSynchronize", 1, CUDA_ERROR_ILLEGAL_ADDRESS);
        expect_result(checks, "cuMemFreeAsync whose stream fails", cuMemFreeAsync(c, stream),
                      CUDA_ERROR_ILLEGAL_ADDRESS);
        stop_failing("cuEventCreate");
        checks.expect_eq("converted bytes still live after the failed free", live(), kMiB);
        expect_result(checks, "cuMemFreeAsync again", cuMemFreeAsync(c, stream), CUDA_SUCCESS);
        checks.expect_eq("converted bytes live after it", live(), 0);
    }

    // Passed through (larger than a slab, and the driver refuses the slab): the
    // driver's free fails, and the memory stays counted until a free succeeds.
    fail("cuMemAllocManaged", 0, CUDA_ERROR_OUT_OF_MEMORY);
    CUdeviceptr d = 0;
    checks.expect(cuMemAlloc(&d, 16 * kMiB) == CUDA_SUCCESS, "a passed-through allocation");
    const size_t free_with_d = reported_free();
    checks.expect(free_with_d + 16 * kMiB <= free_at_start, "the passed-through allocation is counted");
    fail("cuMemFree_v2", 1, CUDA_ERROR_ILLEGAL_ADDRESS);
    expect_result(checks, "cuMemFree of it", cuMemFree(d), CUDA_ERROR_ILLEGAL_ADDRESS);
    checks.expect_eq("free memory reported after the failed free", reported_free(), free_with_d);
    expect_result(checks, "cuMemFree again", cuMemFree(d), CUDA_SUCCESS);
    checks.expect_eq("free memory reported after it", reported_free(), free_at_start);

    CUdeviceptr e = 0;
    checks.expect(cuMemAllocAsync(&e, 16 * kMiB, stream) == CUDA_SUCCESS, "a passed-through stream-ordered allocation");
    const size_t free_with_e = reported_free();
    fail("cuMemFreeAsync", 1, CUDA_ERROR_ILLEGAL_ADDRESS);
    expect_result(checks, "cuMemFreeAsync of it", cuMemFreeAsync(e, stream), CUDA_ERROR_ILLEGAL_ADDRESS);
    checks.expect_eq("free memory reported after the failed free", reported_free(), free_with_e);
    expect_result(checks, "cuMemFreeAsync again", cuMemFreeAsync(e, stream), CUDA_SUCCESS);
    checks.expect(cuStreamSynchronize(stream) == CUDA_SUCCESS, "the stream synchronises");
    checks.expect_eq("free memory reported after it", reported_free(), free_at_start);
    stop_failing("cuMemAllocManaged");

    checks.expect_eq("device bytes the driver holds at the end", fakecuda_counters().live_device_bytes, 0);
    if (api.present()) {
        const uvmp_stats s = library_stats(api);
        checks.expect_eq("frees of converted allocations", s.frees_converted, s.allocs_converted);
        checks.expect_eq("allocations passed through", s.allocs_passed_through, 2);
    }
    checks.expect(cuStreamDestroy(stream) == CUDA_SUCCESS, "the stream is destroyed");
}

// Allocations, launches and frees that make the library use every call of its
// own: slabs, population and moves under a small budget, fences on launches,
// events at stream-ordered frees, queries of them when another stream wants
// their memory, and waits for them when the pool is trimmed.
void run_library_calls(const std::string& failing, CheckList& checks) {
    const LibraryApi api = find_library_api();
    checks.expect(api.present(), "the library is preloaded");
    checks.expect(cuInit(0) == CUDA_SUCCESS, "cuInit");
    // Streams the application need not make (the library's own may fail to be made).
    CUstream first = CU_STREAM_LEGACY, second = CU_STREAM_PER_THREAD;
    CUfunction kernel = make_pointer_kernel("fault_kernel", kPointers);
    bool ok = true;
    auto call = [&](CUresult r) { ok = ok && r == CUDA_SUCCESS; };

    std::vector<CUdeviceptr> plain(8), ordered(4);
    for (CUdeviceptr& p : plain) call(cuMemAlloc(&p, kMiB));
    for (CUdeviceptr& p : ordered) call(cuMemAllocAsync(&p, kMiB, first));
    std::vector<CUdeviceptr> all = plain;
    all.insert(all.end(), ordered.begin(), ordered.end());
    for (int i = 0; i < 300; ++i) {
        std::vector<CUdeviceptr> some(all.begin() + (i % 6), all.begin() + (i % 6) + 6);
        call(launch_over(kernel, kPointers, some, first));
        if (i % 30 == 29 && api.mark_iteration) api.mark_iteration();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));

    // Frees pending on their fences; then the other stream asks for memory.
    fakecuda_hold_events(1);
    for (CUdeviceptr p : ordered) call(cuMemFreeAsync(p, first));
    for (CUdeviceptr& p : ordered) call(cuMemAllocAsync(&p, kMiB, second));
    fakecuda_hold_events(0);
    for (CUdeviceptr p : ordered) call(cuMemFreeAsync(p, second));
    for (CUdeviceptr p : plain) call(cuMemFree(p));
    // A trim waits for the fences of frees still pending.
    fakecuda_hold_events(1);
    CUdeviceptr last = 0;
    call(cuMemAllocAsync(&last, kMiB, first));
    call(cuMemFreeAsync(last, first));
    CUmemoryPool pool = nullptr;
    call(cuDeviceGetDefaultMemPool(&pool, 0));
    call(cuMemPoolTrimTo(pool, 0));
    fakecuda_hold_events(0);
    call(cuStreamSynchronize(first));
    call(cuStreamSynchronize(second));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));

    checks.expect(ok, "every call of the application succeeded");
    checks.expect(fakecuda_calls_failed(failing.c_str()) > 0, "the library met the failing " + failing);
    const uvmp_stats s = library_stats(api);
    checks.expect_eq("converted bytes live", s.bytes_converted_live, 0);
    checks.expect_eq("frees of converted allocations", s.frees_converted, s.allocs_converted);
    checks.expect_eq("allocations converted or passed through", s.allocs_converted + s.allocs_passed_through, 17);
    checks.expect_eq("device bytes the driver holds at the end", fakecuda_counters().live_device_bytes, 0);
}

}  // namespace

bool is_fault_mode(const std::string& mode) { return mode == "own" || mode == "frees" || mode == "library"; }

void run_fault_scenario(const std::string& mode, const std::string& failing, CheckList& checks) {
    if (mode == "own") {
        run_own_calls(checks);
    } else if (mode == "frees") {
        run_frees(checks);
    } else {
        run_library_calls(failing, checks);
    }
}

}  // namespace uvmp_integration

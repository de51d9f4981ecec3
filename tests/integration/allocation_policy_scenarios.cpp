#include "allocation_policy_scenarios.h"

#include "library_api.h"

#include <cstdlib>
#include <string>

namespace uvmp_integration {

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;

std::string result_text(CUresult result) { return std::to_string(static_cast<int>(result)); }

bool initialise(const DriverEntryPoints& driver, CheckList& checks) {
    const CUresult init = driver.init(0);
    checks.expect(init == CUDA_SUCCESS, "cuInit returned " + result_text(init));
    return init == CUDA_SUCCESS;
}

}  // namespace

void run_guard_scenario(const DriverEntryPoints& driver, const FakeDriverHelpers& fake,
                        bool refused, CheckList& checks) {
    if (!initialise(driver, checks)) return;

    CUdeviceptr big = 0;
    const CUresult result = driver.mem_alloc(&big, 2 * kGiB);
    const fakecuda_counts c = fake.counters();
    const auto stats = find_library_api().stats();
    checks.expect(stats.has_value(), "uvmp_get_stats is found and succeeds");
    if (refused) {
        checks.expect(result == CUDA_ERROR_OUT_OF_MEMORY,
                      "cuMemAlloc_v2(2 GiB) over a 1 GiB guard is CUDA_ERROR_OUT_OF_MEMORY: got " +
                          result_text(result));
        checks.expect_eq("driver cuMemAllocManaged calls", c.mem_alloc_managed, 0);
        checks.expect_eq("driver cuMemAlloc_v2 calls", c.mem_alloc, 0);
        if (stats) {
            checks.expect_eq("stats.guard_refusals", stats->guard_refusals, 1);
            checks.expect_eq("stats.guard_limit_bytes", stats->guard_limit_bytes, 1 * kGiB);
            checks.expect_eq("stats.allocs_converted", stats->allocs_converted, 0);
        }
    } else {
        checks.expect(result == CUDA_SUCCESS,
                      "cuMemAlloc_v2(2 GiB) with physical oversubscription allowed returned " +
                          result_text(result));
        checks.expect_eq("driver cuMemAllocManaged calls", c.mem_alloc_managed, 1);
        if (stats) {
            checks.expect_eq("stats.guard_refusals", stats->guard_refusals, 0);
            checks.expect_eq("stats.allocs_converted", stats->allocs_converted, 1);
        }
    }
    if (result == CUDA_SUCCESS) {
        const CUresult freed = driver.mem_free(big);
        checks.expect(freed == CUDA_SUCCESS, "cuMemFree_v2(2 GiB) returned " + result_text(freed));
    }
}

void run_capture_scenario(const DriverEntryPoints& driver, const FakeDriverHelpers& fake,
                          CheckList& checks) {
    if (!initialise(driver, checks)) return;
    CUstream stream = nullptr;
    checks.expect(driver.stream_create(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS,
                  "cuStreamCreate");
    checks.expect(fake.set_stream_capturing(stream, 1) == 0, "the stream starts capturing");

    CUdeviceptr captured = 0;
    const CUresult during = driver.mem_alloc_async(&captured, 1 * kMiB, stream);
    checks.expect(during == CUDA_SUCCESS,
                  "cuMemAllocAsync during capture returned " + result_text(during));
    const fakecuda_counts in_capture = fake.counters();
    checks.expect_eq("driver cuMemAllocAsync calls during capture", in_capture.mem_alloc_async, 1);
    checks.expect_eq("driver cuMemAllocManaged calls during capture",
                     in_capture.mem_alloc_managed, 0);

    checks.expect(fake.set_stream_capturing(stream, 0) == 0, "the capture ends");
    CUdeviceptr after = 0;
    const CUresult later = driver.mem_alloc_async(&after, 1 * kMiB, stream);
    checks.expect(later == CUDA_SUCCESS,
                  "cuMemAllocAsync after capture returned " + result_text(later));
    checks.expect_eq("driver cuMemAllocManaged calls after capture",
                     fake.counters().mem_alloc_managed, 1);

    // A kernel launched into the capture runs only when the graph does: a policy
    // must not plan it (nor record its fence into the application's graph).
    const size_t offsets[] = {0};
    const size_t sizes[] = {8};
    CUfunction kernel = fake.make_function("_Z6kernelPf", 1, offsets, sizes);
    checks.expect(fake.set_stream_capturing(stream, 1) == 0, "the stream captures again");
    void* params[] = {&after};
    const bool launcher = !driver.launchers.empty() && driver.launchers.front().launch_kernel;
    checks.expect(launcher && driver.launchers.front().launch_kernel(kernel, 1, 1, 1, 32, 1, 1, 0, stream, params,
                                                                     nullptr) == CUDA_SUCCESS,
                  "cuLaunchKernel during capture");
    checks.expect(fake.set_stream_capturing(stream, 0) == 0, "the second capture ends");

    const auto stats = find_library_api().stats();
    checks.expect(stats.has_value(), "uvmp_get_stats is found and succeeds");
    if (stats) {
        checks.expect_eq("stats.passthrough_capture", stats->passthrough_capture, 1);
        checks.expect_eq("stats.allocs_converted", stats->allocs_converted, 1);
        checks.expect_eq("stats.launches_with_access", stats->launches_with_access, library_reads_accesses(*stats) ? 1 : 0);
        checks.expect_eq("stats.launches_captured", stats->launches_captured, plans_launches(*stats) ? 1 : 0);
    }
    if (during == CUDA_SUCCESS)
        checks.expect(driver.mem_free_async(captured, stream) == CUDA_SUCCESS,
                      "cuMemFreeAsync of the captured allocation");
    if (later == CUDA_SUCCESS)
        checks.expect(driver.mem_free_async(after, stream) == CUDA_SUCCESS,
                      "cuMemFreeAsync of the converted allocation");
    checks.expect(driver.stream_synchronize(stream) == CUDA_SUCCESS, "cuStreamSynchronize");
    checks.expect(driver.stream_destroy(stream) == CUDA_SUCCESS, "cuStreamDestroy_v2");
}

}  // namespace uvmp_integration

// The launch hook's own cost as a framework's launch meets it: many live
// allocations, a kernel whose one by-value parameter is a struct of 64 words
// (PyTorch's element-wise kernels pass one of several hundred bytes) of which
// some point into converted allocations, other launches' tensors each time, and
// the program's own work between launches sweeping more memory than the caches
// hold. On the fake driver. The sweep is not timed; the library's figure
// (uvmp_stats hook_ns over hooks_timed) leaves the driver's time out. Checks
// that every launch reached the driver and, under a policy, that each was
// planned or counted unplanned once the worker caught up.
//
// Usage: launch_hook_cold [ALLOCATIONS] [POINTERS] [SWEEP_MB] [LAUNCHES]
//   (2000, 8, 8 and 20000 by default; POINTERS of the struct's 64 words, at most
//   all of them, name allocations)
#include "check_list.h"
#include "fakecuda.h"
#include "robustness_support.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace uvmp_integration;

namespace {

constexpr size_t kStructWords = 64;
constexpr size_t kAllocationBytes = 1 << 20;

} // namespace

int main(int argc, char** argv) {
    const uint64_t allocations = number_argument(argc, argv, 1, 2000);
    const uint64_t pointers = std::min<uint64_t>(number_argument(argc, argv, 2, 8, 0), kStructWords);
    const uint64_t sweep_mb = number_argument(argc, argv, 3, 8, 0);
    const uint64_t launches = number_argument(argc, argv, 4, 20000);
    CheckList checks;
    const LibraryApi api = find_library_api();
    checks.expect(cuInit(0) == CUDA_SUCCESS, "cuInit");
    std::vector<CUdeviceptr> memory(allocations);
    bool allocated = true;
    for (CUdeviceptr& m : memory) allocated = cuMemAlloc(&m, kAllocationBytes) == CUDA_SUCCESS && allocated;
    checks.expect(allocated, "every cuMemAlloc");
    const size_t offset = 0, size = kStructWords * sizeof(uint64_t);
    CUfunction kernel = fakecuda_make_function("struct_kernel", 1, &offset, &size);
    std::vector<uint64_t> words(kStructWords);
    void* params[] = {words.data()};
    std::vector<unsigned char> sweep(sweep_mb << 20, 1);
    volatile unsigned sink = 0;
    // The first launch describes the kernel; it stays out of the figures.
    checks.expect(cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) == CUDA_SUCCESS,
                  "the first launch");
    const uvmp_stats before = library_stats(api);
    const uint64_t fake_before = fakecuda_counters().launch_kernel;
    bool all_ok = true;
    double launch_ns = 0;
    for (uint64_t i = 0; i < launches; ++i) {
        // Pointers into allocations spread over the set, the other words sizes and strides.
        for (size_t w = 0; w < kStructWords; ++w)
            words[w] = w < pointers ? memory[(i * 7 + w * 131) % memory.size()] + 256 : w * 3 + 1;
        for (size_t at = 0; at < sweep.size(); at += 64) sink = sink + sweep[at]++;
        const auto start = std::chrono::steady_clock::now();
        all_ok = cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) == CUDA_SUCCESS && all_ok;
        launch_ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    }
    checks.expect(all_ok, "every launch succeeded");
    checks.expect_eq("launches the driver ran", fakecuda_counters().launch_kernel - fake_before, launches);
    char line[240];
    std::snprintf(line, sizeof line,
                  "%llu allocations, %llu of %zu words pointers, %llu MB swept between launches: %.0f ns a launch call",
                  static_cast<unsigned long long>(allocations), static_cast<unsigned long long>(pointers),
                  kStructWords, static_cast<unsigned long long>(sweep_mb), launch_ns / static_cast<double>(launches));
    checks.note(line);
    if (api.present()) {
        const uvmp_stats s = note_hook_figure(checks, api, before);
        checks.expect_eq("launches the library saw", s.launches_seen - before.launches_seen, launches);
        if (plans_launches(s) && pointers > 0)
            checks.expect_eq("launches planned or counted unplanned", s.launches_planned + s.launches_unplanned,
                             s.launches_with_access);
    }
    for (CUdeviceptr m : memory) cuMemFree(m);
    return checks.exit_status();
}

// The launch hook's own cost without a GPU: bench/probes/empty_launch.cu's loop on the
// fake driver. A kernel of one pointer parameter is launched over one converted
// allocation, so that each launch has one access to find and to plan, from one
// thread or several at once. Prints the library's own figure (uvmp_stats hook_ns
// over hooks_timed, which leaves the driver's time out) and the wall time a
// launch takes in all; checks that every launch the library saw reached the
// driver and, under a policy, that each launch with an access was planned or
// counted unplanned once the worker has caught up: none is lost.
//
// Usage: launch_hook_timing [launches per thread] [threads] (200000 and 1 by default).
#include "check_list.h"
#include "fakecuda.h"
#include "robustness_support.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

using namespace uvmp_integration;

namespace {

// Launches through cuLaunchKernel, as the runtime's triple-chevron launch does,
// timing one call in kSampleEvery: the median of those is the figure a loaded
// host disturbs least (a mean takes in every time the thread was preempted).
constexpr uint64_t kSampleEvery = 16;

struct LoopResult {
    bool ok = true;
    std::vector<uint64_t> call_ns;
};

LoopResult launch_loop(CUfunction kernel, CUdeviceptr memory, uint64_t launches) {
    CUdeviceptr word = memory;
    void* params[] = {&word};
    LoopResult result;
    result.call_ns.reserve(launches / kSampleEvery + 1);
    for (uint64_t i = 0; i < launches; ++i) {
        const bool sampled = i % kSampleEvery == 0;
        const auto start = sampled ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
        result.ok = cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr) == CUDA_SUCCESS && result.ok;
        if (sampled)
            result.call_ns.push_back(static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count()));
    }
    return result;
}

uint64_t median(std::vector<uint64_t> values) {
    if (values.empty()) return 0;
    std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
    return values[values.size() / 2];
}

uint64_t fake_launches() { return fakecuda_counters().launch_kernel; }

}  // namespace

int main(int argc, char** argv) {
    const uint64_t launches = number_argument(argc, argv, 1, 200000);
    const uint64_t threads = number_argument(argc, argv, 2, 1);
    CheckList checks;
    const LibraryApi api = find_library_api();
    checks.expect(cuInit(0) == CUDA_SUCCESS, "cuInit");
    CUdeviceptr memory = 0;
    checks.expect(cuMemAlloc(&memory, 4096) == CUDA_SUCCESS, "cuMemAlloc");
    CUfunction kernel = make_pointer_kernel("empty_kernel", 1);
    // The first launch describes the kernel; it stays out of the figures.
    checks.expect(launch_loop(kernel, memory, 1).ok, "the first launch");
    const uvmp_stats before = library_stats(api);
    const uint64_t fake_before = fake_launches();

    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> launchers;
    std::vector<LoopResult> results(threads);
    for (uint64_t t = 0; t < threads; ++t)
        launchers.emplace_back([&, t] { results[t] = launch_loop(kernel, memory, launches); });
    for (std::thread& launcher : launchers) launcher.join();
    const double wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    const uint64_t total = launches * threads;
    bool all_ok = true;
    std::vector<uint64_t> call_ns;
    for (const LoopResult& result : results) {
        all_ok = all_ok && result.ok;
        call_ns.insert(call_ns.end(), result.call_ns.begin(), result.call_ns.end());
    }
    checks.expect(all_ok, "every launch succeeded");
    checks.expect_eq("launches the driver ran", fake_launches() - fake_before, total);

    char line[200];
    std::snprintf(line, sizeof line,
                  "%llu launches on %llu threads: %.0f ns a launch on each thread, in all; median launch call %llu ns",
                  static_cast<unsigned long long>(total), static_cast<unsigned long long>(threads),
                  wall_ns / static_cast<double>(launches), static_cast<unsigned long long>(median(call_ns)));
    checks.note(line);
    if (api.present()) {
        const uvmp_stats s = note_hook_figure(checks, api, before);
        checks.expect_eq("launches the library saw", s.launches_seen - before.launches_seen, total);
        // Without a planner (or a trace) nothing reads a launch's accesses, and they are not looked for.
        checks.expect_eq("launches with an access", s.launches_with_access - before.launches_with_access,
                         plans_launches() ? total : 0);
        if (plans_launches()) {
            std::snprintf(line, sizeof line, "%llu launches planned, %llu unplanned",
                          static_cast<unsigned long long>(s.launches_planned),
                          static_cast<unsigned long long>(s.launches_unplanned));
            checks.note(line);
            checks.expect_eq("launches planned or counted unplanned", s.launches_planned + s.launches_unplanned,
                             s.launches_with_access);
        } else {
            // Nothing to plan for (no budget, or policy none): no launch reaches a planner.
            checks.expect_eq("launches handed to a planner", s.launches_planned + s.launches_unplanned, 0);
        }
    }
    checks.expect(cuMemFree(memory) == CUDA_SUCCESS, "cuMemFree");
    return checks.exit_status();
}

// The launch hook's own cost without a GPU: bench/probes/empty_launch.cu's loop on the
// fake driver. A kernel of one pointer parameter is launched over one converted
// allocation, so that each launch has one access to find and to plan, from one
// thread or several at once. Prints the library's own figure (uvmp_stats hook_ns
// over hooks_timed, which leaves the driver's time out) and the wall time a
// launch takes in all; checks that every launch the library saw reached the
// driver and, under a policy, that each launch with an access was planned or
// counted unplanned once the worker has caught up: none is lost. A job that fits
// its budget is planned from the first launch after it goes past it: checked by
// going past it after the timed launches.
//
// Usage: launch_hook_timing [launches per thread] [threads] [ballast MiB]
// (200000, 1 and 0 by default). The ballast, converted memory no launch names, is
// allocated first: with a budget below it the timed launches are planned.
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

// The job fitted its budget: once converted memory no launch names takes it past
// the budget, every launch is planned.
void check_planned_past_budget(CheckList& checks, const LibraryApi& api, CUfunction kernel, CUdeviceptr memory,
                               const uvmp_stats& before) {
    constexpr uint64_t kLaunches = 1000;
    CUdeviceptr past = 0;
    checks.expect(cuMemAlloc(&past, before.budget_bytes + (1 << 20)) == CUDA_SUCCESS,
                  "cuMemAlloc of more than the budget");
    checks.expect(launch_loop(kernel, memory, kLaunches).ok, "the launches past the budget");
    const uvmp_stats s = settled_stats(api);
    checks.expect_eq("launches with an access past the budget", s.launches_with_access - before.launches_with_access,
                     kLaunches);
    checks.expect_eq("launches past the budget planned or counted unplanned",
                     s.launches_planned + s.launches_unplanned - before.launches_planned - before.launches_unplanned,
                     kLaunches);
    checks.expect(cuMemFree(past) == CUDA_SUCCESS, "cuMemFree of more than the budget");
}

}  // namespace

int main(int argc, char** argv) {
    const uint64_t launches = number_argument(argc, argv, 1, 200000);
    const uint64_t threads = number_argument(argc, argv, 2, 1);
    const uint64_t ballast_mib = number_argument(argc, argv, 3, 0, 0);
    CheckList checks;
    const LibraryApi api = find_library_api();
    checks.expect(cuInit(0) == CUDA_SUCCESS, "cuInit");
    CUdeviceptr ballast = 0;
    if (ballast_mib) checks.expect(cuMemAlloc(&ballast, ballast_mib << 20) == CUDA_SUCCESS, "cuMemAlloc of the ballast");
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
                         plans_launches(s) ? total : 0);
        if (plans_launches(s)) {
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
        if (policy_under_budget() && !plans_launches(s)) check_planned_past_budget(checks, api, kernel, memory, s);
    }
    if (ballast) checks.expect(cuMemFree(ballast) == CUDA_SUCCESS, "cuMemFree of the ballast");
    checks.expect(cuMemFree(memory) == CUDA_SUCCESS, "cuMemFree");
    return checks.exit_status();
}

#include "stress_scenario.h"

#include "fakecuda.h"
#include "robustness_support.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace uvmp_integration {
namespace {

constexpr int kThreads = 16;
constexpr unsigned kPointers = 4;
constexpr size_t kMostLivePerThread = 24;
// Rounds each thread runs whatever the time: about 1900 allocations and 1800 launches in all.
constexpr uint64_t kLeastRounds = 400;

struct Live {
    CUdeviceptr ptr = 0;
    bool ordered = false;
    CUstream stream = nullptr; // of a stream-ordered allocation
    bool per_thread = false;   // made through the _ptsz entry point
};

struct Totals {
    std::atomic<uint64_t> allocations{0};
    std::atomic<uint64_t> frees{0};
    std::atomic<uint64_t> launches{0};
    std::atomic<uint64_t> failures{0};
    std::mutex first_mutex;
    std::string first_failure;

    bool ok(CUresult r, const char* call) {
        if (r == CUDA_SUCCESS) return true;
        if (failures.fetch_add(1) == 0) {
            std::lock_guard lock(first_mutex);
            first_failure = std::string(call) + " returned " + std::to_string(r);
        }
        return false;
    }
};

// Allocations one thread hands over for another to free.
class Exchange {
public:
    void give(Live item) {
        std::lock_guard lock(mutex_);
        items_.push_back(item);
    }
    std::optional<Live> take() {
        std::lock_guard lock(mutex_);
        if (items_.empty()) return std::nullopt;
        Live item = items_.back();
        items_.pop_back();
        return item;
    }

private:
    std::mutex mutex_;
    std::vector<Live> items_;
};

double stress_seconds() {
    const char* text = std::getenv("STRESS_SECONDS");
    const double seconds = text ? std::atof(text) : 0.0;
    return seconds > 0 ? seconds : 1.5;
}

void free_live(const Live& item, CUstream other, bool on_other_stream, Totals& totals) {
    CUresult r = CUDA_SUCCESS;
    if (!item.ordered) r = cuMemFree(item.ptr);
    else if (on_other_stream) r = cuMemFreeAsync(item.ptr, other);
    else if (item.per_thread) r = cuMemFreeAsync_ptsz(item.ptr, item.stream);
    else r = cuMemFreeAsync(item.ptr, item.stream);
    if (totals.ok(r, item.ordered ? "cuMemFreeAsync" : "cuMemFree")) ++totals.frees;
}

CUresult launch_some(CUfunction kernel, const std::vector<Live>& live, CUstream stream, unsigned how,
                     std::mt19937& rng) {
    CUdeviceptr words[kPointers];
    void* params[kPointers];
    for (unsigned i = 0; i < kPointers; ++i) {
        words[i] = live[rng() % live.size()].ptr;
        params[i] = &words[i];
    }
    switch (how % 3) {
    case 0: return cuLaunchKernel(kernel, 2, 1, 1, 64, 1, 1, 0, stream, params, nullptr);
    case 1: return cuLaunchKernel_ptsz(kernel, 2, 1, 1, 64, 1, 1, 0, stream, params, nullptr);
    default: {
        CUlaunchConfig config{};
        config.gridDimX = config.gridDimY = config.gridDimZ = 1;
        config.blockDimX = 128;
        config.blockDimY = config.blockDimZ = 1;
        config.hStream = stream;
        return cuLaunchKernelEx(&config, kernel, params, nullptr);
    }
    }
}

void run_thread(int index, CUfunction kernel, CUstream shared, Exchange& exchange, Totals& totals,
                const LibraryApi& api, std::chrono::steady_clock::time_point deadline) {
    std::mt19937 rng(static_cast<unsigned>(index) * 7919u + 1u);
    CUstream own = nullptr;
    totals.ok(cuStreamCreate(&own, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    std::vector<Live> live;
    auto free_at = [&](size_t i) {
        const Live item = live[i];
        live[i] = live.back();
        live.pop_back();
        free_live(item, own, rng() % 4 == 0, totals);
    };
    // Until the deadline, and at least kLeastRounds rounds: on a slow or busy host (a
    // sanitizer build beside other work) the threads still do as much as the checks ask.
    for (uint64_t round = 0; round < kLeastRounds || std::chrono::steady_clock::now() < deadline; ++round) {
        const unsigned choice = rng() % 10;
        if (choice <= 1) {
            Live item;
            if (totals.ok(cuMemAlloc(&item.ptr, size_t{512} << (rng() % 12)), "cuMemAlloc")) {
                live.push_back(item);
                ++totals.allocations;
            }
        } else if (choice == 2) {
            Live item;
            item.ordered = true;
            const size_t bytes = size_t{512} << (rng() % 12);
            CUresult r = CUDA_SUCCESS;
            switch (rng() % 3) {
            case 0: item.stream = own; r = cuMemAllocAsync(&item.ptr, bytes, own); break;
            case 1: item.stream = shared; r = cuMemAllocAsync(&item.ptr, bytes, shared); break;
            default: item.per_thread = true; r = cuMemAllocAsync_ptsz(&item.ptr, bytes, nullptr); break;
            }
            if (totals.ok(r, "cuMemAllocAsync")) {
                live.push_back(item);
                ++totals.allocations;
            }
        } else if (choice <= 4) {
            if (!live.empty()) free_at(rng() % live.size());
        } else if (choice <= 7) {
            if (!live.empty() && totals.ok(launch_some(kernel, live, rng() % 2 ? own : shared, rng(), rng), "launch"))
                ++totals.launches;
        } else if (choice == 8) {
            if (rng() % 2 && !live.empty()) {
                exchange.give(live.back());
                live.pop_back();
            } else if (auto item = exchange.take()) {
                free_live(*item, own, true, totals);
            }
        } else {
            size_t free_bytes = 0, total_bytes = 0;
            totals.ok(cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
            if (api.mark_iteration && index == 0) api.mark_iteration();
            totals.ok(cuStreamSynchronize(own), "cuStreamSynchronize");
        }
        if (live.size() > kMostLivePerThread) free_at(0);
    }
    while (!live.empty()) free_at(live.size() - 1);
    totals.ok(cuStreamSynchronize(own), "cuStreamSynchronize");
    totals.ok(cuStreamDestroy(own), "cuStreamDestroy");
}

uint64_t fake_launches(const fakecuda_counts& c) {
    return c.launch_kernel + c.launch_kernel_ptsz + c.launch_kernel_ex + c.launch_kernel_ex_ptsz +
           c.launch_cooperative + c.launch_cooperative_ptsz;
}

}  // namespace

void run_stress_scenario(CheckList& checks) {
    const LibraryApi api = find_library_api();
    checks.expect(cuInit(0) == CUDA_SUCCESS, "cuInit");
    CUfunction kernel = make_pointer_kernel("stress_kernel", kPointers);
    CUstream shared = nullptr;
    checks.expect(cuStreamCreate(&shared, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "a shared stream");
    const uint64_t launches_before = fake_launches(fakecuda_counters());

    Totals totals;
    Exchange exchange;
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::microseconds(static_cast<int64_t>(stress_seconds() * 1e6));
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i)
        threads.emplace_back(run_thread, i, kernel, shared, std::ref(exchange), std::ref(totals), std::cref(api),
                             deadline);
    for (std::thread& t : threads) t.join();
    while (auto item = exchange.take()) free_live(*item, shared, true, totals);
    checks.expect(cuStreamSynchronize(shared) == CUDA_SUCCESS && cuCtxSynchronize() == CUDA_SUCCESS,
                  "the streams and the context synchronise");

    checks.note(std::to_string(totals.allocations.load()) + " allocations, " + std::to_string(totals.frees.load()) +
                " frees, " + std::to_string(totals.launches.load()) + " launches on " + std::to_string(kThreads) +
                " threads");
    checks.expect(totals.failures.load() == 0,
                  "every call succeeded" + (totals.first_failure.empty() ? "" : " (first failure: " +
                                                                                     totals.first_failure + ")"));
    checks.expect(totals.allocations.load() > 1000 && totals.launches.load() > 1000, "the threads did work");
    checks.expect_eq("frees made", totals.frees.load(), totals.allocations.load());
    const fakecuda_counts fake = fakecuda_counters();
    checks.expect_eq("launches the driver ran", fake_launches(fake) - launches_before, totals.launches.load());
    checks.expect_eq("device bytes the driver holds at the end", fake.live_device_bytes, 0);
    CUmemoryPool pool = nullptr;
    cuuint64_t used = 1;
    checks.expect(cuDeviceGetDefaultMemPool(&pool, 0) == CUDA_SUCCESS &&
                      cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) == CUDA_SUCCESS,
                  "the default pool answers");
    checks.expect_eq("bytes the default pool has in use at the end", used, 0);
    if (api.present()) {
        const uvmp_stats s = policy_under_budget() ? settled_stats(api) : library_stats(api);
        checks.expect_eq("allocations the library converted or passed through",
                         s.allocs_converted + s.allocs_passed_through, totals.allocations.load());
        checks.expect_eq("frees of converted allocations", s.frees_converted, s.allocs_converted);
        checks.expect_eq("converted bytes live", s.bytes_converted_live, 0);
        checks.expect_eq("launches the library saw", s.launches_seen, totals.launches.load());
        // Launches of sixteen threads at once reach the planner through one ring:
        // none may be lost on the way.
        if (plans_launches(s))
            checks.expect_eq("launches planned or counted unplanned", s.launches_planned + s.launches_unplanned,
                             s.launches_with_access);
    }
    checks.expect(cuStreamDestroy(shared) == CUDA_SUCCESS, "the shared stream is destroyed");
}

}  // namespace uvmp_integration

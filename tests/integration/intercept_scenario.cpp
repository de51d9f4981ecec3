#include "intercept_scenario.h"

#include "library_api.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace uvmp_integration {

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

std::string result_text(CUresult result) { return std::to_string(static_cast<int>(result)); }

// ---- kernel parameters -------------------------------------------------------

struct KernelShape {
    const char* name;
    std::vector<std::size_t> offsets;
    std::vector<std::size_t> sizes;
};

// __global__ void axpy(float* x, int n, float* y)
const KernelShape kAxpy{"_Z4axpyPfiS_", {0, 8, 16}, {8, 4, 8}};
// __global__ void gather(Pointers p): one 48-byte struct whose words 1 and 4 are pointers
const KernelShape kGather{"_Z6gather8Pointers", {0}, {48}};
// __global__ void scale(int n, float factor): no pointer at all
const KernelShape kScale{"_Z5scaleif", {0, 4}, {4, 4}};

using Bytes = std::vector<unsigned char>;

template <typename T>
Bytes bytes_of(T value) {
    Bytes out(sizeof value);
    std::memcpy(out.data(), &value, sizeof value);
    return out;
}

Bytes words_of(const std::vector<std::uint64_t>& words) {
    Bytes out(words.size() * sizeof(std::uint64_t));
    std::memcpy(out.data(), words.data(), out.size());
    return out;
}

// One launch's arguments, packed the way the driver lays them out, with the
// per-parameter pointer array pointing into that packed block.
struct Launch {
    std::string description;
    CUfunction function = nullptr;
    Bytes packed;
    std::vector<void*> params;
    unsigned converted_pointer_words = 0;  // words that name an intercepted allocation
};

Launch make_launch(std::string description, CUfunction function, const KernelShape& shape,
                   const std::vector<Bytes>& args, unsigned converted_pointer_words) {
    Launch launch;
    launch.description = std::move(description);
    launch.function = function;
    launch.converted_pointer_words = converted_pointer_words;
    std::size_t end = 0;
    for (std::size_t i = 0; i < shape.offsets.size(); ++i)
        end = std::max(end, shape.offsets[i] + shape.sizes[i]);
    launch.packed.assign(end, 0);
    for (std::size_t i = 0; i < args.size(); ++i)
        std::memcpy(launch.packed.data() + shape.offsets[i], args[i].data(), shape.sizes[i]);
    for (std::size_t offset : shape.offsets) launch.params.push_back(launch.packed.data() + offset);
    return launch;
}

enum class LaunchForm { kernel_params, kernel_extra, kernel_ex, cooperative };

const char* form_name(LaunchForm form) {
    switch (form) {
    case LaunchForm::kernel_params: return "cuLaunchKernel(params)";
    case LaunchForm::kernel_extra: return "cuLaunchKernel(extra buffer)";
    case LaunchForm::kernel_ex: return "cuLaunchKernelEx";
    case LaunchForm::cooperative: return "cuLaunchCooperativeKernel";
    }
    return "?";
}

CUresult launch_with(const LaunchEntryPoints& entry, LaunchForm form, Launch& launch,
                     CUstream stream) {
    switch (form) {
    case LaunchForm::kernel_params:
        return entry.launch_kernel(launch.function, 4, 1, 1, 128, 1, 1, 0, stream,
                                   launch.params.data(), nullptr);
    case LaunchForm::kernel_extra: {
        std::size_t size = launch.packed.size();
        void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, launch.packed.data(),
                         CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
        return entry.launch_kernel(launch.function, 4, 1, 1, 128, 1, 1, 0, stream, nullptr,
                                   extra);
    }
    case LaunchForm::kernel_ex: {
        CUlaunchConfig config{};
        config.gridDimX = 4;
        config.gridDimY = config.gridDimZ = 1;
        config.blockDimX = 128;
        config.blockDimY = config.blockDimZ = 1;
        config.hStream = stream;
        return entry.launch_kernel_ex(&config, launch.function, launch.params.data(), nullptr);
    }
    case LaunchForm::cooperative:
        return entry.launch_cooperative(launch.function, 4, 1, 1, 128, 1, 1, 0, stream,
                                        launch.params.data());
    }
    return CUDA_ERROR_INVALID_VALUE;
}

// ---- the allocations ---------------------------------------------------------

struct Allocations {
    CUstream stream = nullptr;
    CUdeviceptr a = 0, b = 0, c = 0;  // cuMemAlloc_v2
    CUdeviceptr pitched = 0;          // cuMemAllocPitch_v2
    std::size_t pitch = 0;
    CUdeviceptr async_legacy = 0;     // cuMemAllocAsync
    CUdeviceptr async_per_thread = 0; // cuMemAllocAsync_ptsz
    CUdeviceptr pooled = 0;           // cuMemAllocFromPoolAsync
    void* host = nullptr;             // cuMemAllocHost_v2, never converted
    std::uint64_t device_allocations = 0;
    std::uint64_t device_bytes = 0;
};

constexpr std::size_t kPitchWidth = 1000;
constexpr std::size_t kPitchHeight = 64;

void allocate_all(const DriverEntryPoints& d, Allocations& m, CheckList& checks) {
    checks.expect(d.stream_create(&m.stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS,
                  "cuStreamCreate");
    auto count = [&](CUresult result, const std::string& what, std::uint64_t bytes) {
        checks.expect(result == CUDA_SUCCESS, what + " returned " + result_text(result));
        if (result == CUDA_SUCCESS) {
            ++m.device_allocations;
            m.device_bytes += bytes;
        }
    };
    count(d.mem_alloc(&m.a, 1 * kMiB), "cuMemAlloc_v2(1 MiB)", 1 * kMiB);
    count(d.mem_alloc(&m.b, 4 * kMiB), "cuMemAlloc_v2(4 MiB)", 4 * kMiB);
    count(d.mem_alloc(&m.c, 64 * 1024), "cuMemAlloc_v2(64 KiB)", 64 * 1024);
    const CUresult pitch_result =
        d.mem_alloc_pitch(&m.pitched, &m.pitch, kPitchWidth, kPitchHeight, 4);
    count(pitch_result, "cuMemAllocPitch_v2(1000 x 64)", m.pitch * kPitchHeight);
    checks.expect(pitch_result != CUDA_SUCCESS || m.pitch >= kPitchWidth,
                  "pitch " + std::to_string(m.pitch) + " holds a 1000-byte row");
    count(d.mem_alloc_async(&m.async_legacy, 2 * kMiB, m.stream), "cuMemAllocAsync(2 MiB)",
          2 * kMiB);
    count(d.mem_alloc_async_per_thread(&m.async_per_thread, 2 * kMiB, m.stream),
          "cuMemAllocAsync_ptsz(2 MiB)", 2 * kMiB);
    CUmemoryPool pool = nullptr;
    checks.expect(d.device_get_default_mem_pool(&pool, 0) == CUDA_SUCCESS,
                  "cuDeviceGetDefaultMemPool");
    count(d.mem_alloc_from_pool_async(&m.pooled, 1 * kMiB, pool, m.stream),
          "cuMemAllocFromPoolAsync(1 MiB)", 1 * kMiB);
    const CUresult host_result = d.mem_alloc_host(&m.host, 4096);
    checks.expect(host_result == CUDA_SUCCESS,
                  "cuMemAllocHost_v2(4 KiB) returned " + result_text(host_result));

    // Bad arguments must come back as the driver's errors, not crash or count.
    const CUresult null_result = d.mem_alloc(nullptr, 4096);
    checks.expect(null_result == CUDA_ERROR_INVALID_VALUE,
                  "cuMemAlloc_v2(NULL, 4 KiB) is CUDA_ERROR_INVALID_VALUE: got " +
                      result_text(null_result));
    CUdeviceptr empty = 0;
    const CUresult zero_result = d.mem_alloc(&empty, 0);
    checks.expect(zero_result == CUDA_ERROR_INVALID_VALUE,
                  "cuMemAlloc_v2(&p, 0) is CUDA_ERROR_INVALID_VALUE: got " +
                      result_text(zero_result));
}

void free_all(const DriverEntryPoints& d, Allocations& m, CheckList& checks) {
    // A test of the library's worker (which plans moves off the application
    // thread) holds the memory long enough for the worker to act on it.
    if (const char* pause = std::getenv("INTERCEPT_TEST_PAUSE_MS"))
        std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(pause)));
    auto expect_ok = [&](CUresult result, const std::string& what) {
        checks.expect(result == CUDA_SUCCESS, what + " returned " + result_text(result));
    };
    expect_ok(d.mem_free(m.a), "cuMemFree_v2(a)");
    expect_ok(d.mem_free(m.b), "cuMemFree_v2(b)");
    expect_ok(d.mem_free(m.c), "cuMemFree_v2(c)");
    expect_ok(d.mem_free(m.pitched), "cuMemFree_v2(pitched)");
    expect_ok(d.mem_free_async(m.async_legacy, m.stream), "cuMemFreeAsync(async)");
    expect_ok(d.mem_free_async(m.async_per_thread, m.stream), "cuMemFreeAsync(async ptsz)");
    expect_ok(d.mem_free_async(m.pooled, m.stream), "cuMemFreeAsync(pooled)");
    expect_ok(d.stream_synchronize(m.stream), "cuStreamSynchronize");
    expect_ok(d.mem_free_host(m.host), "cuMemFreeHost");
    // The library keeps its freed slabs for reuse; a trim of the device's pool gives them back.
    CUmemoryPool pool = nullptr;
    expect_ok(d.device_get_default_mem_pool(&pool, 0), "cuDeviceGetDefaultMemPool");
    expect_ok(d.mem_pool_trim_to(pool, 0), "cuMemPoolTrimTo(default pool, 0)");

    const CUresult again = d.mem_free(m.a);
    checks.expect(again == CUDA_ERROR_INVALID_VALUE,
                  "a second cuMemFree_v2(a) is CUDA_ERROR_INVALID_VALUE: got " +
                      result_text(again));
    const CUresult unknown = d.mem_free(static_cast<CUdeviceptr>(0x1000));
    checks.expect(unknown == CUDA_ERROR_INVALID_VALUE,
                  "cuMemFree_v2(unknown pointer) is CUDA_ERROR_INVALID_VALUE: got " +
                      result_text(unknown));
    expect_ok(d.stream_destroy(m.stream), "cuStreamDestroy_v2");
}

void check_mem_get_info(const DriverEntryPoints& d, CheckList& checks) {
    std::size_t free_bytes = 0, total_bytes = 0;
    // Only surviving matters for the NULL forms; their result is reported for the record.
    const CUresult both_null = d.mem_get_info(nullptr, nullptr);
    const CUresult free_null = d.mem_get_info(nullptr, &total_bytes);
    const CUresult total_null = d.mem_get_info(&free_bytes, nullptr);
    checks.expect(true, "cuMemGetInfo_v2 with NULL arguments did not crash (results " +
                            result_text(both_null) + ", " + result_text(free_null) + ", " +
                            result_text(total_null) + ")");
    const CUresult result = d.mem_get_info(&free_bytes, &total_bytes);
    checks.expect(result == CUDA_SUCCESS && total_bytes > 0 && free_bytes <= total_bytes &&
                      total_bytes <= FAKECUDA_DEVICE_TOTAL_BYTES,
                  "cuMemGetInfo_v2 returned " + result_text(result) + ", free " +
                      std::to_string(free_bytes) + " of " + std::to_string(total_bytes));
}

// ---- the launches --------------------------------------------------------------

struct LaunchTally {
    std::uint64_t launches = 0;
    std::uint64_t launches_with_converted_pointer = 0;
    std::uint64_t converted_pointer_words = 0;
};

struct Kernels {
    CUfunction axpy = nullptr;
    CUfunction gather = nullptr;
    CUfunction scale = nullptr;
    CUfunction axpy_kernel = nullptr;  // a CUkernel handle passed as a CUfunction
};

Kernels make_kernels(const FakeDriverHelpers& fake, CheckList& checks) {
    auto make = [&](const KernelShape& s) {
        return fake.make_function(s.name, static_cast<unsigned>(s.offsets.size()),
                                  s.offsets.data(), s.sizes.data());
    };
    Kernels k;
    k.axpy = make(kAxpy);
    k.gather = make(kGather);
    k.scale = make(kScale);
    k.axpy_kernel = reinterpret_cast<CUfunction>(fake.make_kernel(
        "_Z11axpy_kernelPfiS_", 3, kAxpy.offsets.data(), kAxpy.sizes.data()));
    checks.expect(k.axpy && k.gather && k.scale && k.axpy_kernel, "fake kernels made");
    return k;
}

std::vector<std::pair<LaunchForm, Launch>> launch_plan(const Kernels& k, const Allocations& m) {
    const auto ptr = [](CUdeviceptr p) { return bytes_of<std::uint64_t>(p); };
    const auto host = reinterpret_cast<std::uint64_t>(m.host);
    const auto gather_args = [](CUdeviceptr first, CUdeviceptr second) {
        // Small integers around the pointers: nothing else in the struct may look like one.
        return std::vector<Bytes>{words_of({7, first, 3, 5, second, 9})};
    };
    std::vector<std::pair<LaunchForm, Launch>> plan;
    auto add = [&](LaunchForm form, Launch launch) { plan.emplace_back(form, std::move(launch)); };
    add(LaunchForm::kernel_params,
        make_launch("axpy(a, n, b + 256)", k.axpy, kAxpy,
                    {ptr(m.a), bytes_of<int>(1024), ptr(m.b + 256)}, 2));
    add(LaunchForm::kernel_extra,
        make_launch("axpy(c, n, pitched)", k.axpy, kAxpy,
                    {ptr(m.c), bytes_of<int>(64), ptr(m.pitched)}, 2));
    add(LaunchForm::kernel_params,
        make_launch("gather({7, async, 3, 5, pooled, 9})", k.gather, kGather,
                    gather_args(m.async_legacy, m.pooled), 2));
    add(LaunchForm::kernel_extra,
        make_launch("gather({7, a, 3, 5, async_ptsz + 4096, 9})", k.gather, kGather,
                    gather_args(m.a, m.async_per_thread + 4096), 2));
    add(LaunchForm::kernel_params,
        make_launch("scale(n, 2.0)", k.scale, kScale, {bytes_of<int>(10), bytes_of(2.0f)}, 0));
    add(LaunchForm::kernel_params,
        make_launch("CUkernel axpy(b, n, c)", k.axpy_kernel, kAxpy,
                    {ptr(m.b), bytes_of<int>(8), ptr(m.c)}, 2));
    add(LaunchForm::kernel_params,
        make_launch("axpy(host, n, host)", k.axpy, kAxpy,
                    {bytes_of(host), bytes_of<int>(16), bytes_of(host)}, 0));
    add(LaunchForm::kernel_ex,
        make_launch("axpy(pitched, n, a)", k.axpy, kAxpy,
                    {ptr(m.pitched), bytes_of<int>(5), ptr(m.a)}, 2));
    add(LaunchForm::kernel_ex,
        make_launch("gather({7, b, 3, 5, c, 9})", k.gather, kGather, gather_args(m.b, m.c), 2));
    add(LaunchForm::kernel_ex,
        make_launch("scale(n, 0.5)", k.scale, kScale, {bytes_of<int>(3), bytes_of(0.5f)}, 0));
    add(LaunchForm::cooperative,
        make_launch("axpy(async, n, pooled + 8)", k.axpy, kAxpy,
                    {ptr(m.async_legacy), bytes_of<int>(2), ptr(m.pooled + 8)}, 2));
    add(LaunchForm::cooperative,
        make_launch("gather({7, c, 3, 5, a, 9})", k.gather, kGather, gather_args(m.c, m.a), 2));
    return plan;
}

// The driver entry point each form reaches (both cuLaunchKernel forms share one).
const char* entry_point_name(LaunchForm form) {
    switch (form) {
    case LaunchForm::kernel_params:
    case LaunchForm::kernel_extra: return "cuLaunchKernel";
    case LaunchForm::kernel_ex: return "cuLaunchKernelEx";
    case LaunchForm::cooperative: return "cuLaunchCooperativeKernel";
    }
    return "?";
}

std::uint64_t launch_counter(const fakecuda_counts& c, LaunchForm form, bool per_thread) {
    switch (form) {
    case LaunchForm::kernel_params:
    case LaunchForm::kernel_extra: return per_thread ? c.launch_kernel_ptsz : c.launch_kernel;
    case LaunchForm::kernel_ex: return per_thread ? c.launch_kernel_ex_ptsz : c.launch_kernel_ex;
    case LaunchForm::cooperative:
        return per_thread ? c.launch_cooperative_ptsz : c.launch_cooperative;
    }
    return 0;
}

const LaunchForm kAllForms[] = {LaunchForm::kernel_params, LaunchForm::kernel_ex,
                                LaunchForm::cooperative};

void launch_all(const DriverEntryPoints& d, const FakeDriverHelpers& fake, const Kernels& kernels,
                const Allocations& m, LaunchTally& tally, CheckList& checks) {
    for (const LaunchEntryPoints& entry : d.launchers) {
        const fakecuda_counts before = fake.counters();
        auto plan = launch_plan(kernels, m);
        std::uint64_t per_form[4] = {};
        for (auto& [form, launch] : plan) {
            const CUresult result = launch_with(entry, form, launch, m.stream);
            const std::string what =
                entry.label + " " + form_name(form) + " " + launch.description;
            checks.expect(result == CUDA_SUCCESS, what + " returned " + result_text(result));
            if (result != CUDA_SUCCESS) continue;
            Bytes delivered(launch.packed.size() + 64);
            const std::size_t size = fake.last_launch_params(delivered.data(), delivered.size());
            checks.expect(size == launch.packed.size() &&
                              std::memcmp(delivered.data(), launch.packed.data(), size) == 0,
                          what + ": the driver received the parameter bytes unchanged");
            ++tally.launches;
            if (launch.converted_pointer_words > 0) ++tally.launches_with_converted_pointer;
            tally.converted_pointer_words += launch.converted_pointer_words;
            // Both cuLaunchKernel forms reach one driver entry point; count them together.
            const LaunchForm entry_point =
                form == LaunchForm::kernel_extra ? LaunchForm::kernel_params : form;
            ++per_form[static_cast<int>(entry_point)];
        }
        const fakecuda_counts after = fake.counters();
        for (LaunchForm form : kAllForms) {
            const int index = static_cast<int>(form);
            checks.expect_eq(entry.label + " launches reaching the driver's " +
                                 (entry.per_thread ? "_ptsz " : "legacy ") + entry_point_name(form),
                             launch_counter(after, form, entry.per_thread) -
                                 launch_counter(before, form, entry.per_thread),
                             per_form[index]);
            checks.expect_eq(entry.label + " launches reaching the driver's " +
                                 (entry.per_thread ? "legacy " : "_ptsz ") + entry_point_name(form),
                             launch_counter(after, form, !entry.per_thread) -
                                 launch_counter(before, form, !entry.per_thread),
                             0);
        }
    }
}

// ---- expectations --------------------------------------------------------------

void check_library_version(const LibraryApi& api, CheckList& checks) {
    if (api.version == nullptr) return;
    const char* version = api.version();
    checks.expect(version != nullptr && std::regex_match(version, std::regex(R"(\d+\.\d+\.\d+)")),
                  std::string("uvmp_version() is MAJOR.MINOR.PATCH: ") +
                      (version ? version : "(null)"));
}

void check_converted(const FakeDriverHelpers& fake, const Allocations& m,
                     const LaunchTally& tally, CheckList& checks) {
    const fakecuda_counts c = fake.counters();
    // Carved from the managed pool's slabs: fewer managed allocations than allocations.
    checks.expect(c.mem_alloc_managed >= 1 && c.mem_alloc_managed < m.device_allocations,
                  "driver cuMemAllocManaged calls: " + std::to_string(c.mem_alloc_managed) + " for " +
                      std::to_string(m.device_allocations) + " allocations");
    checks.expect_eq("driver cuMemAlloc_v2 calls", c.mem_alloc, 0);
    checks.expect_eq("driver cuMemAllocPitch_v2 calls", c.mem_alloc_pitch, 0);
    checks.expect_eq("driver cuMemAllocAsync calls", c.mem_alloc_async, 0);
    checks.expect_eq("driver cuMemAllocFromPoolAsync calls", c.mem_alloc_from_pool, 0);
    checks.expect_eq("driver host allocations", c.mem_alloc_host, 1);

    // Timing decides whether a queued prefetch meets memory already freed, so this
    // is reported rather than checked.
    checks.note("driver prefetches: " + std::to_string(c.prefetch_calls) + " done, " +
                std::to_string(c.prefetch_refused) + " refused for naming no live managed memory");

    const LibraryApi api = find_library_api();
    checks.expect(api.present(), "uvmp_get_stats is found with dlsym(RTLD_DEFAULT)");
    checks.expect(api.get_stats == nullptr || api.get_stats(nullptr) == -1,
                  "uvmp_get_stats(NULL) returns -1");
    const auto stats = api.stats();
    checks.expect(stats.has_value(), "uvmp_get_stats succeeds");
    if (!stats) return;
    checks.expect_eq("stats.active", stats->active, 1);
    checks.expect_eq("stats.allocs_converted", stats->allocs_converted, m.device_allocations);
    checks.expect_eq("stats.bytes_converted", stats->bytes_converted, m.device_bytes);
    checks.expect_eq("stats.frees_converted", stats->frees_converted, m.device_allocations);
    checks.expect_eq("stats.bytes_converted_live", stats->bytes_converted_live, 0);
    // Every allocation is live at once before the first free.
    checks.expect_eq("stats.bytes_converted_peak", stats->bytes_converted_peak, m.device_bytes);
    checks.expect_eq("stats.passthrough_host", stats->passthrough_host, 1);
    checks.expect_eq("stats.guard_refusals", stats->guard_refusals, 0);
    checks.expect_eq("stats.pool_slabs_created", stats->pool_slabs_created, c.mem_alloc_managed);
    checks.expect_eq("stats.pool_slabs_released (trimmed)", stats->pool_slabs_released, c.mem_alloc_managed);
    checks.expect_eq("stats.launches_seen", stats->launches_seen, tally.launches);
    // Read only where a planner or a trace takes them (library_api.h).
    const bool read = library_reads_accesses(*stats);
    checks.expect_eq("stats.launches_with_access", stats->launches_with_access,
                     read ? tally.launches_with_converted_pointer : 0);
    checks.expect_eq("stats.access_entries", stats->access_entries, read ? tally.converted_pointer_words : 0);
    // Launches 0, 64, 128, ... are timed.
    checks.expect_eq("stats.hooks_timed (one launch in 64)", stats->hooks_timed, (tally.launches + 63) / 64);
    checks.expect(stats->hooks_timed == 0 || stats->hook_ns > 0, "the timed hooks took some time");

    for (int i = 0; i < 3; ++i) api.mark_iteration();
    const auto after_marks = api.stats();
    checks.expect(after_marks.has_value(), "uvmp_get_stats succeeds after marking iterations");
    if (after_marks)
        checks.expect_eq("stats.iterations after three uvmp_mark_iteration calls",
                         after_marks->iterations - stats->iterations, 3);
    check_library_version(api, checks);
}

void check_passthrough(const FakeDriverHelpers& fake, const LaunchTally& tally,
                       CheckList& checks) {
    const fakecuda_counts c = fake.counters();
    checks.expect_eq("driver cuMemAlloc_v2 calls", c.mem_alloc, 3);
    checks.expect_eq("driver cuMemAllocPitch_v2 calls", c.mem_alloc_pitch, 1);
    checks.expect_eq("driver cuMemAllocAsync calls (both variants)", c.mem_alloc_async, 2);
    checks.expect_eq("driver cuMemAllocFromPoolAsync calls", c.mem_alloc_from_pool, 1);
    checks.expect_eq("driver cuMemAllocManaged calls", c.mem_alloc_managed, 0);
    checks.expect_eq("driver prefetch calls", c.prefetch_calls, 0);

    const LibraryApi api = find_library_api();
    if (!api.present()) {
        checks.expect(true, "uvmp_get_stats is absent: no library loaded");
        return;
    }
    const auto stats = api.stats();
    checks.expect(stats.has_value(), "uvmp_get_stats succeeds");
    if (!stats) return;
    checks.expect_eq("stats.active", stats->active, 0);
    checks.expect_eq("stats.allocs_converted", stats->allocs_converted, 0);
    check_library_version(api, checks);
}

}  // namespace

std::optional<Expectation> parse_expectation(std::string_view text) {
    if (text == "converted") return Expectation::converted;
    if (text == "passthrough") return Expectation::passthrough;
    return std::nullopt;
}

void run_intercept_scenario(const DriverEntryPoints& driver, const FakeDriverHelpers& fake,
                            Expectation expectation, CheckList& checks) {
    const CUresult init = driver.init(0);
    checks.expect(init == CUDA_SUCCESS, "cuInit returned " + result_text(init));
    if (init != CUDA_SUCCESS) return;

    Allocations memory;
    allocate_all(driver, memory, checks);
    check_mem_get_info(driver, checks);
    const Kernels kernels = make_kernels(fake, checks);
    LaunchTally tally;
    launch_all(driver, fake, kernels, memory, tally, checks);
    free_all(driver, memory, checks);
    checks.note("made " + std::to_string(memory.device_allocations) + " device allocations, " +
                std::to_string(tally.launches) + " launches, " +
                std::to_string(tally.launches_with_converted_pointer) +
                " of them naming device memory in " +
                std::to_string(tally.converted_pointer_words) + " parameter words");
    // Every free, converted ones included, is done with when its call returns.
    checks.expect_eq("driver allocations still live after every free", fake.counters().live_allocations, 0);

    if (expectation == Expectation::converted)
        check_converted(fake, memory, tally, checks);
    else
        check_passthrough(fake, tally, checks);
}

}  // namespace uvmp_integration

#include "pool_scenarios.h"

#include "library_api.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace uvmp_integration {

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

std::string text(CUresult result) { return std::to_string(static_cast<int>(result)); }

// The driver, a stream and the library's counters, for one scenario.
class PoolRun {
public:
    PoolRun(const DriverEntryPoints& d, const FakeDriverHelpers& f, CheckList& c) : driver(d), fake(f), checks(c) {
        const CUresult init = driver.init(0);
        checks.expect(init == CUDA_SUCCESS, "cuInit returned " + text(init));
        ok = init == CUDA_SUCCESS && make_stream(stream) &&
             driver.device_get_default_mem_pool(&default_pool, 0) == CUDA_SUCCESS;
        checks.expect(ok, "a stream and the device's default pool");
    }

    bool make_stream(CUstream& out) {
        const CUresult r = driver.stream_create(&out, CU_STREAM_NON_BLOCKING);
        checks.expect(r == CUDA_SUCCESS, "cuStreamCreate returned " + text(r));
        return r == CUDA_SUCCESS;
    }

    CUdeviceptr alloc(std::uint64_t bytes) {
        CUdeviceptr p = 0;
        expect_ok(driver.mem_alloc(&p, bytes), "cuMemAlloc_v2(" + std::to_string(bytes) + ")");
        return p;
    }

    CUdeviceptr alloc_async(std::uint64_t bytes, CUstream on) {
        CUdeviceptr p = 0;
        expect_ok(driver.mem_alloc_async(&p, bytes, on), "cuMemAllocAsync(" + std::to_string(bytes) + ")");
        return p;
    }

    void free(CUdeviceptr p) { expect_ok(driver.mem_free(p), "cuMemFree_v2"); }
    void free_async(CUdeviceptr p, CUstream on) { expect_ok(driver.mem_free_async(p, on), "cuMemFreeAsync"); }

    void expect_ok(CUresult r, const std::string& what) {
        checks.expect(r == CUDA_SUCCESS, what + " returned " + text(r));
    }

    std::uint64_t figure(CUmemoryPool pool, CUmemPool_attribute attribute) {
        cuuint64_t value = ~0ull;
        const CUresult r = driver.mem_pool_get_attribute(pool, attribute, &value);
        checks.expect(r == CUDA_SUCCESS, "cuMemPoolGetAttribute(" + std::to_string(attribute) + ") returned " +
                                             text(r));
        return value;
    }

    CUresult set_figure(CUmemoryPool pool, CUmemPool_attribute attribute, cuuint64_t value) {
        return driver.mem_pool_set_attribute(pool, attribute, &value);
    }

    uvmp_stats stats() {
        const auto s = find_library_api().stats();
        checks.expect(s.has_value(), "uvmp_get_stats succeeds");
        return s.value_or(uvmp_stats{});
    }

    const DriverEntryPoints& driver;
    const FakeDriverHelpers& fake;
    CheckList& checks;
    bool ok = false;
    CUstream stream = nullptr;
    CUmemoryPool default_pool = nullptr;
};

// A thousand allocations live at once come from a handful of slabs. The test
// sets UVMP_POOL_SLAB_SIZE=64M.
void many(PoolRun& run) {
    constexpr int kCount = 1000;
    constexpr std::uint64_t kSize = 256 * 1024;
    constexpr std::uint64_t kSlab = 64 * kMiB;
    std::vector<CUdeviceptr> plain, ordered;
    for (int i = 0; i < kCount / 2; ++i) {
        plain.push_back(run.alloc(kSize));
        ordered.push_back(run.alloc_async(kSize, run.stream));
    }
    const fakecuda_counts c = run.fake.counters();
    const std::uint64_t enough = (kCount * kSize + kSlab - 1) / kSlab + 1;
    run.checks.expect(c.mem_alloc_managed >= 1 && c.mem_alloc_managed <= enough,
                      std::to_string(kCount) + " allocations of 256 KiB made " + std::to_string(c.mem_alloc_managed) +
                          " managed allocations (at most " + std::to_string(enough) + " expected)");
    run.checks.expect_eq("driver cuMemAlloc_v2 and cuMemAllocAsync calls", c.mem_alloc + c.mem_alloc_async, 0);
    const uvmp_stats s = run.stats();
    run.checks.expect_eq("stats.allocs_converted", s.allocs_converted, kCount);
    run.checks.expect_eq("stats.pool_slabs_created", s.pool_slabs_created, c.mem_alloc_managed);
    run.checks.expect_eq("stats.pool_reserved_bytes", s.pool_reserved_bytes, c.live_managed_bytes);
    for (CUdeviceptr p : plain) run.free(p);
    for (CUdeviceptr p : ordered) run.free_async(p, run.stream);
    run.expect_ok(run.driver.stream_synchronize(run.stream), "cuStreamSynchronize");
    run.checks.expect_eq("stats.bytes_converted_live after every free", run.stats().bytes_converted_live, 0);
    run.checks.expect_eq("slabs given back while the job runs (none are idle long enough)",
                         run.fake.counters().frees, 0);
}

// A stream-ordered free: reusable at once on its stream, elsewhere only once its
// event has completed; nobody blocks for it. The test sets UVMP_POOL_SLAB_SIZE=4M,
// so that each 4 MiB block is a slab: a block can only come from the free one.
void reuse(PoolRun& run) {
    constexpr std::uint64_t kBlock = 4 * kMiB;
    CUstream other = nullptr;
    if (!run.make_stream(other)) return;
    run.fake.hold_events(1);
    const fakecuda_counts before = run.fake.counters();
    const CUdeviceptr first = run.alloc_async(kBlock, run.stream);
    run.free_async(first, run.stream);
    const CUdeviceptr again = run.alloc_async(kBlock, run.stream);
    run.checks.expect(again == first, "an allocation on the freeing stream reuses the block at once");
    run.free_async(again, run.stream);

    const CUdeviceptr elsewhere = run.alloc_async(kBlock, other);
    run.checks.expect(elsewhere != first, "an allocation on another stream does not, while the free's event is "
                                          "incomplete");
    const CUdeviceptr plain = run.alloc(kBlock);
    run.checks.expect(plain != first, "nor does a plain allocation (usable on any stream)");
    const fakecuda_counts held = run.fake.counters();
    run.checks.expect(held.event_queries > before.event_queries, "the pool asked whether the free's event completed");
    run.checks.expect_eq("events waited for", held.event_waits - before.event_waits, 0);
    run.checks.expect_eq("context synchronisations", held.ctx_synchronize - before.ctx_synchronize, 0);
    run.checks.expect_eq("slabs made", held.mem_alloc_managed - before.mem_alloc_managed, 3);

    run.fake.hold_events(0);  // the GPU catches up
    const CUdeviceptr later = run.alloc_async(kBlock, other);
    run.checks.expect(later == first, "once the event completed, another stream reuses the block");
    run.checks.expect_eq("slabs made after the event completed", run.fake.counters().mem_alloc_managed,
                         held.mem_alloc_managed);
    run.free_async(later, other);
    run.free_async(elsewhere, other);
    run.free(plain);
    run.expect_ok(run.driver.stream_destroy(other), "cuStreamDestroy_v2");
}

// cuMemFree of a plain allocation waits as the driver's does; of a stream-ordered
// one it does not (its user saw the accesses complete). Run first in its process,
// so that its first block starts the first slab.
void sync(PoolRun& run) {
    // Freed twice: the second free names the slab's base, and must not reach the driver.
    const CUdeviceptr first = run.alloc(kMiB);
    run.free(first);
    const fakecuda_counts before = run.fake.counters();
    const CUresult twice = run.driver.mem_free(first);
    const fakecuda_counts after = run.fake.counters();
    run.checks.expect(twice == CUDA_ERROR_INVALID_VALUE, "a second cuMemFree_v2 is CUDA_ERROR_INVALID_VALUE: got " +
                                                             text(twice));
    run.checks.expect_eq("slabs freed by it", after.frees - before.frees, 0);
    run.checks.expect_eq("managed bytes the driver holds", after.live_managed_bytes, before.live_managed_bytes);
    run.checks.expect(after.live_managed_bytes > 0, "the slab is still there");

    auto synchronisations = [&] { return run.fake.counters().ctx_synchronize; };
    const std::uint64_t start = synchronisations();
    run.free(run.alloc(kMiB));
    run.checks.expect_eq("context synchronisations for cuMemFree of cuMemAlloc memory", synchronisations() - start, 1);
    run.free(run.alloc_async(kMiB, run.stream));
    CUdeviceptr pooled = 0;
    run.expect_ok(run.driver.mem_alloc_from_pool_async(&pooled, kMiB, run.default_pool, run.stream),
                  "cuMemAllocFromPoolAsync");
    run.free(pooled);
    run.checks.expect_eq("context synchronisations for cuMemFree of stream-ordered memory",
                         synchronisations() - start, 1);
}

// Pool attributes through the hooks are the library's figures for a pool it
// converted from, the driver's for others; cuMemGetInfo reports the budget. The
// test sets UVMP_BUDGET=64M.
void attributes(PoolRun& run) {
    const CUmemoryPool p0 = run.default_pool;
    const CUdeviceptr a = run.alloc_async(3 * kMiB, run.stream);
    const CUdeviceptr b = run.alloc_async(kMiB, run.stream);
    const CUdeviceptr plain = run.alloc(2 * kMiB);
    run.checks.expect_eq("USED_MEM_CURRENT: the live stream-ordered blocks", run.figure(p0, CU_MEMPOOL_ATTR_USED_MEM_CURRENT),
                         4 * kMiB);
    run.checks.expect_eq("USED_MEM_HIGH", run.figure(p0, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 4 * kMiB);
    uvmp_stats s = run.stats();
    run.checks.expect(s.pool_reserved_bytes > 0, "the library holds slabs");
    // Reserved: the 2 MiB chunks of the slabs that blocks have covered (a at
    // 0-3M, b at 3-4M, plain at 4-6M: three chunks), not the slabs' address space.
    run.checks.expect_eq("RESERVED_MEM_CURRENT: the chunks blocks covered", run.figure(p0, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT),
                         6 * kMiB);
    run.checks.expect(6 * kMiB < s.pool_reserved_bytes, "the slabs' address space is larger");
    run.checks.expect_eq("RESERVED_MEM_HIGH", run.figure(p0, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 6 * kMiB);

    std::size_t free_bytes = 0, total_bytes = 0;
    run.expect_ok(run.driver.mem_get_info(&free_bytes, &total_bytes), "cuMemGetInfo_v2");
    run.checks.expect_eq("cuMemGetInfo total: the budget", total_bytes, 64 * kMiB);
    run.checks.expect_eq("cuMemGetInfo free: the budget less the live blocks", free_bytes, 58 * kMiB);

    run.free_async(b, run.stream);
    run.checks.expect_eq("USED_MEM_CURRENT after a free", run.figure(p0, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 3 * kMiB);
    run.checks.expect_eq("USED_MEM_HIGH after a free", run.figure(p0, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 4 * kMiB);
    run.checks.expect(run.set_figure(p0, CU_MEMPOOL_ATTR_USED_MEM_HIGH, 5) == CUDA_ERROR_INVALID_VALUE,
                      "USED_MEM_HIGH cannot be set to anything but 0");
    run.expect_ok(run.set_figure(p0, CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0), "resetting USED_MEM_HIGH");
    run.checks.expect_eq("USED_MEM_HIGH after the reset", run.figure(p0, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 3 * kMiB);
    run.expect_ok(run.set_figure(p0, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 12345), "setting RELEASE_THRESHOLD");
    run.checks.expect_eq("RELEASE_THRESHOLD (the driver's)", run.figure(p0, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 12345);

    // Another pool, whose one allocation passed through (made during graph capture).
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemoryPool p2 = nullptr, p3 = nullptr;
    run.expect_ok(run.driver.mem_pool_create(&p2, &props), "cuMemPoolCreate");
    run.expect_ok(run.driver.mem_pool_create(&p3, &props), "cuMemPoolCreate");
    CUstream captured = nullptr;
    if (!run.make_stream(captured)) return;
    run.fake.set_stream_capturing(captured, 1);
    CUdeviceptr native = 0;
    run.expect_ok(run.driver.mem_alloc_from_pool_async(&native, 2 * kMiB, p2, captured),
                  "cuMemAllocFromPoolAsync during capture");
    run.fake.set_stream_capturing(captured, 0);
    run.checks.expect_eq("another pool's USED_MEM_CURRENT (the driver's)", run.figure(p2, CU_MEMPOOL_ATTR_USED_MEM_CURRENT),
                         2 * kMiB);
    run.expect_ok(run.driver.mem_get_info(&free_bytes, &total_bytes), "cuMemGetInfo_v2");
    // b's freed 1 MiB stays cached, as in a native pool (RESERVED_MEM_CURRENT still reads 6 MiB).
    run.checks.expect_eq("cuMemGetInfo free: less what the pool keeps cached and the memory passed through",
                         free_bytes, 56 * kMiB);
    run.free_async(native, captured);

    // The device's current pool changed: cuMemAllocAsync counts to the new one.
    run.expect_ok(run.driver.device_set_mem_pool(0, p3), "cuDeviceSetMemPool");
    const CUdeviceptr in_p3 = run.alloc_async(kMiB, run.stream);
    run.checks.expect_eq("the current pool's USED_MEM_CURRENT", run.figure(p3, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), kMiB);
    run.checks.expect_eq("the default pool's USED_MEM_CURRENT, unchanged",
                         run.figure(p0, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 3 * kMiB);
    run.free_async(in_p3, run.stream);
    run.expect_ok(run.driver.device_set_mem_pool(0, p0), "cuDeviceSetMemPool back");

    // Trimming the default pool gives the library's free slabs back.
    run.free_async(a, run.stream);
    run.free(plain);
    run.expect_ok(run.driver.mem_pool_trim_to(p0, 0), "cuMemPoolTrimTo(0)");
    const fakecuda_counts c = run.fake.counters();
    s = run.stats();
    run.checks.expect_eq("managed bytes after the trim", c.live_managed_bytes, 0);
    run.checks.expect_eq("slabs given back by the trim", s.pool_slabs_released, s.pool_slabs_created);
    run.checks.expect_eq("RESERVED_MEM_CURRENT after the trim", run.figure(p0, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
    run.checks.expect(run.figure(p0, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) > 0, "RESERVED_MEM_HIGH keeps the peak");
    run.expect_ok(run.set_figure(p0, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0), "resetting RESERVED_MEM_HIGH");
    run.checks.expect_eq("RESERVED_MEM_HIGH after the reset", run.figure(p0, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 0);
    run.expect_ok(run.driver.mem_pool_destroy(p2), "cuMemPoolDestroy");
    run.expect_ok(run.driver.mem_pool_destroy(p3), "cuMemPoolDestroy");
}

// The physical guard counts slabs. The test sets UVMP_RESERVE=15G (a 1 GiB guard on
// the fake's 16 GiB) and UVMP_POOL_SLAB_SIZE=256M.
void guard(PoolRun& run) {
    const CUdeviceptr big = run.alloc_async(600 * kMiB, run.stream);
    CUdeviceptr refused = 0;
    const CUresult r = run.driver.mem_alloc_async(&refused, 600 * kMiB, run.stream);
    run.checks.expect(r == CUDA_ERROR_OUT_OF_MEMORY,
                      "a second 600 MiB slab past the 1 GiB guard is CUDA_ERROR_OUT_OF_MEMORY: got " + text(r));
    run.checks.expect_eq("driver cuMemAllocManaged calls", run.fake.counters().mem_alloc_managed, 1);
    run.checks.expect_eq("stats.guard_refusals", run.stats().guard_refusals, 1);
    const CUdeviceptr small = run.alloc_async(kMiB, run.stream);
    run.checks.expect_eq("a 256 MiB slab still fits beside the first", run.fake.counters().mem_alloc_managed, 2);
    run.free_async(small, run.stream);
    run.free_async(big, run.stream);
}

// Under policy none (the test sets it), what is populated on the GPU at allocation
// is the slab memory no earlier block covered, each chunk once: allocations made
// again in freed memory find their pages there. The test sets UVMP_POOL_SLAB_SIZE=64M.
void populate_once(PoolRun& run) {
    constexpr int kCount = 400;
    constexpr std::uint64_t kSize = 256 * 1024;
    constexpr std::uint64_t kChunk = 2 * kMiB;
    // The chunks blocks have covered: the pool's reserved figure.
    auto covered = [&] { return run.figure(run.default_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT); };
    // The worker populates after the allocation returns: wait until it has caught up.
    auto settled_populated = [&](std::uint64_t expected) {
        std::uint64_t populated = 0;
        for (int i = 0; i < 200; ++i) {
            populated = run.stats().bytes_populated;
            if (populated == expected) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return populated;
    };
    std::vector<CUdeviceptr> blocks;
    for (int i = 0; i < kCount; ++i) blocks.push_back(run.alloc_async(kSize, run.stream));
    const std::uint64_t first = covered();
    run.checks.expect(first >= kCount * kSize && first % kChunk == 0,
                      "the blocks cover their bytes in whole chunks (" + std::to_string(first) + " bytes)");
    run.checks.expect_eq("bytes populated: the chunks the blocks covered, each once", settled_populated(first), first);
    // Freed and made again, three times over: only chunks no block covered before
    // are populated (the pool may place some blocks in such chunks).
    for (int round = 0; round < 3; ++round) {
        for (CUdeviceptr p : blocks) run.free_async(p, run.stream);
        blocks.clear();
        for (int i = 0; i < kCount; ++i) blocks.push_back(run.alloc_async(kSize, run.stream));
    }
    // The reserved figure is one native pool's (the live high mark), no longer the
    // chunks covered: those are what populating settles at, once each.
    std::uint64_t after = run.stats().bytes_populated;
    for (int i = 0; i < 20; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const std::uint64_t now = run.stats().bytes_populated;
        if (now == after && i >= 4) break;
        after = now;
    }
    run.checks.expect(after >= covered() && after % kChunk == 0,
                      "bytes populated after three more rounds: whole chunks, at least the pool's reserved bytes (" +
                          std::to_string(after) + ")");
    run.checks.expect(after < 2 * first, "the rounds reused the covered memory (" + std::to_string(after) +
                                             " bytes covered, " + std::to_string(first) + " after the first)");
    const std::uint64_t calls = run.fake.counters().prefetch_calls;
    run.checks.expect(calls <= after / kChunk,
                      "at most a populating call a chunk (" + std::to_string(calls) + " calls)");
    for (CUdeviceptr p : blocks) run.free_async(p, run.stream);
    run.expect_ok(run.driver.stream_synchronize(run.stream), "cuStreamSynchronize");
}

// Slabs wholly free for UVMP_POOL_RELEASE_AFTER are given back at the pool's next
// call. The test sets UVMP_POOL_SLAB_SIZE=8M, UVMP_POOL_RETAIN=0 and a release
// time well below the pauses here.
void idle(PoolRun& run) {
    const CUdeviceptr small = run.alloc(kMiB);
    const CUdeviceptr big = run.alloc(16 * kMiB);  // a slab of its own
    run.checks.expect_eq("slabs made", run.stats().pool_slabs_created, 2);
    run.free(big);
    run.checks.expect_eq("slabs given back at once", run.stats().pool_slabs_released, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    run.free(small);
    const uvmp_stats s = run.stats();
    run.checks.expect_eq("slabs given back once idle long enough", s.pool_slabs_released, 1);
    run.checks.expect_eq("driver frees of slabs", run.fake.counters().frees, 1);
    run.checks.expect_eq("stats.pool_reserved_bytes: the slab just freed stays", s.pool_reserved_bytes, 8 * kMiB);
}

// The job exits with slabs held and frees pending: the library gives everything
// back at exit (the test reads the fake's report at its unloading).
void at_exit(PoolRun& run) {
    run.fake.hold_events(1);
    const CUdeviceptr plain = run.alloc(4 * kMiB);
    const CUdeviceptr ordered = run.alloc_async(kMiB, run.stream);
    run.free(plain);
    run.free_async(ordered, run.stream);
    const fakecuda_counts c = run.fake.counters();
    run.checks.expect(c.live_managed_bytes > 0, "slabs are held when the job ends");
    run.checks.expect(c.live_events > 0, "a free's event is still pending when the job ends");
}

// What an allocation and its free cost through the hooks, on the fake driver.
void timing(PoolRun& run) {
    constexpr int kPairs = 20000;
    auto time_pairs = [&](auto&& pair) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kPairs; ++i) pair(static_cast<std::uint64_t>(4096 << (i % 8)));
        const auto ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
        return ns / kPairs;
    };
    bool all_ok = true;
    const double ordered = time_pairs([&](std::uint64_t bytes) {
        CUdeviceptr p = 0;
        all_ok = all_ok && run.driver.mem_alloc_async(&p, bytes, run.stream) == CUDA_SUCCESS &&
                 run.driver.mem_free_async(p, run.stream) == CUDA_SUCCESS;
    });
    const double plain = time_pairs([&](std::uint64_t bytes) {
        CUdeviceptr p = 0;
        all_ok = all_ok && run.driver.mem_alloc(&p, bytes) == CUDA_SUCCESS && run.driver.mem_free(p) == CUDA_SUCCESS;
    });
    run.checks.expect(all_ok, "every allocation and free succeeded");
    char line[160];
    std::snprintf(line, sizeof line,
                  "allocate+free pair: %.0f ns stream-ordered (cuMemAllocAsync + cuMemFreeAsync), %.0f ns plain "
                  "(cuMemAlloc + cuMemFree), %d pairs each, 4 KiB-512 KiB",
                  ordered, plain, kPairs);
    run.checks.note(line);
}

// A kernel that touches one allocation, launched on the run's stream, and the
// library's figures once the planner has caught up.
class Toucher {
public:
    explicit Toucher(PoolRun& run) : run_(run) {
        const size_t offsets[] = {0};
        const size_t sizes[] = {8};
        kernel_ = run.fake.make_function("_Z5touchPf", 1, offsets, sizes);
        ok_ = !run.driver.launchers.empty() && run.driver.launchers.front().launch_kernel;
        run.checks.expect(ok_, "a launch entry point");
    }
    bool ok() const { return ok_; }
    void touch(CUdeviceptr p) {
        void* params[] = {&p};
        run_.expect_ok(run_.driver.launchers.front().launch_kernel(kernel_, 1, 1, 1, 32, 1, 1, 0, run_.stream, params,
                                                                   nullptr),
                       "cuLaunchKernel");
    }
    // The planner runs behind the application: its figures once `done` says so
    // (10 s at most, for a loaded machine).
    template <class Done>
    uvmp_stats settled(Done&& done) {
        uvmp_stats s = run_.stats();
        for (int i = 0; i < 1000 && !done(s); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            s = run_.stats();
        }
        return s;
    }

private:
    PoolRun& run_;
    CUfunction kernel_ = nullptr;
    bool ok_ = false;
};

// a at 0-12M and c at 12-14M, both on the GPU once touched; a then freed, and
// its 12 MiB dead once the planner has caught up. The figures then.
struct DeadBeside {
    CUdeviceptr a = 0, c = 0;
    uvmp_stats stats{};
};
DeadBeside twelve_dead_beside_two_live(PoolRun& run, Toucher& k) {
    DeadBeside out;
    out.a = run.alloc_async(12 * kMiB, run.stream);
    out.c = run.alloc_async(2 * kMiB, run.stream);
    k.touch(out.a);
    k.touch(out.c);
    run.free_async(out.a, run.stream);
    out.stats = k.settled([](const uvmp_stats& x) { return x.bytes_dead_resident == 12 * kMiB; });
    return out;
}

// Dead bytes that a freed block left on the GPU count against the budget, and a
// launch that needs their room has them evicted before anything live. The test
// sets UVMP_BUDGET=16M, UVMP_POLICY=learned and UVMP_POOL_SLAB_SIZE=64M.
void dead_bytes(PoolRun& run) {
    Toucher k(run);
    if (!k.ok()) return;
    const auto [a, c, freed] = twelve_dead_beside_two_live(run, k);
    uvmp_stats s = freed;
    run.checks.expect_eq("dead bytes after the free: a's, still on the GPU", s.bytes_dead_resident, 12 * kMiB);
    // b does not fit where a was: 14 MiB more than the 2 live ones, with 12 dead.
    const CUdeviceptr b = run.alloc_async(14 * kMiB, run.stream);
    run.checks.expect(b >= c + 2 * kMiB, "b placed past c, not over a's memory");
    // b is populated at once, but a's dead bytes, which kernels queued before
    // its free might still use, wait for the next launch's fence.
    s = k.settled([](const uvmp_stats& x) { return x.bytes_populated >= 28 * kMiB; });
    run.checks.expect_eq("a, c and then b populated", s.bytes_populated, 28 * kMiB);
    run.checks.expect_eq("no dead byte evicted before a launch", s.bytes_evicted_dead, 0);
    // The live bytes fit (16 MiB), but the budget has bound on dead ones: from
    // now on a plan may evict, so launches are fenced; before, nothing needed it.
    run.checks.expect_eq("no launch fenced while everything fit", s.launches_fenced, 0);
    k.touch(b);
    run.checks.expect(run.stats().launches_fenced >= 1, "a launch fenced once the budget bound on dead bytes");
    s = k.settled([](const uvmp_stats& x) { return x.bytes_evicted_dead == 12 * kMiB; });
    run.checks.expect_eq("dead bytes evicted to make room for b", s.bytes_evicted_dead, 12 * kMiB);
    run.checks.expect_eq("no dead bytes left on the GPU", s.bytes_dead_resident, 0);
    run.checks.expect_eq("every evicted byte dead: nothing live went", s.bytes_evicted, s.bytes_evicted_dead);
    run.checks.expect(s.bytes_held_peak <= 16 * kMiB,
                      "held at most the budget (" + std::to_string(s.bytes_held_peak) + " bytes)");
    run.free_async(b, run.stream);
    run.free_async(c, run.stream);
}

// Dead bytes given up for a new block wait for the next launch's fence; a block
// placed over them meanwhile takes them over, and they are not evicted. The test
// sets UVMP_BUDGET=16M, UVMP_POLICY=learned and UVMP_POOL_SLAB_SIZE=64M.
void dead_taken_over(PoolRun& run) {
    Toucher k(run);
    if (!k.ok()) return;
    const auto [a, c, freed] = twelve_dead_beside_two_live(run, k);
    // b past c gives up a's dead bytes to be populated; d then goes where a was.
    const CUdeviceptr b = run.alloc_async(14 * kMiB, run.stream);
    const CUdeviceptr d = run.alloc_async(4 * kMiB, run.stream);
    run.checks.expect(b > c && d == a, "b placed past c, d where a was");
    k.touch(b);
    const uvmp_stats s = k.settled([](const uvmp_stats& x) { return x.bytes_evicted_dead >= 8 * kMiB; });
    std::this_thread::sleep_for(std::chrono::milliseconds(50)); // anything more would come now
    run.checks.expect_eq("a's dead bytes evicted but for d's 4 MiB", run.stats().bytes_evicted_dead, 8 * kMiB);
    run.checks.expect_eq("nothing live evicted", s.bytes_evicted, s.bytes_evicted_dead);
    for (CUdeviceptr p : {b, c, d}) run.free_async(p, run.stream);
}

// A new block goes over dead bytes still on the GPU, not into the hole that
// fits it best, unless UVMP_POOL_PLACEMENT=best-fit. The test sets
// UVMP_BUDGET=16M, UVMP_POLICY=learned and UVMP_POOL_SLAB_SIZE=64M.
void over_dead(PoolRun& run) {
    Toucher k(run);
    if (!k.ok()) return;
    // c at 0-10M and s1 at 10-12M, on the GPU; a at 12-18M, for which the
    // budget has no room left (it is not populated, and never touched); s2 past it.
    const CUdeviceptr c = run.alloc_async(10 * kMiB, run.stream);
    const CUdeviceptr s1 = run.alloc_async(2 * kMiB, run.stream);
    k.touch(c);
    k.touch(s1);
    const CUdeviceptr a = run.alloc_async(6 * kMiB, run.stream);
    const CUdeviceptr s2 = run.alloc_async(2 * kMiB, run.stream);
    run.checks.expect(c < s1 && s1 < a && a < s2, "blocks laid out in the order made");
    run.free_async(a, run.stream);
    run.free_async(c, run.stream);
    const uvmp_stats s = k.settled([](const uvmp_stats& x) { return x.bytes_dead_resident == 10 * kMiB; });
    run.checks.expect_eq("dead bytes on the GPU: c's alone", s.bytes_dead_resident, 10 * kMiB);
    // a's hole holds 6 MiB exactly; c's is larger, but its bytes are on the GPU.
    const CUdeviceptr y = run.alloc_async(6 * kMiB, run.stream);
    const char* placement = std::getenv("UVMP_POOL_PLACEMENT");
    if (placement && std::string_view(placement) == "best-fit")
        run.checks.expect(y == a, "best fit: the new block in a's hole, the smallest that holds it");
    else
        run.checks.expect(y == c, "over dead: the new block over c's memory, still on the GPU");
    k.touch(y);
    for (CUdeviceptr p : {y, s1, s2}) run.free_async(p, run.stream);
}

// Once the budget binds, a slab left wholly free goes back to the driver at
// once: its dead bytes leave the GPU with it, never evicted. The test sets
// UVMP_BUDGET=16M, UVMP_POLICY=learned and UVMP_POOL_SLAB_SIZE=16M.
void slab_back(PoolRun& run) {
    Toucher k(run);
    if (!k.ok()) return;
    // a fills most of one slab, b most of a second: together past the budget.
    const CUdeviceptr a = run.alloc_async(12 * kMiB, run.stream);
    const CUdeviceptr b = run.alloc_async(12 * kMiB, run.stream);
    k.touch(a);
    k.touch(b);
    uvmp_stats s = k.settled([](const uvmp_stats& x) { return x.bytes_evicted >= 8 * kMiB; });
    run.checks.expect(s.bytes_evicted >= 8 * kMiB, "a evicted for b: the budget binds");
    run.free_async(a, run.stream);
    run.expect_ok(run.driver.stream_synchronize(run.stream), "cuStreamSynchronize");
    // The slab goes at the next call of the pool once a's free has completed.
    const CUdeviceptr c = run.alloc_async(1 * kMiB, run.stream);
    s = k.settled([](const uvmp_stats& x) { return x.pool_slabs_released >= 1 && x.bytes_dead_resident == 0; });
    run.checks.expect_eq("a's slab given back", s.pool_slabs_released, 1);
    run.checks.expect_eq("no dead byte left counted", s.bytes_dead_resident, 0);
    run.checks.expect_eq("no dead byte evicted", s.bytes_evicted_dead, 0);
    // A plain free leaves its slab wholly free at once: the slab goes in the
    // free itself, after the block's own dead bytes were noted.
    CUdeviceptr d = 0;
    run.expect_ok(run.driver.mem_alloc(&d, 12 * kMiB), "cuMemAlloc");
    k.touch(d);
    run.expect_ok(run.driver.stream_synchronize(run.stream), "cuStreamSynchronize");
    run.expect_ok(run.driver.mem_free(d), "cuMemFree");
    s = k.settled([](const uvmp_stats& x) { return x.pool_slabs_released >= 2 && x.bytes_dead_resident == 0; });
    std::this_thread::sleep_for(std::chrono::milliseconds(50)); // anything more would come now
    s = run.stats();
    run.checks.expect_eq("d's slab given back", s.pool_slabs_released, 2);
    run.checks.expect_eq("no dead byte of d left counted", s.bytes_dead_resident, 0);
    run.checks.expect_eq("no dead byte of d evicted", s.bytes_evicted_dead, 0);
    for (CUdeviceptr p : {b, c}) run.free_async(p, run.stream);
}

// A block made with no room to populate it is brought in by the launch that
// first names it: that move populates fresh memory and is counted so, not as a
// fetch over the link. The test sets UVMP_BUDGET=16M, UVMP_POLICY=learned and
// UVMP_POOL_SLAB_SIZE=64M.
void fresh_fetch(PoolRun& run) {
    Toucher k(run);
    if (!k.ok()) return;
    const CUdeviceptr a = run.alloc_async(12 * kMiB, run.stream);
    k.touch(a);
    uvmp_stats s = k.settled([](const uvmp_stats& x) { return x.bytes_populated >= 12 * kMiB; });
    run.checks.expect_eq("a populated when made", s.bytes_populated, 12 * kMiB);
    // b finds no room: it stays as it is until a launch names it.
    const CUdeviceptr b = run.alloc_async(12 * kMiB, run.stream);
    k.touch(b);
    s = k.settled([](const uvmp_stats& x) { return x.bytes_populated >= 24 * kMiB; });
    run.checks.expect_eq("b populated by the launch naming it", s.bytes_populated, 24 * kMiB);
    run.checks.expect_eq("nothing fetched: b had no data anywhere", s.bytes_prefetched, 0);
    run.checks.expect(s.bytes_evicted >= 8 * kMiB, "a evicted for b's room");
    // a comes back: its bytes were on the host, and that is a fetch.
    k.touch(a);
    s = k.settled([](const uvmp_stats& x) { return x.bytes_prefetched >= 8 * kMiB; });
    run.checks.expect(s.bytes_prefetched >= 8 * kMiB, "a fetched back");
    run.checks.expect_eq("no more populated", s.bytes_populated, 24 * kMiB);
    for (CUdeviceptr p : {a, b}) run.free_async(p, run.stream);
}

}  // namespace

bool is_pool_mode(std::string_view mode) {
    for (std::string_view m : {"many", "reuse", "sync", "attributes", "guard", "idle", "exit", "timing", "populate", "dead", "dead_taken", "over_dead", "slab_back", "fresh_fetch"})
        if (mode == m) return true;
    return false;
}

void run_pool_scenario(const DriverEntryPoints& driver, const FakeDriverHelpers& fake, std::string_view mode,
                       CheckList& checks) {
    PoolRun run(driver, fake, checks);
    if (!run.ok) return;
    if (mode == "many") many(run);
    else if (mode == "reuse") reuse(run);
    else if (mode == "sync") sync(run);
    else if (mode == "attributes") attributes(run);
    else if (mode == "guard") guard(run);
    else if (mode == "idle") idle(run);
    else if (mode == "populate") populate_once(run);
    else if (mode == "dead") dead_bytes(run);
    else if (mode == "over_dead") over_dead(run);
    else if (mode == "dead_taken") dead_taken_over(run);
    else if (mode == "slab_back") slab_back(run);
    else if (mode == "fresh_fetch") fresh_fetch(run);
    else if (mode == "exit") at_exit(run);
    else if (mode == "timing") timing(run);
    if (mode != "exit") run.expect_ok(driver.stream_synchronize(run.stream), "cuStreamSynchronize");
}

}  // namespace uvmp_integration

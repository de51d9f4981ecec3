#include "core/trace/analysis/mover_waits.h"

#include <catch2/catch.hpp>

using namespace uvmp::trace;

namespace {
constexpr uint64_t kGB = 1'000'000'000;
// Round rates: a GB takes 100 ms to evict, 20 ms to fetch and 10 ms to populate.
constexpr MoverRates kRates{.evict_gbps = 10, .fetch_gbps = 50, .populate_gbps = 100};
constexpr uint64_t kMs = 1'000'000;

uint64_t wait_of(const LaunchWaits& waits, uint64_t launch) {
    const auto it = waits.find(launch);
    return it == waits.end() ? 0 : it->second;
}
} // namespace

TEST_CASE("mover waits: a prefetch queued launches before behind evictions is late for its kernel", "[trace]") {
    MoverRecord record;
    // Launch 0 evicts 2 GB and prefetches 1 GB for launch 3: its batch runs
    // from 0 to 220 ms. Launches 1 and 2 queue nothing; launch 3 starts at 150 ms.
    record.batches = {{0, {.evict_bytes = 2 * kGB, .prefetch_bytes = kGB}},
                      {1, {}},
                      {2, {}},
                      {3, {.needs_prefetch_of = 0}}};
    record.kernel_starts = {{0, 0}, {1, 50 * kMs}, {2, 100 * kMs}, {3, 150 * kMs}};
    LaunchWaits waits = mover_waits(record, kRates);
    CHECK(waits == LaunchWaits{{3, 70 * kMs}});
    // Started after the batch had run, it waited for nothing.
    record.kernel_starts[3] = 300 * kMs;
    CHECK(mover_waits(record, kRates).empty());
}

TEST_CASE("mover waits: a kernel lacking chunks waits for the backlog, its evictions and its fetch", "[trace]") {
    MoverRecord record;
    record.batches = {{0, {.evict_bytes = kGB}},                                     // 0 to 100 ms
                      {1, {.evict_bytes = kGB / 2, .demand_bytes = kGB, .prefetch_bytes = 5 * kGB}}};
    record.kernel_starts = {{0, 0}, {1, 40 * kMs}};
    // Launch 1's batch begins at 100 ms, when the stream is free: 50 ms of
    // evictions and 20 of fetch later its kernel has its data. Its prefetches
    // for later launches are not waited for.
    CHECK(mover_waits(record, kRates) == LaunchWaits{{1, 130 * kMs}});
}

TEST_CASE("mover waits: pages populated before the fence run as soon as the stream reaches them", "[trace]") {
    MoverRecord record;
    record.batches = {{0, {.prefetch_bytes = kGB}},                                  // 0 to 20 ms
                      {1, {.populate_bytes = 3 * kGB, .needs_populate_of = 1}},      // populated 20 to 50 ms
                      {2, {.needs_populate_of = 1}}};
    record.kernel_starts = {{0, 0}, {1, 5 * kMs}, {2, 60 * kMs}};
    CHECK(mover_waits(record, kRates) == LaunchWaits{{1, 45 * kMs}});
}

TEST_CASE("mover waits: a batch without a kernel start starts where the one before it did", "[trace]") {
    MoverRecord record;
    record.batches = {{0, {.evict_bytes = kGB}}, {1, {.demand_bytes = kGB}}, {2, {.demand_bytes = kGB}}};
    record.kernel_starts = {{1, 10 * kMs}};
    // Launch 0 has no start before it and is left out; 1 runs its fetch from
    // 10 ms, and 2 is taken to start with it, behind it.
    CHECK(mover_waits(record, kRates) == LaunchWaits{{1, 20 * kMs}, {2, 40 * kMs}});
    CHECK(mover_waits(MoverRecord{}, kRates).empty());
}

#include "driver/worker/planner.h"

#include <catch2/catch.hpp>

// Without a driver (no libcuda here) the planner issues no move, but its
// residency model goes where the moves would take it.
using namespace uvmp;
using namespace uvmp::driver;

namespace {
constexpr uint64_t kMiB = 1ull << 20;
constexpr CUdeviceptr kBase = 0x6000'0000'0000;

struct PlannerRig {
    Stats stats;
    Registry registry;
    FencePool fences;
    Planner planner{ResidencyPolicy::DemandLru, 2 * kMiB, "", stats, registry, fences, mover()};

    void add(uint32_t id, CUdeviceptr base, uint64_t size, uint64_t budget, CUdevice device = 0) {
        planner.allocation_added({id, base, size, device, nullptr}, budget);
    }

    // A launch made on `device` naming whole allocations.
    std::optional<trace::LaunchBatch> launch(uint64_t seq, CUdevice device, std::initializer_list<uint32_t> ids) {
        PlannedLaunch planned{seq, 1, {}, nullptr, {nullptr, device}};
        for (uint32_t id : ids) planned.accesses.push_back({id, 0, 0});
        return planner.launch(planned, true);
    }

    // Its thread finds no driver and issues nothing; it outlives every rig, as
    // the library's outlives its planner.
    static Executor& mover() {
        static Executor* const executor = new Executor;
        return *executor;
    }
};
} // namespace

TEST_CASE("planner: a block placed where a populated one was freed is reused in place", "[planner]") {
    PlannerRig rig;
    rig.add(1, kBase, 8 * kMiB, 64 * kMiB); // fits: populated
    rig.planner.allocation_removed(1);
    CHECK(rig.planner.bytes_reused_in_place() == 0);
    rig.add(2, kBase, 8 * kMiB, 64 * kMiB);
    CHECK(rig.planner.bytes_reused_in_place() == 8 * kMiB);
    // Taken: freeing the new block leaves its bytes for the next one, no more.
    rig.planner.allocation_removed(2);
    rig.add(3, kBase, 12 * kMiB, 64 * kMiB);
    CHECK(rig.planner.bytes_reused_in_place() == 16 * kMiB);
}

TEST_CASE("planner: a block populated elsewhere gives up dead bytes, one placed over the rest reuses them", "[planner]") {
    PlannerRig rig;
    rig.add(1, kBase, 8 * kMiB, 10 * kMiB);
    rig.planner.allocation_removed(1);
    CHECK(rig.stats.bytes_dead_resident == 8 * kMiB);
    // 4 MiB populated elsewhere: 2 MiB of the dead ones go (the top of the range).
    rig.add(2, kBase + (1ull << 30), 4 * kMiB, 10 * kMiB);
    CHECK(rig.stats.bytes_dead_resident == 6 * kMiB);
    rig.add(3, kBase, 8 * kMiB, 10 * kMiB);
    CHECK(rig.planner.bytes_reused_in_place() == 6 * kMiB);
    CHECK(rig.stats.bytes_dead_resident == 0);
    CHECK(rig.stats.bytes_held_peak == 10 * kMiB);
}

TEST_CASE("planner: a slab given back holds no dead bytes to reuse", "[planner]") {
    PlannerRig rig;
    rig.add(1, kBase, 8 * kMiB, 64 * kMiB);
    rig.planner.allocation_removed(1);
    rig.planner.slab_changed(0, kBase, 512 * kMiB);
    rig.add(2, kBase, 8 * kMiB, 64 * kMiB);
    CHECK(rig.planner.bytes_reused_in_place() == 0);
}

TEST_CASE("planner: a block that did not fit when made leaves nothing to reuse", "[planner]") {
    PlannerRig rig;
    rig.add(1, kBase, 16 * kMiB, 8 * kMiB); // larger than the budget: not populated
    rig.planner.allocation_removed(1);
    rig.add(2, kBase, 4 * kMiB, 8 * kMiB);
    CHECK(rig.planner.bytes_reused_in_place() == 0);
}

TEST_CASE("planner: a launch is planned on its own device and never makes room on another", "[planner]") {
    PlannerRig rig;
    rig.add(1, kBase, 8 * kMiB, 8 * kMiB, 0);                  // device 0's budget, full
    rig.add(2, kBase + (1ull << 30), 8 * kMiB, 8 * kMiB, 0);   // does not fit: not resident
    rig.add(3, kBase + (2ull << 30), 4 * kMiB, 8 * kMiB, 1);   // device 1's, resident
    // Device 1's kernel names device 0's allocation first, as a kernel reading a peer's memory
    // may: device 0's model must not fetch it there, nor evict allocation 1 for it.
    rig.launch(0, 1, {2, 3});
    rig.launch(1, 0, {1});
    const DeviceStats* device0 = rig.stats.used_device(0);
    const DeviceStats* device1 = rig.stats.used_device(1);
    REQUIRE(device0);
    REQUIRE(device1);
    CHECK(device1->launches_planned == 1);
    CHECK(device0->launches_planned == 1);
    // Everything each launch needed of its own device was resident already.
    CHECK(rig.stats.bytes_demand_estimated == 0);
    CHECK(device0->bytes_resident == 8 * kMiB);
    CHECK(device1->bytes_resident == 4 * kMiB);
}

TEST_CASE("planner: a launch of no known device is planned where its first allocation is", "[planner]") {
    PlannerRig rig;
    rig.add(1, kBase, 4 * kMiB, 8 * kMiB, 1);
    rig.launch(0, -1, {1});
    const DeviceStats* device1 = rig.stats.used_device(1);
    REQUIRE(device1);
    CHECK(device1->launches_planned == 1);
}

TEST_CASE("planner: a launch tells what it queued and which launches' moves bring what its kernel names",
          "[planner]") {
    PlannerRig rig;
    rig.add(1, kBase, 8 * kMiB, 8 * kMiB);                // fills the budget: populated
    rig.add(2, kBase + (1ull << 30), 6 * kMiB, 8 * kMiB); // does not fit: not resident
    const auto populated = rig.launch(0, 0, {1});
    REQUIRE(populated);
    CHECK(populated->populate_bytes == 8 * kMiB); // queued just before it
    CHECK(populated->needs_populate_of == std::optional<uint64_t>{0});
    CHECK(populated->demand_bytes == 0);
    CHECK(populated->evict_bytes == 0);
    CHECK_FALSE(populated->needs_prefetch_of);
    const auto resident = rig.launch(1, 0, {1});
    REQUIRE(resident);
    CHECK(resident->populate_bytes == 0);
    CHECK(resident->needs_populate_of == std::optional<uint64_t>{0}); // the batch that populated it
    const auto lacking = rig.launch(2, 0, {2});
    REQUIRE(lacking);
    CHECK(lacking->demand_bytes == 6 * kMiB);
    CHECK(lacking->evict_bytes == 6 * kMiB);
    CHECK_FALSE(lacking->needs_populate_of);
    // Unmeasured, nothing is told.
    PlannedLaunch unmeasured{3, 1, {{1, 0, 0}}, nullptr, {nullptr, 0}};
    CHECK_FALSE(rig.planner.launch(unmeasured, false));
}

TEST_CASE("planner: a kernel names chunks the learned policy prefetched launches before it", "[planner]") {
    Stats stats;
    Registry registry;
    FencePool fences;
    Planner planner{ResidencyPolicy::Learned, 2 * kMiB, "", stats, registry, fences, PlannerRig::mover()};
    constexpr uint64_t kBudget = 8 * kMiB;
    for (uint32_t id = 1; id <= 4; ++id)
        planner.allocation_added({id, kBase + id * (1ull << 30), 4 * kMiB, 0, nullptr}, kBudget);
    // The same loop over twice the budget, again and again: the policy learns it
    // and prefetches each allocation ahead of the launch that names it.
    uint64_t seq = 0, prefetched = 0, needing = 0;
    for (int round = 0; round < 12; ++round)
        for (uint32_t id = 1; id <= 4; ++id) {
            const auto batch = planner.launch({seq, id, {{id, 0, 0}}, nullptr, {nullptr, 0}}, true);
            REQUIRE(batch);
            prefetched += batch->prefetch_bytes;
            if (batch->needs_prefetch_of) {
                ++needing;
                CHECK(*batch->needs_prefetch_of < seq);
            }
            ++seq;
        }
    CHECK(prefetched > 0);
    CHECK(needing > 0);
}

TEST_CASE("planner: launches naming host-homed blocks count what they name, written first, read after",
          "[planner]") {
    PlannerRig rig;
    rig.add(1, kBase, 8 * kMiB, 64 * kMiB);
    rig.planner.host_allocation_added(2, 4 * kMiB);
    // A launch naming only host-homed data, before and after one naming both homes.
    rig.launch(1, 0, {2});
    rig.launch(2, 0, {1, 2});
    CHECK(rig.stats.remote_write_bytes_named == 4 * kMiB);
    CHECK(rig.stats.remote_read_bytes_named == 4 * kMiB);
    // Freed: a later launch naming its id (a stale pointer) counts nothing.
    rig.planner.host_allocation_removed(2);
    rig.launch(3, 0, {1, 2});
    CHECK(rig.stats.remote_read_bytes_named == 4 * kMiB);
    // The GPU-homed block is planned as ever.
    CHECK(rig.stats.device(0).launches_planned == 3);
}

#include "driver/planner.h"

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

    void add(uint32_t id, CUdeviceptr base, uint64_t size, uint64_t budget) {
        planner.allocation_added({id, base, size, 0, nullptr}, budget);
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

TEST_CASE("planner: reuse in place takes the dead bytes whole, past a full budget", "[planner]") {
    // They are on the GPU already; the next launch's plan evicts back to the budget.
    PlannerRig rig;
    rig.add(1, kBase, 8 * kMiB, 10 * kMiB);
    rig.planner.allocation_removed(1);
    rig.add(2, kBase + (1ull << 30), 4 * kMiB, 10 * kMiB); // populated elsewhere: 6 MiB left
    rig.add(3, kBase, 8 * kMiB, 10 * kMiB);
    CHECK(rig.planner.bytes_reused_in_place() == 8 * kMiB);
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

#include "core/model/reuse_in_place.h"
#include "core/policy/policy.h"

#include <catch2/catch.hpp>

#include <array>

using namespace uvmp;

namespace {
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBase = 0x6000'0000'0000;

ChunkRange chunks_of(const Residency& r, uint32_t id) {
    return {r.first_chunk(id), r.first_chunk(id) + r.chunk_count(id) - 1};
}

// Adds allocation `id` of `size` at `address` and places it over what `reuse` remembers.
uint64_t add_and_place(Residency& r, ReuseInPlace& reuse, uint32_t id, uint64_t address, uint64_t size) {
    const auto chunks = r.add_allocation(id, size);
    REQUIRE(chunks);
    return reuse.place(r, *chunks, address, 0);
}

// Plans one launch that names all of `access`'s allocation, as the library does.
Plan plan_launch(Policy& policy, Residency& r, const trace::Access& access, const std::vector<ChunkRange>& ranges,
                 uint64_t step) {
    LaunchView view;
    view.step = step;
    view.accesses = {&access, 1};
    view.ranges = ranges;
    Plan plan;
    r.pin_launch(ranges);
    policy.plan(view, r, plan);
    r.unpin_launch();
    return plan;
}

void remove(Residency& r, ReuseInPlace& reuse, uint32_t id, uint64_t address, uint64_t step = 0) {
    reuse.note_removal(r, id, address, step);
    REQUIRE(r.remove_allocation(id));
}
} // namespace

TEST_CASE("reuse in place: a block placed where a resident one was freed is resident, and nothing moved", "[reuse]") {
    Residency r(64 * kMiB, 2 * kMiB, ChunkIds::Reused);
    ReuseInPlace reuse;
    const auto first = r.add_allocation(1, 8 * kMiB);
    r.make_resident(*first, 0);
    remove(r, reuse, 1, kBase);
    CHECK(r.resident_bytes() == 0);
    CHECK(reuse.bytes() == 8 * kMiB);
    CHECK(r.dead_bytes() == 8 * kMiB); // they still hold the GPU's memory
    CHECK(r.held_bytes() == 8 * kMiB);
    CHECK(add_and_place(r, reuse, 2, kBase, 8 * kMiB) == 8 * kMiB);
    CHECK(r.missing_bytes(chunks_of(r, 2)) == 0);
    CHECK(r.resident_bytes() == 8 * kMiB);
    CHECK(r.held_bytes() == 8 * kMiB);
    CHECK(r.peak_held_bytes() == 8 * kMiB); // never both at once
    CHECK(reuse.bytes() == 0); // taken: a later block there finds nothing
    CHECK(add_and_place(r, reuse, 3, kBase + 8 * kMiB, 2 * kMiB) == 0);
}

TEST_CASE("reuse in place: only the freed block's resident chunks stay, and only whole chunks are taken", "[reuse]") {
    Residency r(64 * kMiB, 2 * kMiB, ChunkIds::Reused);
    ReuseInPlace reuse;
    const auto first = r.add_allocation(1, 8 * kMiB);
    r.make_resident(ChunkRange{first->first, first->first}, 0);         // bytes 0-2M
    r.make_resident(ChunkRange{first->first + 2, first->first + 3}, 0); // bytes 4-8M
    remove(r, reuse, 1, kBase);
    CHECK(reuse.ranges() == 2);
    CHECK(reuse.bytes() == 6 * kMiB);
    // A block 1 MiB further on: its chunks are [1M,3M) [3M,5M) [5M,7M) [7M,8M);
    // the last two lie in the dead range 4-8M, the first two do not.
    const auto second = r.add_allocation(2, 7 * kMiB);
    CHECK(reuse.place(r, *second, kBase + 1 * kMiB, 0) == 3 * kMiB);
    CHECK_FALSE(r.is_resident(second->first));
    CHECK_FALSE(r.is_resident(second->first + 1));
    CHECK(r.is_resident(second->first + 2));
    CHECK(r.is_resident(second->first + 3));
    // What the block covers is forgotten, taken or not; 0-1M stays dead and resident.
    CHECK(reuse.ranges() == 1);
    CHECK(reuse.bytes() == 1 * kMiB);
    CHECK(add_and_place(r, reuse, 3, kBase, 512 * 1024) == 512 * 1024);
    CHECK(reuse.bytes() == 512 * 1024);
}

TEST_CASE("reuse in place: neighbours freed apart serve one block placed over both", "[reuse]") {
    Residency r(64 * kMiB, 2 * kMiB, ChunkIds::Reused);
    ReuseInPlace reuse;
    for (uint32_t id : {1u, 2u}) r.make_resident(*r.add_allocation(id, 4 * kMiB), 0);
    remove(r, reuse, 2, kBase + 4 * kMiB);
    remove(r, reuse, 1, kBase);
    CHECK(reuse.ranges() == 1);
    CHECK(add_and_place(r, reuse, 3, kBase, 8 * kMiB) == 8 * kMiB);
    CHECK(reuse.ranges() == 0);
}

TEST_CASE("reuse in place: a block placed over dead GPU memory takes it whole, past a full budget", "[reuse]") {
    // The bytes are on the GPU whatever the model counts: the block finds them
    // resident, and the budget shows the excess until a plan makes room.
    Residency r(10 * kMiB, 2 * kMiB, ChunkIds::Reused);
    ReuseInPlace reuse;
    r.make_resident(*r.add_allocation(1, 10 * kMiB), 0);
    remove(r, reuse, 1, kBase);
    r.make_resident(*r.add_allocation(2, 4 * kMiB), 0); // elsewhere: 6 MiB of the budget left
    const auto third = r.add_allocation(3, 9 * kMiB);
    CHECK(reuse.place(r, *third, kBase, 0) == 9 * kMiB);
    CHECK(r.missing_bytes(*third) == 0);
    CHECK(r.resident_bytes() == 13 * kMiB);
    CHECK(r.over_budget(0));
    CHECK(r.free_bytes() == 0);
    // The block's bytes are forgotten, the 1 MiB past it is not.
    CHECK(reuse.bytes() == 1 * kMiB);
}

TEST_CASE("reuse in place: the next launch's plan evicts back to the budget, sparing the launch", "[reuse]") {
    for (const PolicyKind kind : {PolicyKind::DemandLru, PolicyKind::Learned}) {
        Residency r(10 * kMiB, 2 * kMiB, ChunkIds::Reused);
        ReuseInPlace reuse;
        const auto policy = kind == PolicyKind::Learned ? make_learned_policy() : make_demand_lru_policy();
        r.keep_recency_order(policy->reads_recency_order());
        r.make_resident(*r.add_allocation(1, 8 * kMiB), 0);
        remove(r, reuse, 1, kBase);
        const auto old = r.add_allocation(2, 6 * kMiB);
        r.make_resident(*old, 1);
        const auto fresh = r.add_allocation(3, 8 * kMiB);
        policy->on_allocation_added(*fresh);
        CHECK(reuse.place(r, *fresh, kBase, 2) == 8 * kMiB);
        REQUIRE(r.resident_bytes() == 14 * kMiB);

        const trace::Access access{3, 0, 0};
        std::vector<ChunkRange> ranges;
        r.launch_ranges({&access, 1}, ranges);
        const Plan plan = plan_launch(*policy, r, access, ranges, 3);
        CAPTURE(policy_kind_name(kind));
        CHECK(plan.demand.empty());
        CHECK(Plan::bytes(plan.evict, r) == 4 * kMiB);
        CHECK(r.resident_bytes() == 10 * kMiB);
        CHECK(r.missing_bytes(*fresh) == 0);
    }
}

TEST_CASE("reuse in place: forgotten memory (a slab given back) is not reused", "[reuse]") {
    Residency r(64 * kMiB, 2 * kMiB, ChunkIds::Reused);
    ReuseInPlace reuse;
    r.make_resident(*r.add_allocation(1, 16 * kMiB), 0);
    remove(r, reuse, 1, kBase);
    reuse.forget(r, kBase + 4 * kMiB, 8 * kMiB);
    CHECK(reuse.ranges() == 2);
    CHECK(reuse.bytes() == 8 * kMiB);
    CHECK(add_and_place(r, reuse, 2, kBase, 16 * kMiB) == 8 * kMiB);
    reuse.forget(r, kBase, 64 * kMiB);
    CHECK(reuse.bytes() == 0);
    CHECK(r.dead_bytes() == 0);
}

TEST_CASE("reuse in place: a block freed while not resident leaves nothing to reuse", "[reuse]") {
    Residency r(64 * kMiB, 2 * kMiB, ChunkIds::Reused);
    ReuseInPlace reuse;
    const auto first = r.add_allocation(1, 8 * kMiB);
    r.make_resident(*first, 0);
    r.evict(*first);
    remove(r, reuse, 1, kBase);
    CHECK(reuse.ranges() == 0);
    CHECK(add_and_place(r, reuse, 2, kBase, 8 * kMiB) == 0);
    CHECK(r.resident_bytes() == 0);
}

TEST_CASE("reuse in place: dead bytes count against the budget", "[reuse]") {
    Residency r(16 * kMiB, 2 * kMiB, ChunkIds::Reused);
    ReuseInPlace reuse;
    r.make_resident(*r.add_allocation(1, 10 * kMiB), 0);
    remove(r, reuse, 1, kBase);
    r.make_resident(*r.add_allocation(2, 4 * kMiB), 0);
    CHECK(r.held_bytes() == 14 * kMiB);
    CHECK(r.free_bytes() == 2 * kMiB);
    CHECK(r.over_budget(4 * kMiB));
    CHECK_FALSE(r.over_budget(2 * kMiB));
    CHECK(r.peak_held_bytes() == 14 * kMiB);
}

TEST_CASE("reuse in place: shedding takes the longest dead first, a range's top in whole chunks", "[reuse]") {
    Residency r(64 * kMiB, 2 * kMiB, ChunkIds::Reused);
    ReuseInPlace reuse;
    // Block 1 (8 MiB at 0) dies at step 5, block 2 (8 MiB at 16M) at step 3,
    // block 3 (3 MiB at 32M) at step 1.
    r.make_resident(*r.add_allocation(1, 8 * kMiB), 0);
    r.make_resident(*r.add_allocation(2, 8 * kMiB), 0);
    r.make_resident(*r.add_allocation(3, 3 * kMiB), 0);
    remove(r, reuse, 3, kBase + 32 * kMiB, 1);
    remove(r, reuse, 2, kBase + 16 * kMiB, 3);
    remove(r, reuse, 1, kBase, 5);
    REQUIRE(r.dead_bytes() == 19 * kMiB);
    std::vector<std::pair<uint64_t, uint64_t>> evicted;
    const auto record = [&](uint64_t address, uint64_t size) { evicted.emplace_back(address - kBase, size); };

    // 4 MiB wanted: block 3 whole, then 1 MiB more, a whole chunk from the top of block 2.
    CHECK(reuse.shed(r, 4 * kMiB, record) == 5 * kMiB);
    REQUIRE(evicted.size() == 2);
    CHECK(evicted[0] == std::pair<uint64_t, uint64_t>{32 * kMiB, 3 * kMiB});
    CHECK(evicted[1] == std::pair<uint64_t, uint64_t>{22 * kMiB, 2 * kMiB});
    CHECK(r.dead_bytes() == 14 * kMiB);
    CHECK(reuse.bytes() == 14 * kMiB);

    // What is left of block 2 goes before block 1.
    evicted.clear();
    CHECK(reuse.shed(r, 64 * kMiB, record) == 14 * kMiB);
    REQUIRE(evicted.size() == 2);
    CHECK(evicted[0] == std::pair<uint64_t, uint64_t>{16 * kMiB, 6 * kMiB});
    CHECK(evicted[1] == std::pair<uint64_t, uint64_t>{0, 8 * kMiB});
    CHECK(r.dead_bytes() == 0);
    CHECK(reuse.ranges() == 0);
    // A block placed over shed memory finds nothing resident.
    CHECK(add_and_place(r, reuse, 4, kBase, 8 * kMiB) == 0);
}

TEST_CASE("reuse in place: a launch's plan gives up dead bytes before it evicts live ones", "[reuse]") {
    for (const PolicyKind kind : {PolicyKind::DemandLru, PolicyKind::Learned}) {
        CAPTURE(policy_kind_name(kind));
        Residency r(16 * kMiB, 2 * kMiB, ChunkIds::Reused);
        ReuseInPlace reuse;
        uint64_t shed = 0;
        reuse.give_up_through(r, [&](uint64_t, uint64_t bytes) { shed += bytes; });
        const auto policy = kind == PolicyKind::Learned ? make_learned_policy() : make_demand_lru_policy();
        r.keep_recency_order(policy->reads_recency_order());
        r.make_resident(*r.add_allocation(1, 8 * kMiB), 0);
        remove(r, reuse, 1, kBase, 0);
        const auto live = r.add_allocation(2, 8 * kMiB);
        policy->on_allocation_added(*live);
        r.make_resident(*live, 1);
        const auto fresh = r.add_allocation(3, 6 * kMiB); // elsewhere: not resident
        policy->on_allocation_added(*fresh);
        REQUIRE(r.held_bytes() == 16 * kMiB);

        const trace::Access access{3, 0, 0};
        std::vector<ChunkRange> ranges;
        r.launch_ranges({&access, 1}, ranges);
        const Plan plan = plan_launch(*policy, r, access, ranges, 2);
        CHECK(shed == 6 * kMiB);
        CHECK(plan.evict.empty());
        CHECK(r.missing_bytes(*live) == 0);
        CHECK(r.missing_bytes(*fresh) == 0);
        CHECK(r.held_bytes() == 16 * kMiB);
        CHECK(r.dead_bytes() == 2 * kMiB);
        // Without a place to give them up, dead bytes stay and live ones go.
        r.set_dead_room(nullptr);
        const auto more = r.add_allocation(4, 4 * kMiB);
        policy->on_allocation_added(*more);
        const trace::Access other{4, 0, 0};
        r.launch_ranges({&other, 1}, ranges);
        const Plan second = plan_launch(*policy, r, other, ranges, 3);
        CHECK(Plan::bytes(second.evict, r) == 4 * kMiB);
        CHECK(r.dead_bytes() == 2 * kMiB);
    }
}

TEST_CASE("reuse in place: once the budget binds, it tells the pool where dead bytes lie, clipped and in address order", "[reuse][placement]") {
    Residency r(64 * kMiB, 2 * kMiB);
    ReuseInPlace reuse;
    const auto a = r.add_allocation(1, 8 * kMiB);
    const auto b = r.add_allocation(2, 8 * kMiB);
    const auto c = r.add_allocation(3, 8 * kMiB);
    REQUIRE((a && b && c));
    r.make_resident(*a, 0);
    r.make_resident(*c, 0);
    // b is not resident: freeing it leaves nothing on the GPU.
    for (uint32_t id : {1u, 2u, 3u}) {
        reuse.note_removal(r, id, kBase + (id - 1) * 8 * kMiB, 1);
        r.remove_allocation(id);
    }
    std::array<uvmp::pool::Extent, 4> out;
    // Nothing until the budget binds: no dead byte would ever have to move.
    CHECK(reuse.resident_dead(kBase, kBase + 24 * kMiB, out) == 0);
    CHECK(reuse.give_up(0) == 0);
    REQUIRE(reuse.resident_dead(kBase, kBase + 24 * kMiB, out) == 2);
    CHECK(out[0].begin == kBase);
    CHECK(out[0].end == kBase + 8 * kMiB);
    CHECK(out[1].begin == kBase + 16 * kMiB);
    CHECK(out[1].end == kBase + 24 * kMiB);
    REQUIRE(reuse.resident_dead(kBase + 4 * kMiB, kBase + 20 * kMiB, out) == 2);
    CHECK(out[0].begin == kBase + 4 * kMiB);
    CHECK(out[1].end == kBase + 20 * kMiB);
    CHECK(reuse.resident_dead(kBase + 8 * kMiB, kBase + 16 * kMiB, out) == 0);
    CHECK(reuse.resident_dead(kBase, kBase + 24 * kMiB, std::span(out).first(1)) == 1);
    // A block placed there takes the bytes: they are no longer dead.
    const auto d = r.add_allocation(4, 8 * kMiB);
    REQUIRE(d);
    reuse.place(r, *d, kBase, 2);
    REQUIRE(reuse.resident_dead(kBase, kBase + 24 * kMiB, out) == 1);
    CHECK(out[0].begin == kBase + 16 * kMiB);
}

TEST_CASE("reuse in place: a block the pool freed counts as dead and resident until its removal is noted",
          "[reuse][placement]") {
    Residency r(64 * kMiB, 2 * kMiB);
    ReuseInPlace reuse;
    const auto a = r.add_allocation(1, 8 * kMiB);
    REQUIRE(a);
    r.make_resident(ChunkRange{a->first, a->first + 1}, 0); // its first 4 MiB
    std::array<uvmp::pool::Extent, 4> out;
    // Before the budget binds the pool places by best fit: nothing is presumed.
    reuse.block_freed(kBase, kBase + 8 * kMiB);
    CHECK(reuse.presumed() == 0);
    reuse.give_up(0);
    // The pool frees the block; the planner has not heard of it yet.
    reuse.block_freed(kBase, kBase + 8 * kMiB);
    CHECK(reuse.presumed() == 1);
    REQUIRE(reuse.resident_dead(kBase, kBase + 16 * kMiB, out) == 1);
    CHECK(out[0].begin == kBase);
    CHECK(out[0].end == kBase + 8 * kMiB);
    CHECK(reuse.bytes() == 0); // presumed bytes are never held nor evicted
    CHECK(r.dead_bytes() == 0);
    // The removal noted: what is known replaces what was presumed.
    reuse.note_removal(r, 1, kBase, 1);
    r.remove_allocation(1);
    CHECK(reuse.presumed() == 0);
    REQUIRE(reuse.resident_dead(kBase, kBase + 16 * kMiB, out) == 1);
    CHECK(out[0].end == kBase + 4 * kMiB);
}

TEST_CASE("reuse in place: presumed and known dead memory read as one list, and a block placed there takes its part",
          "[reuse][placement]") {
    Residency r(64 * kMiB, 2 * kMiB);
    ReuseInPlace reuse;
    reuse.give_up(0);
    const auto a = r.add_allocation(1, 4 * kMiB);
    REQUIRE(a);
    r.make_resident(*a, 0);
    reuse.note_removal(r, 1, kBase + 4 * kMiB, 1); // known: [4M, 8M)
    r.remove_allocation(1);
    reuse.block_freed(kBase + 8 * kMiB, kBase + 12 * kMiB);  // touches it
    reuse.block_freed(kBase + 16 * kMiB, kBase + 20 * kMiB); // apart
    std::array<uvmp::pool::Extent, 4> out;
    REQUIRE(reuse.resident_dead(kBase, kBase + 32 * kMiB, out) == 2);
    CHECK(out[0].begin == kBase + 4 * kMiB);
    CHECK(out[0].end == kBase + 12 * kMiB);
    CHECK(out[1].begin == kBase + 16 * kMiB);
    CHECK(out[1].end == kBase + 20 * kMiB);
    // A block placed over the first 2 MiB of the apart one takes them.
    const auto b = r.add_allocation(2, 2 * kMiB);
    REQUIRE(b);
    reuse.place(r, *b, kBase + 16 * kMiB, 2);
    REQUIRE(reuse.resident_dead(kBase + 16 * kMiB, kBase + 32 * kMiB, out) == 1);
    CHECK(out[0].begin == kBase + 18 * kMiB);
    // A slab given back forgets what was presumed in it; a removal the model
    // never knew drops the presumption that starts at its address.
    reuse.forget(r, kBase + 8 * kMiB, 4 * kMiB);
    reuse.note_removal(r, 99, kBase + 18 * kMiB, 3);
    CHECK(reuse.presumed() == 0);
}

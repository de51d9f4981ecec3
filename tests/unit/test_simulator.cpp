#include "core/model/chunk_next_uses.h"
#include "core/sim/simulator.h"

#include "core/model/chunk_schedule.h"
#include "core/trace/analysis/summary.h"
#include "core/trace/synthesis/synthetic.h"

#include "trace_fixtures.h"

#include <catch2/catch.hpp>


using namespace uvmp;

namespace {

using trace::fixtures::add_launch;
using trace::fixtures::loop_trace;

constexpr uint64_t kMiB = 1ull << 20;

SimResult run(const trace::Trace& t, PolicyKind policy, uint64_t budget, FaultRoom room = FaultRoom::CopyEngine,
              BlockPlacement placement = BlockPlacement::OverDead) {
    SimConfig config;
    config.budget_bytes = budget;
    config.policy = policy;
    config.fault_room = room;
    config.placement = placement;
    return simulate(t, config);
}

} // namespace

TEST_CASE("simulator: everything fits, steady steps cost compute only", "[simulator]") {
    const auto t = loop_trace(3, 64, 5, 1000);
    for (PolicyKind kind : {PolicyKind::DemandLru, PolicyKind::Belady, PolicyKind::Learned}) {
        const SimResult r = run(t, kind, 1024 * kMiB);
        INFO(r.policy);
        CHECK(r.footprint_bytes == 192 * kMiB);
        CHECK(r.evicted_bytes == 0);
        CHECK(r.demand_bytes + r.prefetched_bytes == 192 * kMiB);
        CHECK(r.steady_steps == 4);
        REQUIRE(r.steady_step_seconds.size() == 4);
        for (double step : r.steady_step_seconds) CHECK(step == Approx(3e-3));
        CHECK(r.step_seconds == Approx(3e-3));
        CHECK(r.transfer_bound_step_seconds == Approx(3e-3));
    }
}

TEST_CASE("simulator: demand-lru on a full GPU pays fault and eviction time for every byte", "[simulator]") {
    const auto t = loop_trace(3, 64, 6, 1000);
    const SimResult r = run(t, PolicyKind::DemandLru, 128 * kMiB, FaultRoom::FaultPath);
    CHECK(r.demand_bytes == 18 * 64 * kMiB);
    CHECK(r.prefetched_bytes == 0);
    CHECK(r.peak_resident_bytes <= 128 * kMiB);
    // Per step: 3 kernels, 3 x 64 MiB faulted at 9 GB/s, room made for them in
    // the fault path, a 2 MiB chunk at a time (11.5 GB/s).
    const double fault = 3 * 64.0 * kMiB / 9e9;
    const double evict = 3 * 64.0 * kMiB / 11.5e9;
    CHECK(r.step_seconds == Approx(3e-3 + fault + evict).epsilon(0.01));
}

TEST_CASE("simulator: under a budget the library's evictions leave the kernels to their faults", "[simulator]") {
    const auto t = loop_trace(3, 64, 6, 1000);
    const SimResult r = run(t, PolicyKind::DemandLru, 128 * kMiB, FaultRoom::CopyEngine);
    CHECK(r.demand_bytes == 18 * 64 * kMiB);
    CHECK(r.evicted_bytes > 0);
    // The evictions run on the copy engine beside the kernels: a step is its
    // kernels and the faults, 3 x 64 MiB at 9 GB/s.
    const double fault = 3 * 64.0 * kMiB / 9e9;
    CHECK(r.step_seconds == Approx(3e-3 + fault).epsilon(0.01));
}

TEST_CASE("simulator: chunks a launch misses are fetched by learned and belady, faulted by demand-lru", "[simulator]") {
    // One kernel of 1 ms over 64 MiB that is not on the GPU yet.
    const auto t = loop_trace(1, 64, 1, 1000);
    const double kernel = 1e-3;
    const SimResult lru = run(t, PolicyKind::DemandLru, 1024 * kMiB);
    CHECK(lru.demand_bytes == 64 * kMiB);
    CHECK(lru.demand_fetched_bytes == 0);
    CHECK(lru.total_seconds == Approx(kernel + 64.0 * kMiB / 9e9).epsilon(0.01));
    for (PolicyKind kind : {PolicyKind::Learned, PolicyKind::Belady}) {
        const SimResult r = run(t, kind, 1024 * kMiB);
        INFO(r.policy);
        // The library's worker prefetches them beside the kernel, at the speed
        // of a 64 MiB piece, and the kernel waits for them.
        CHECK(r.demand_bytes == 0);
        CHECK(r.demand_fetched_bytes == 64 * kMiB);
        CHECK(r.prefetched_bytes == 64 * kMiB);
        CHECK(r.total_seconds == Approx(kernel + 64.0 * kMiB / 48e9).epsilon(0.01));
    }
}

TEST_CASE("simulator: belady never does worse than demand-lru below the footprint", "[simulator]") {
    const auto t = loop_trace(5, 32, 8, 2000);
    const uint64_t footprint = 5 * 32 * kMiB;
    for (uint64_t budget = footprint * 3 / 10; budget < footprint; budget += footprint / 10) {
        const SimResult lru = run(t, PolicyKind::DemandLru, budget);
        const SimResult belady = run(t, PolicyKind::Belady, budget);
        INFO("budget " << budget / kMiB << " MiB");
        CHECK(belady.demand_bytes <= lru.demand_bytes);
        CHECK(belady.step_seconds <= lru.step_seconds);
        CHECK(belady.total_seconds <= lru.total_seconds);
        CHECK(belady.peak_resident_bytes <= budget);
        CHECK(lru.peak_resident_bytes <= budget);
        CHECK(belady.step_seconds >= belady.transfer_bound_step_seconds * 0.999);
    }
}

TEST_CASE("simulator: learned comes close to belady after the first iteration", "[simulator]") {
    const auto t = loop_trace(4, 64, 12, 3000);
    const uint64_t footprint = 4 * 64 * kMiB;
    for (uint64_t budget : {footprint / 2, footprint * 3 / 4}) {
        const SimResult belady = run(t, PolicyKind::Belady, budget);
        const SimResult learned = run(t, PolicyKind::Learned, budget);
        const SimResult lru = run(t, PolicyKind::DemandLru, budget);
        INFO("budget " << budget / kMiB << " MiB");
        CHECK(learned.step_seconds <= belady.step_seconds * 1.05);
        CHECK(learned.step_seconds < lru.step_seconds);
        CHECK(learned.peak_resident_bytes <= budget);
        REQUIRE(learned.prediction_hit_rate);
        CHECK(*learned.prediction_hit_rate > 0.95);
        CHECK_FALSE(belady.prediction_hit_rate);
    }
}

TEST_CASE("simulator: frees release budget and accesses to freed memory are ignored", "[simulator]") {
    auto t = loop_trace(2, 16, 3, 100);
    t.frees.push_back({0, 0, 4}); // buffer 0 freed before launch 4 (it is used again at 4)
    const SimResult r = run(t, PolicyKind::Learned, 64 * kMiB);
    CHECK(r.launches == 6);
    CHECK(r.demand_bytes + r.prefetched_bytes == 32 * kMiB);
}

TEST_CASE("simulator: a long trace stays within its budget with every policy", "[simulator]") {
    // (How fast this runs is measured by bench/drivers/sim_speed.py, not here.)
    // 40 buffers of 8 MiB, 200 launches per step each reading two of them.
    trace::Trace t;
    for (uint32_t a = 0; a < 40; ++a) t.allocs.push_back({a, 0, 8 * kMiB});
    for (uint32_t it = 0; it < 1000; ++it) {
        t.iterations.push_back({it, t.launches.size(), 0});
        for (uint32_t k = 0; k < 200; ++k) {
            const trace::Access read[] = {{k % 40, 0, 0}, {(k * 7 + 3) % 40, 0, 0}};
            add_launch(t, k, read);
        }
    }
    const ChunkSchedule schedule(t, 2 * kMiB);
    const auto bounds = iteration_bounds(t);
    for (PolicyKind kind : {PolicyKind::DemandLru, PolicyKind::Belady, PolicyKind::Learned}) {
        SimConfig config;
        config.budget_bytes = 200 * kMiB;
        config.policy = kind;
        const SimResult r = simulate(t, schedule, bounds, config);
        CHECK(r.launches == t.launches.size());
        CHECK(r.peak_resident_bytes <= config.budget_bytes);
        CHECK(r.peak_resident_bytes > config.budget_bytes / 2);
    }
}

TEST_CASE("simulator: memory allocated and freed every step is not fetched ahead", "[simulator]") {
    // Each step allocates a fresh 8 MiB buffer, uses it twice and frees it; the
    // 16 MiB weights buffer lives throughout.
    trace::Trace t;
    t.allocs.push_back({0, 0, 16 * kMiB});
    const uint32_t steps = 6;
    for (uint32_t s = 0; s < steps; ++s) {
        const uint32_t id = 1 + s;
        t.iterations.push_back({s, t.launches.size(), 0});
        t.allocs.push_back({id, 0, 8 * kMiB, trace::AllocKind::Converted, 0, 10 * s + 1, t.launches.size()});
        for (uint32_t k = 0; k < 2; ++k) {
            const trace::Access read[] = {{0, 0, 0}, {id, 0, 0}};
            add_launch(t, k, read);
        }
        t.frees.push_back({id, 10 * s + 5, t.launches.size()});
    }
    for (PolicyKind kind : {PolicyKind::DemandLru, PolicyKind::Belady, PolicyKind::Learned}) {
        const SimResult r = run(t, kind, 24 * kMiB);
        INFO(r.policy);
        CHECK(r.footprint_bytes == 24 * kMiB);
        CHECK(r.peak_resident_bytes <= 24 * kMiB);
        CHECK(r.evicted_bytes == 0);
        // The weights once, every fresh buffer on its first touch.
        CHECK(r.demand_bytes + r.prefetched_bytes == (16 + steps * 8) * kMiB);
    }
}

TEST_CASE("simulator: a freed allocation's chunk ids go to the next one, whose uses stay its own", "[simulator]") {
    // Buffer 1 (4 MiB) is used by launch 0 and freed before launch 3; buffer 2
    // (3 MiB) then takes its ids and is used by launches 3 and 4. Buffer 0 is
    // used by launches 1 and 2.
    trace::Trace t;
    t.allocs.push_back({0, 0, 2 * kMiB});
    t.allocs.push_back({1, 0, 4 * kMiB, trace::AllocKind::Converted, 0, 1, 0});
    t.frees.push_back({1, 10, 3});
    t.allocs.push_back({2, 0, 3 * kMiB, trace::AllocKind::Converted, 0, 20, 3});
    const uint32_t touched[] = {1, 0, 0, 2, 2};
    for (uint32_t i = 0; i < 5; ++i) {
        trace::Launch l;
        l.seq = i;
        l.first_access = static_cast<uint32_t>(t.accesses.size());
        l.access_count = 1;
        t.accesses.push_back({touched[i], 0, 0});
        t.launches.push_back(l);
    }
    const ChunkSchedule schedule(t, 2 * kMiB);
    CHECK(schedule.chunk_slots() == 3);
    const auto events = schedule.events();
    REQUIRE(events.size() == 4);
    CHECK(events[3].alloc_id == 2);
    CHECK(events[3].first_chunk == events[1].first_chunk);
    // Launch 0 is buffer 1's last use: its chunks are never used again, though
    // their ids are touched by launch 3.
    const ChunkNextUses& future = schedule.next_uses();
    REQUIRE(future.pieces(0).size() == 1);
    CHECK(future.pieces(0)[0].next_use() == ChunkNextUses::kNever);
    // Buffer 1's ids go to buffer 2 before launch 3; buffer 2's first use is launch 3.
    REQUIRE(future.first_uses(1).size() == 1);
    CHECK(future.first_uses(1)[0].next_use() == 0);
    CHECK(future.first_uses(1)[0].reused_before == 3);
    REQUIRE(future.first_uses(3).size() == 1);
    CHECK(future.first_uses(3)[0].next_use() == 3);
    CHECK(future.first_uses(3)[0].reused_before == ChunkNextUses::kNeverStored);
    CHECK(future.first_uses(2).empty()); // a free
    CHECK(future.first_uses(0)[0].next_use() == 1);
    CHECK(future.reuses_ids());
    CHECK(schedule.launch_bytes(3) == 3 * kMiB);
    // Touched in launches 0-4: the two ids once, at buffer 1's size, and buffer 0's.
    CHECK(schedule.touched_bytes(0, 5) == 6 * kMiB);
    CHECK(schedule.touched_bytes(3, 5) == 3 * kMiB);
    CHECK(schedule.footprint_bytes() == 6 * kMiB);
    // With room for one buffer only, buffer 1's chunks make room for buffer 0 and
    // are never fetched back for buffer 2's use of their ids: each buffer
    // arrives once.
    for (PolicyKind kind : {PolicyKind::DemandLru, PolicyKind::Belady, PolicyKind::Learned}) {
        SimConfig config;
        config.budget_bytes = 4 * kMiB;
        config.policy = kind;
        const SimResult r = simulate(t, schedule, iteration_bounds(t), config);
        INFO(r.policy);
        CHECK(r.demand_bytes + r.prefetched_bytes == 9 * kMiB);
        CHECK(r.peak_resident_bytes <= 4 * kMiB);
    }
}

TEST_CASE("simulator: allocations and frees are replayed by launch, then time, an allocation before a free of its instant",
          "[simulator]") {
    // Listed out of order, as threads recording at once can leave them.
    trace::Trace t;
    t.allocs.push_back({7, 0, 2 * kMiB, trace::AllocKind::Converted, 0, 0, 0});
    t.allocs.push_back({5, 0, 2 * kMiB, trace::AllocKind::Converted, 0, 30, 2});
    t.allocs.push_back({6, 0, 2 * kMiB, trace::AllocKind::Converted, 0, 20, 2});
    t.allocs.push_back({8, 0, 2 * kMiB, trace::AllocKind::Converted, 0, 5, 1});
    t.frees.push_back({8, 40, 2});
    t.frees.push_back({7, 20, 2});
    for (uint32_t i = 0; i < 3; ++i) {
        trace::Launch l;
        l.seq = i;
        t.launches.push_back(l);
    }
    const ChunkSchedule schedule(t, 2 * kMiB);
    std::vector<std::pair<uint32_t, bool>> order; // (id, is_free)
    for (const ChunkSchedule::AllocEvent& e : schedule.events()) order.emplace_back(e.alloc_id, e.is_free);
    const std::vector<std::pair<uint32_t, bool>> expected{{7, false}, {8, false}, {6, false},
                                                          {7, true},  {5, false}, {8, true}};
    CHECK(order == expected);
}

TEST_CASE("simulator: learned fetches ahead for a program that allocates its activations anew every step", "[simulator]") {
    // The synthetic training loop frees its activations at the end of each step
    // and allocates new ones (new ids) in the next: the same launch names other
    // allocations every step.
    trace::TrainingLoopShape shape;
    shape.steps = 40;
    shape.mark_iterations = true;
    const trace::Trace t = trace::make_training_loop(shape);
    const ChunkSchedule schedule(t, 2 * kMiB);
    const uint64_t budget = schedule.footprint_bytes() * 2 / 3;
    const SimResult learned = run(t, PolicyKind::Learned, budget);
    const SimResult lru = run(t, PolicyKind::DemandLru, budget);
    const SimResult belady = run(t, PolicyKind::Belady, budget);
    REQUIRE(learned.prediction_hit_rate);
    CHECK(*learned.prediction_hit_rate > 0.9);
    CHECK(learned.prefetched_bytes > learned.demand_bytes);
    CHECK(learned.demand_bytes < lru.demand_bytes / 2);
    CHECK(learned.step_seconds < lru.step_seconds);
    CHECK(learned.step_seconds >= belady.step_seconds * 0.999);
    CHECK(learned.peak_resident_bytes <= budget);
}

namespace {

// Block 1 (8 MiB) is used by launch 0 and freed; block 2, of the same size at
// the same address, is made before launch 1, which uses it. `between` goes in
// after the free, before the second allocation.
trace::Trace freed_and_placed_again(trace::AllocKind kind, std::vector<trace::Slab> between = {}) {
    constexpr uint64_t kAddress = 0x6000'0000'0000;
    trace::Trace t;
    t.slabs.push_back({trace::SlabAction::Created, 1, kAddress, 512 * kMiB, 0, 0, 0});
    t.allocs.push_back({1, kAddress, 8 * kMiB, kind, 0, 1, 0, 1});
    t.frees.push_back({1, 10, 1});
    for (trace::Slab& slab : between) {
        slab.time_ns = 11;
        slab.launches_before = 1;
        t.slabs.push_back(slab);
    }
    t.allocs.push_back({2, kAddress, 8 * kMiB, kind, 0, 20, 1, 1});
    for (uint32_t id : {1u, 2u}) {
        const trace::Access access{id, 0, 0};
        add_launch(t, 0, {&access, 1}, 1000);
    }
    return t;
}

} // namespace

TEST_CASE("simulator: a block placed where a resident block was freed moves nothing", "[simulator][reuse]") {
    for (PolicyKind kind : {PolicyKind::DemandLru, PolicyKind::Belady, PolicyKind::Learned}) {
        const SimResult pooled = run(freed_and_placed_again(trace::AllocKind::Pooled), kind, 64 * kMiB);
        INFO(pooled.policy);
        // The first block's first touch makes its pages (nothing was there to
        // copy), and nothing moves for the second.
        CHECK(pooled.populated_bytes == 8 * kMiB);
        CHECK(pooled.demand_bytes + pooled.prefetched_bytes == 0);
        CHECK(pooled.evicted_bytes == 0);
        CHECK(pooled.reused_bytes == 8 * kMiB);
        // Separate managed allocations, as a trace of format 1.0 has them: the
        // second is fresh memory, first touched on the host.
        const SimResult converted = run(freed_and_placed_again(trace::AllocKind::Converted), kind, 64 * kMiB);
        CHECK(converted.demand_bytes + converted.prefetched_bytes == 16 * kMiB);
        CHECK(converted.reused_bytes == 0);
    }
}

TEST_CASE("simulator: dead bytes in a slab given back or made anew are not reused", "[simulator][reuse]") {
    constexpr uint64_t kAddress = 0x6000'0000'0000;
    const trace::Slab released{trace::SlabAction::Released, 1, kAddress, 512 * kMiB};
    const trace::Slab created{trace::SlabAction::Created, 2, kAddress, 512 * kMiB};
    for (const auto& between : {std::vector{released, created}, std::vector{created}}) {
        const auto t = freed_and_placed_again(trace::AllocKind::Pooled, between);
        const ChunkSchedule schedule(t, 2 * kMiB);
        REQUIRE(schedule.slab_changes().size() == 1 + between.size());
        // Between the free (event 1) and the second allocation (event 2).
        CHECK(schedule.slab_changes().back().before_event == 2);
        // (The recorded slabs matter only where blocks stay where they were recorded.)
        const SimResult r = run(t, PolicyKind::Belady, 64 * kMiB, FaultRoom::CopyEngine, BlockPlacement::Recorded);
        CHECK(r.reused_bytes == 0);
        // Both blocks lie over memory fresh from its slab: their pages are made, nothing is copied.
        CHECK(r.populated_bytes == 16 * kMiB);
        CHECK(r.demand_bytes + r.prefetched_bytes == 0);
    }
}

namespace {
// Twelve marked steps of a synthetic training loop whose blocks come from the pool.
trace::Trace pooled_training_loop() {
    trace::TrainingLoopShape shape;
    shape.steps = 12;
    shape.mark_iterations = true;
    shape.pooled = true;
    return trace::make_training_loop(shape);
}
} // namespace

TEST_CASE("simulator: a steady step of a pooled training loop holds the budget, dead bytes counted", "[simulator][reuse]") {
    const trace::Trace pooled = pooled_training_loop();
    REQUIRE(trace::summarize(pooled).allocs_by_kind[static_cast<size_t>(trace::AllocKind::Pooled)].count > 0);
    const uint64_t peak_live = ChunkSchedule(pooled, 2 * kMiB).footprint_bytes();
    for (const uint64_t budget : {peak_live * 7 / 10, peak_live * 9 / 10}) {
        for (const PolicyKind kind : {PolicyKind::Belady, PolicyKind::Learned}) {
            const SimResult r = run(pooled, kind, budget);
            const uint64_t excess = peak_live - budget;
            INFO(policy_kind_name(kind) << ", budget " << budget / kMiB << " MiB of " << peak_live / kMiB << " MiB: "
                                        << r.step_in_bytes / kMiB << " MiB in, " << r.step_out_bytes / kMiB
                                        << " MiB out, " << r.step_dead_out_bytes / kMiB << " MiB of it dead");
            // Live and dead bytes together stay within the budget while kernels run.
            CHECK(r.peak_launch_resident_bytes <= budget);
            CHECK(r.peak_resident_bytes >= r.peak_launch_resident_bytes);
            CHECK(r.reused_bytes > 0);
            // Live bytes out: those beyond the budget at the peak, in whole
            // chunks, and a few chunks swapped there; the rest of what goes out is
            // dead memory in the way of a launch.
            // (Belady also swaps live chunks for ones needed sooner, where dead
            // bytes hold the room it would fetch them into.)
            CHECK(r.step_dead_out_bytes > 0);
            if (kind == PolicyKind::Learned) CHECK(r.step_out_bytes - r.step_dead_out_bytes <= excess * 13 / 10);
            // In: the live bytes back, and blocks placed where dead ones were shed.
            CHECK(r.step_in_bytes <= r.step_out_bytes * 11 / 10);
        }
    }
}

TEST_CASE("simulator: blocks placed over dead memory shed fewer dead bytes than best fit", "[simulator][reuse][placement]") {
    const trace::Trace pooled = pooled_training_loop();
    const uint64_t peak_live = ChunkSchedule(pooled, 2 * kMiB).footprint_bytes();
    const uint64_t budget = peak_live * 7 / 10;
    const SimResult over_dead = run(pooled, PolicyKind::Learned, budget);
    const SimResult best_fit = run(pooled, PolicyKind::Learned, budget, FaultRoom::CopyEngine, BlockPlacement::BestFit);
    INFO("over dead: " << over_dead.step_dead_out_bytes / kMiB << " MiB dead out, " << over_dead.reused_bytes / kMiB
                       << " MiB reused; best fit: " << best_fit.step_dead_out_bytes / kMiB << " MiB dead out, "
                       << best_fit.reused_bytes / kMiB << " MiB reused");
    CHECK(over_dead.reused_bytes > best_fit.reused_bytes);
    CHECK(over_dead.step_dead_out_bytes < best_fit.step_dead_out_bytes);
    CHECK(over_dead.step_seconds < best_fit.step_seconds);
    // Either way the budget holds while kernels run.
    CHECK(over_dead.peak_launch_resident_bytes <= budget);
    CHECK(best_fit.peak_launch_resident_bytes <= budget);
}

TEST_CASE("iteration bounds: a shorter last step is whole when a mark follows the last launch", "[sim]") {
    trace::Trace t;
    t.allocs.push_back({1, 0x100000, 8 * kMiB});
    const trace::Access read{1, 0, 0};
    for (uint32_t k = 0; k < 7; ++k) add_launch(t, k % 4, {&read, 1});
    t.iterations = {{0, 0, 0}, {1, 4, 0}}; // steps of 4 launches and then 3
    CHECK(iteration_bounds(t) == std::vector<uint64_t>{0, 4}); // the recording may have cut the last one off
    t.iterations.push_back({2, 7, 0});
    CHECK(iteration_bounds(t) == std::vector<uint64_t>{0, 4, 7}); // a mark after it says it ended
}

TEST_CASE("simulator: host memory a kernel reads is never placed, moved or counted on the GPU", "[simulator]") {
    using trace::fixtures::add_alloc;
    using trace::fixtures::add_launch_naming;
    trace::Trace t;
    add_alloc(t, 1, 64 * kMiB, 0);
    add_alloc(t, 2, 256 * kMiB, 0, trace::AllocKind::Host);
    for (int i = 0; i < 6; ++i) add_launch_naming(t, 1, {1, 2}, 1000);
    for (PolicyKind kind : {PolicyKind::DemandLru, PolicyKind::Learned}) {
        // A budget the host allocation alone would overflow.
        const SimResult r = run(t, kind, 128 * kMiB);
        INFO(r.policy);
        CHECK(r.footprint_bytes == 64 * kMiB);
        CHECK(r.demand_bytes + r.prefetched_bytes == 64 * kMiB);
        CHECK(r.evicted_bytes == 0);
    }
    const ChunkSchedule schedule(t, 2 * kMiB);
    CHECK(schedule.dangling_accesses() == 0);
    CHECK(schedule.launch_bytes(0) == 64 * kMiB);
}

namespace {
// Each step makes a large block X, frees it, and makes two blocks a and b that
// live into the next step, past its X: a pool placing blocks as they come puts
// a and b over X's dead memory, and X of the next step finds none that holds
// it. Every launch also reads the weights W.
trace::Trace large_block_loop(uint32_t steps) {
    using trace::fixtures::add_alloc;
    using trace::fixtures::add_free;
    using trace::fixtures::add_launch_naming;
    trace::Trace t;
    add_alloc(t, 1, 32 * kMiB, 0, trace::AllocKind::Pooled); // W
    uint32_t id = 2;
    uint32_t a_before = 0, b_before = 0;
    for (uint32_t s = 0; s < steps; ++s) {
        t.iterations.push_back({s, t.launches.size(), 0});
        const uint32_t x = id++;
        add_alloc(t, x, 64 * kMiB, t.launches.size(), trace::AllocKind::Pooled);
        add_launch_naming(t, 0, {1, x}, 1'000'000);
        if (a_before) {
            add_free(t, a_before, t.launches.size());
            add_free(t, b_before, t.launches.size());
        }
        add_launch_naming(t, 1, {1, x}, 1'000'000);
        add_free(t, x, t.launches.size());
        const uint32_t a = id++, b = id++;
        add_alloc(t, a, 24 * kMiB, t.launches.size(), trace::AllocKind::Pooled);
        add_alloc(t, b, 24 * kMiB, t.launches.size(), trace::AllocKind::Pooled);
        add_launch_naming(t, 2, {1, a, b}, 1'000'000);
        a_before = a;
        b_before = b;
    }
    return t;
}
} // namespace

TEST_CASE("simulator: a planned layout puts the later steps' blocks where they lay a step before", "[simulator][placement]") {
    const trace::Trace pooled = pooled_training_loop();
    const uint64_t peak_live = ChunkSchedule(pooled, 2 * kMiB).footprint_bytes();
    // Room for everything: the plan changes where blocks lie, not what a step costs.
    const SimResult roomy = run(pooled, PolicyKind::Learned, peak_live * 4, FaultRoom::CopyEngine, BlockPlacement::Planned);
    const SimResult roomy_over_dead = run(pooled, PolicyKind::Learned, peak_live * 4);
    CHECK(roomy.layout_blocks > 0);
    CHECK(roomy.layout_arena_bytes >= roomy.layout_peak_live_bytes);
    CHECK(roomy.layout_arena_bytes <= roomy.layout_peak_live_bytes * 11 / 10);
    // The steps after the learned one follow the plan, every planned block in its place.
    CHECK(roomy.layout_placed == roomy.layout_blocks * 10);
    CHECK(roomy.layout_displaced == 0);
    CHECK(roomy.step_seconds == Approx(roomy_over_dead.step_seconds).epsilon(0.01));
    CHECK(roomy.step_out_bytes == 0);
    for (const uint64_t budget : {peak_live * 7 / 10, peak_live * 9 / 10}) {
        const SimResult planned = run(pooled, PolicyKind::Learned, budget, FaultRoom::CopyEngine, BlockPlacement::Planned);
        CHECK(planned.peak_launch_resident_bytes <= budget);
        CHECK(planned.layout_displaced == 0);
    }
}

TEST_CASE("simulator: a planned layout keeps a block that lives into the next step apart from what it meets there", "[simulator][placement]") {
    const trace::Trace t = large_block_loop(8);
    // W, X's 64 MiB and a and b held into the next step's X: 144 MiB at most live.
    const uint64_t peak_live = ChunkSchedule(t, 2 * kMiB).footprint_bytes();
    REQUIRE(peak_live == 144 * kMiB);
    const SimResult planned = run(t, PolicyKind::Learned, peak_live, FaultRoom::CopyEngine, BlockPlacement::Planned);
    // X, a and b: the least arena, X apart from a and b of the step before.
    CHECK(planned.layout_blocks == 3);
    CHECK(planned.layout_arena_bytes == 112 * kMiB);
    CHECK(planned.layout_peak_live_bytes == 112 * kMiB);
    CHECK(planned.layout_placed == 3 * 6); // steps 2 to 7 (the plan is of step 1, the second)
    CHECK(planned.layout_displaced == 0);
    // With the budget at the peak, no byte moves in a steady step.
    CHECK(planned.step_out_bytes == 0);
    CHECK(planned.step_in_bytes == 0);
    CHECK(planned.peak_launch_resident_bytes <= peak_live);
}

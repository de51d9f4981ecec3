#include "core/learn/loop_seed.h"
#include "core/policy/policy.h"
#include "core/model/chunk_next_uses.h"
#include "core/model/chunk_schedule.h"
#include "core/trace/synthesis/synthetic.h"

#include "trace_fixtures.h"

#include <catch2/catch.hpp>

#include <random>
#include <set>
#include <vector>

using namespace uvmp;

namespace {

using trace::fixtures::loop_trace;

constexpr uint64_t kMiB = 1ull << 20;

// Random launches over a few buffers of different sizes, partial ranges included.
trace::Trace random_trace(uint32_t launches, unsigned seed) {
    std::mt19937 rng(seed);
    trace::Trace t;
    const uint64_t sizes_mib[] = {6, 3, 10, 1, 8, 4};
    for (uint32_t a = 0; a < 6; ++a) t.allocs.push_back({a, 0, sizes_mib[a] * kMiB});
    for (uint32_t i = 0; i < launches; ++i) {
        trace::Launch l;
        l.seq = i;
        l.kernel_id = rng() % 4;
        l.first_access = static_cast<uint32_t>(t.accesses.size());
        l.access_count = 1 + rng() % 2;
        for (uint32_t k = 0; k < l.access_count; ++k) {
            const uint32_t a = rng() % 6;
            const uint64_t offset = (rng() % 2) ? 0 : (rng() % sizes_mib[a]) * kMiB;
            t.accesses.push_back({a, offset, (rng() % 2) ? 0 : kMiB});
        }
        t.launches.push_back(l);
    }
    return t;
}

struct Run {
    uint64_t demand_bytes = 0;
    uint64_t prefetch_bytes = 0;
    uint64_t max_resident = 0;
    bool evicted_needed_chunk = false;
    bool launch_not_resident = false;
};

// Drives a policy as the simulator does and checks the invariants at each launch.
Run drive(Policy& policy, const trace::Trace& t, const ChunkSchedule& schedule, uint64_t budget) {
    Residency r(budget, schedule.chunk_bytes(), ChunkIds::Reused);
    for (const auto& e : schedule.events())
        if (const auto chunks = r.add_allocation(e.alloc_id, e.size)) policy.on_allocation_added(*chunks);
    Run run;
    Plan plan;
    for (uint64_t i = 0; i < schedule.launch_count(); ++i) {
        std::vector<ChunkId> chunks;
        std::vector<ChunkRange> ranges;
        // The launch's pieces as its ranges: finer than the schedule's merged ones.
        for (const ChunkNextUses::Piece& p : schedule.next_uses().pieces(i)) {
            ranges.push_back({p.first, p.last});
            for (ChunkId c = p.first; c <= p.last; ++c) chunks.push_back(c);
        }
        r.pin_launch(ranges);
        LaunchView view{i, t.launches[i].kernel_id,
                        {t.accesses.data() + t.launches[i].first_access, t.launches[i].access_count}, ranges};
        plan.clear();
        policy.plan(view, r, plan);
        const std::set<ChunkId> needed(chunks.begin(), chunks.end());
        for (const ChunkSpan& s : plan.evict)
            for (ChunkId c = s.first; c < s.first + s.count; ++c) run.evicted_needed_chunk |= needed.count(c) > 0;
        for (ChunkId c : chunks) run.launch_not_resident |= !r.is_resident(c);
        r.unpin_launch();
        run.demand_bytes += Plan::bytes(plan.demand, r);
        run.prefetch_bytes += Plan::bytes(plan.prefetch, r);
        run.max_resident = std::max(run.max_resident, r.resident_bytes());
    }
    return run;
}

} // namespace

TEST_CASE("policy: names parse both ways", "[policy]") {
    for (const char* name : {"demand-lru", "belady", "learned"}) {
        const auto kind = parse_policy_kind(name);
        REQUIRE(kind);
        CHECK(policy_kind_name(*kind) == name);
    }
    CHECK_FALSE(parse_policy_kind("lru"));
}

TEST_CASE("policy: plans coalesce adjacent chunks of one allocation only", "[policy]") {
    Residency r(0);
    r.add_allocation(1, 4 * kMiB);
    r.add_allocation(2, 4 * kMiB);
    std::vector<ChunkSpan> spans;
    for (ChunkId c : {0u, 1u, 2u, 3u, 1u}) Plan::add(spans, c, r);
    REQUIRE(spans.size() == 3);
    CHECK(spans[0].first == 0);
    CHECK(spans[0].count == 2);
    CHECK(spans[1].first == 2);
    CHECK(spans[1].count == 2);
    CHECK(Plan::bytes(spans, r) == 10 * kMiB);
}

TEST_CASE("policy: demand-lru on a loop larger than the budget faults every launch", "[policy]") {
    const auto t = loop_trace(3, 8, 10);
    const ChunkSchedule schedule(t, 2 * kMiB);
    const auto policy = make_demand_lru_policy();
    const Run run = drive(*policy, t, schedule, 16 * kMiB);
    // LRU always evicts the buffer needed next: all 30 launches fault 8 MiB.
    CHECK(run.demand_bytes == 30 * 8 * kMiB);
    CHECK(run.prefetch_bytes == 0);
    CHECK(run.max_resident <= 16 * kMiB);
}

TEST_CASE("policy: belady keeps what is needed soonest and fetches the rest ahead", "[policy]") {
    const auto t = loop_trace(3, 8, 10);
    const ChunkSchedule schedule(t, 2 * kMiB);
    const auto policy = make_belady_policy(schedule);
    const Run run = drive(*policy, t, schedule, 16 * kMiB);
    // Only the very first launch faults; every later buffer arrives ahead.
    CHECK(run.demand_bytes == 8 * kMiB);
    CHECK(run.prefetch_bytes == 29 * 8 * kMiB);
    CHECK(run.max_resident <= 16 * kMiB);
}

TEST_CASE("policy: learned fetches ahead once it has seen an iteration", "[policy]") {
    const auto t = loop_trace(3, 8, 10);
    const ChunkSchedule schedule(t, 2 * kMiB);
    const auto policy = make_learned_policy();
    const Run run = drive(*policy, t, schedule, 16 * kMiB);
    // At most the first iteration, the launch that locates the loop and one
    // iteration of predictions before they are trusted fault in.
    CHECK(run.demand_bytes <= 7 * 8 * kMiB);
    CHECK(run.demand_bytes + run.prefetch_bytes >= 30 * 8 * kMiB);
    CHECK(run.max_resident <= 16 * kMiB);
    REQUIRE(policy->prediction_hit_rate());
    CHECK(*policy->prediction_hit_rate() > 0.9);
}

TEST_CASE("policy: learned started from an earlier run's loop fetches ahead from the start", "[policy]") {
    const auto t = loop_trace(3, 8, 10);
    const ChunkSchedule schedule(t, 2 * kMiB);
    std::string why_not;
    const auto seed = loop_seed_from_trace(t, &why_not);
    REQUIRE(seed);
    CHECK(seed->launches.size() == 3);
    const auto fresh = make_learned_policy();
    const auto seeded = make_learned_policy({}, {}, &*seed);
    const Run learning = drive(*fresh, t, schedule, 16 * kMiB);
    const Run started = drive(*seeded, t, schedule, 16 * kMiB);
    // Seeded, only the launch that locates the loop and the launches before the
    // predictions are trusted (one loop's worth) fault in.
    CHECK(started.demand_bytes <= 4 * 8 * kMiB);
    CHECK(started.demand_bytes < learning.demand_bytes);
    CHECK(started.max_resident <= 16 * kMiB);
}

TEST_CASE("policy: a trace without a repeating iteration gives no seed, and says why", "[policy]") {
    auto t = loop_trace(3, 8, 1);
    t.iterations.clear();
    std::string why_not;
    CHECK_FALSE(loop_seed_from_trace(t, &why_not));
    CHECK(why_not.find("iteration") != std::string::npos);
}

TEST_CASE("policy: invariants hold for every policy on random launches", "[policy]") {
    const auto t = random_trace(3000, 42);
    const ChunkSchedule schedule(t, 1 * kMiB);
    // Every launch here fits: at most two buffers of at most 10 MiB each.
    for (uint64_t budget_mib : {20, 24, 28}) {
        std::vector<std::unique_ptr<Policy>> policies;
        policies.push_back(make_demand_lru_policy());
        policies.push_back(make_belady_policy(schedule));
        policies.push_back(make_learned_policy());
        for (auto& policy : policies) {
            INFO(policy->name() << " at " << budget_mib << " MiB");
            const Run run = drive(*policy, t, schedule, budget_mib * kMiB);
            CHECK(run.max_resident <= budget_mib * kMiB);
            CHECK_FALSE(run.evicted_needed_chunk);
            CHECK_FALSE(run.launch_not_resident);
        }
    }
}

TEST_CASE("policy: belady faults no more than demand-lru on random launches", "[policy]") {
    const auto t = random_trace(3000, 7);
    const ChunkSchedule schedule(t, 1 * kMiB);
    for (uint64_t budget_mib : {20, 24, 28, 32}) {
        const auto lru = make_demand_lru_policy();
        const auto belady = make_belady_policy(schedule);
        const Run lru_run = drive(*lru, t, schedule, budget_mib * kMiB);
        const Run belady_run = drive(*belady, t, schedule, budget_mib * kMiB);
        INFO(budget_mib << " MiB");
        CHECK(belady_run.demand_bytes <= lru_run.demand_bytes);
        CHECK(belady_run.demand_bytes + belady_run.prefetch_bytes <= lru_run.demand_bytes);
    }
}

TEST_CASE("chunk schedule: a launch's bytes count a short last chunk inside a merged range", "[policy]") {
    // Allocation 0 ends in a 1 MiB chunk; allocation 1 follows it in chunk ids, so a launch
    // touching both sees one merged range of chunks 0-2.
    trace::Trace t;
    t.allocs.push_back({0, 0, 3 * kMiB});
    t.allocs.push_back({1, 0, 2 * kMiB});
    trace::Launch l;
    l.first_access = 0;
    l.access_count = 2;
    t.accesses.push_back({0, 0, 0});
    t.accesses.push_back({1, 0, 0});
    t.launches.push_back(l);
    const ChunkSchedule schedule(t, 2 * kMiB);
    REQUIRE(schedule.launch_ranges(0).size() == 1);
    CHECK(schedule.launch_ranges(0)[0].first == 0);
    CHECK(schedule.launch_ranges(0)[0].last == 2);
    REQUIRE(schedule.next_uses().pieces(0).size() == 1);
    CHECK(schedule.next_uses().pieces(0)[0].count() == 3);
    CHECK(schedule.launch_bytes(0) == 5 * kMiB);
}

TEST_CASE("policy: learned with reused chunk ids on a job that allocates anew every step", "[policy]") {
    // As the library runs it: ids of freed activations go to the next step's,
    // and the policy is told of every allocation.
    trace::TrainingLoopShape shape;
    shape.steps = 60;
    shape.mark_iterations = true;
    const trace::Trace t = trace::make_training_loop(shape);
    const ChunkSchedule schedule(t, 2 * kMiB); // for its ordered events, ids and footprint only
    const uint64_t budget = schedule.footprint_bytes() * 2 / 3;
    Residency r(budget, 2 * kMiB, ChunkIds::Reused);
    const auto policy = make_learned_policy();
    Plan plan;
    std::vector<ChunkRange> ranges;
    uint64_t demand = 0, prefetch = 0, peak_live_chunks = 0, live_chunks = 0, chunks_allocated = 0;
    bool over_budget = false, needed_evicted = false, not_resident = false;
    size_t next_event = 0;
    const auto events = schedule.events();
    for (uint64_t i = 0; i < t.launches.size(); ++i) {
        for (; next_event < events.size() && events[next_event].launches_before <= i; ++next_event) {
            const auto& e = events[next_event];
            if (e.is_free) {
                live_chunks -= r.chunk_count(e.alloc_id);
                r.remove_allocation(e.alloc_id);
            } else if (const auto chunks = r.add_allocation(e.alloc_id, e.size)) {
                policy->on_allocation_added(*chunks);
                live_chunks += chunks->last - chunks->first + 1;
                chunks_allocated += chunks->last - chunks->first + 1;
            }
            peak_live_chunks = std::max(peak_live_chunks, live_chunks);
        }
        const auto accesses = t.accesses_of(t.launches[i]);
        r.launch_ranges(accesses, ranges);
        r.pin_launch(ranges);
        plan.clear();
        policy->plan({i, t.launches[i].kernel_id, accesses, ranges}, r, plan);
        for (const ChunkSpan& s : plan.evict)
            for (const ChunkRange& range : ranges)
                needed_evicted |= s.first <= range.last && range.first < s.first + s.count;
        r.unpin_launch();
        for (const ChunkRange& range : ranges) not_resident |= r.first_missing(range) <= range.last;
        demand += Plan::bytes(plan.demand, r);
        prefetch += Plan::bytes(plan.prefetch, r);
        over_budget |= r.resident_bytes() > budget;
    }
    CHECK_FALSE(over_budget);
    CHECK_FALSE(needed_evicted);
    CHECK_FALSE(not_resident);
    // Sixty steps of fresh activations, yet the ids stay within about what is
    // live at once: without reuse there would be one set of them per step.
    CHECK(r.chunk_slots() <= 2 * peak_live_chunks);
    CHECK(r.chunk_slots() < chunks_allocated / 4);
    // The schedule hands out the same ids.
    CHECK(r.chunk_slots() == schedule.chunk_slots());
    REQUIRE(policy->prediction_hit_rate());
    CHECK(*policy->prediction_hit_rate() > 0.9);
    CHECK(prefetch > demand);
}

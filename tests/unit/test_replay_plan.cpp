#include "core/replay/replay_plan.h"
#include "core/sim/simulator.h"
#include "core/trace/format/reader.h"
#include "trace_fixtures.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace uvmp;
using replay::AllocCall;
using replay::OpKind;
using trace::fixtures::add_launch;
using trace::fixtures::loop_trace;
using trace::fixtures::pooled_job;

namespace {

constexpr uint64_t kMiB = 1ull << 20;

trace::Alloc alloc(uint32_t id, uint64_t size, uint64_t launches_before, trace::AllocKind kind = trace::AllocKind::Converted) {
    trace::Alloc a;
    a.id = id;
    a.address = 0x100000000ull * id;
    a.size = size;
    a.kind = kind;
    a.launches_before = launches_before;
    return a;
}

// Appends a launch on `stream` at host time `time_ns`.
void launch(trace::Trace& t, uint32_t kernel, std::vector<trace::Access> accesses, uint64_t stream = 0,
            uint64_t time_ns = 0, uint64_t duration_ns = 0) {
    add_launch(t, kernel, accesses, duration_ns);
    t.launches.back().stream = stream;
    t.launches.back().time_ns = time_ns;
}

std::vector<OpKind> kinds(const replay::Plan& plan) {
    std::vector<OpKind> out;
    for (const replay::Op& op : plan.ops) out.push_back(op.kind);
    return out;
}

std::vector<uint32_t> touched_slots(const replay::Plan& plan, const replay::LaunchOp& l) {
    std::vector<uint32_t> out;
    for (uint32_t t = 0; t < l.touch_count; ++t) out.push_back(plan.touches[l.first_touch + t].slot);
    return out;
}

} // namespace

TEST_CASE("replay plan: the program's order, managed memory only", "[replay]") {
    trace::Trace t;
    t.allocs.push_back(alloc(1, 8 * kMiB, 0));
    t.allocs.push_back(alloc(2, 4 * kMiB, 0, trace::AllocKind::Host));
    t.allocs.push_back(alloc(3, 2 * kMiB, 1, trace::AllocKind::Pooled));
    launch(t, 0, {{1, 4096, 0}, {2, 0, 0}});
    launch(t, 1, {{3, 0, 1024}, {1, 0, 0}});
    t.frees.push_back({1, 0, 2});
    t.frees.push_back({2, 0, 2});

    const replay::Plan plan = replay::make_plan(t, {}, {});
    CHECK(kinds(plan) == std::vector<OpKind>{OpKind::Alloc, OpKind::Launch, OpKind::Alloc, OpKind::Launch, OpKind::Free});
    CHECK(plan.skipped_allocations == 1);
    CHECK(plan.skipped_accesses == 1); // the host allocation's
    REQUIRE(plan.allocs.size() == 2);
    CHECK(plan.allocs[0].call == AllocCall::Plain);
    CHECK(plan.allocs[1].call == AllocCall::StreamOrdered);
    CHECK(plan.allocs[1].bytes == 2 * kMiB);
    REQUIRE(plan.launches.size() == 2);
    REQUIRE(plan.launches[0].touch_count == 1);
    const replay::Touch& first = plan.touches[plan.launches[0].first_touch];
    CHECK(first.slot == 0);
    CHECK(first.offset == 4096);
    CHECK(first.length == 8 * kMiB - 4096); // an open length reaches the end
    // In the recorded order, a known length kept.
    CHECK(touched_slots(plan, plan.launches[1]) == std::vector<uint32_t>{1, 0});
    CHECK(plan.touches[plan.launches[1].first_touch].length == 1024);
    CHECK(plan.peak_live_bytes == 10 * kMiB);
    CHECK(plan.steps.empty());
    CHECK(plan.prologue_launches == 2);
}

TEST_CASE("replay plan: steps at the iteration bounds with their recorded times and pacing", "[replay]") {
    trace::Trace t = loop_trace(3, 4, 3, 50); // three steps of three launches, marked
    for (size_t i = 0; i < t.launches.size(); ++i) t.launches[i].time_ns = 1000 * i * i;
    const std::vector<uint64_t> bounds = iteration_bounds(t);
    REQUIRE(bounds == std::vector<uint64_t>{0, 3, 6, 9});

    const replay::Plan plan = replay::make_plan(t, bounds, {});
    REQUIRE(plan.steps.size() == 3);
    CHECK(plan.steps[0].recorded_ns == 9000);
    CHECK(plan.steps[1].recorded_ns == 36000 - 9000);
    CHECK_FALSE(plan.steps[2].recorded_ns); // nothing recorded after it
    CHECK(plan.steps[1].first_launch == 3);
    CHECK(plan.steps[1].launches == 3);
    // A boundary before each step and one after the last; the marks where they were.
    size_t boundaries = 0, marks = 0;
    for (const replay::Op& op : plan.ops) {
        boundaries += op.kind == OpKind::StepBoundary;
        marks += op.kind == OpKind::Mark;
    }
    CHECK(boundaries == 4);
    CHECK(marks == 3);
    CHECK(plan.launches[4].not_before_ns == 16000 - 9000);
    CHECK(plan.launches[4].duration_ns == 50000);
}

TEST_CASE("replay plan: a scale shrinks sizes, offsets and times alike", "[replay]") {
    trace::Trace t = loop_trace(1, 8, 2, 100);
    t.launches[1].time_ns = 4000;
    t.accesses[0].offset = 1 * kMiB;
    const replay::Plan plan = replay::make_plan(t, iteration_bounds(t), {0.25, 0});
    CHECK(plan.allocs[0].bytes == 2 * kMiB);
    const replay::Touch& touch = plan.touches[plan.launches[0].first_touch];
    CHECK(touch.offset == 256 * 1024);
    CHECK(touch.length == 7 * kMiB / 4);
    CHECK(plan.launches[0].duration_ns == 25000);
    CHECK(plan.steps[0].recorded_ns == 1000);
    CHECK_THROWS_AS(replay::make_plan(t, iteration_bounds(t), {0.0, 0}), replay::PlanError);
    CHECK_THROWS_AS(replay::make_plan(t, iteration_bounds(t), {1.5, 0}), replay::PlanError);
}

namespace {

// A weight (id 1) made before the steps; each step k makes its activation
// (id 10 + k) as it starts, uses it with the weight and the last step's
// activation, and frees the last step's: two steps, marked.
trace::Trace chained_steps() {
    trace::Trace t;
    t.allocs.push_back(alloc(1, 4 * kMiB, 0));
    t.allocs.push_back(alloc(10, 2 * kMiB, 0, trace::AllocKind::Pooled));
    launch(t, 0, {{10, 0, 0}});
    for (uint32_t k = 1; k <= 2; ++k) {
        const uint64_t start = t.launches.size();
        t.iterations.push_back({k - 1, start, 0});
        t.allocs.push_back(alloc(10 + k, 2 * kMiB, start, trace::AllocKind::Pooled));
        launch(t, 1, {{1, 0, 0}, {10 + k, 0, 0}, {10 + k - 1, 0, 0}});
        t.frees.push_back({10 + k - 1, 0, start + 1});
        launch(t, 2, {{10 + k, 0, 0}});
    }
    t.iterations.push_back({2, t.launches.size(), 0});
    return t;
}

} // namespace

TEST_CASE("replay plan: copies of the last step chain the allocation it hands on", "[replay]") {
    const trace::Trace t = chained_steps();
    const std::vector<uint64_t> bounds = iteration_bounds(t);
    REQUIRE(bounds == std::vector<uint64_t>{1, 3, 5});
    const replay::Plan plan = replay::make_plan(t, bounds, {1.0, 2});
    REQUIRE(plan.steps.size() == 4);
    CHECK_FALSE(plan.steps[1].copy);
    CHECK(plan.steps[2].copy);
    CHECK(plan.steps[3].copy);
    CHECK(plan.steps[3].recorded_ns == plan.steps[1].recorded_ns);
    // Where the trace ends with the copied step, the copies take the latest known step time.
    trace::Trace ends_with_step = chained_steps();
    ends_with_step.iterations.pop_back();
    for (size_t i = 0; i < ends_with_step.launches.size(); ++i) ends_with_step.launches[i].time_ns = 100 * i;
    const replay::Plan ended = replay::make_plan(ends_with_step, bounds, {1.0, 1});
    CHECK_FALSE(ended.steps[1].recorded_ns);
    CHECK(ended.steps[2].recorded_ns == 200);
    REQUIRE(plan.launches.size() == 1 + 2 * 4);
    // Slots: weight 0, activations 1 (id 10), 2 (id 11), 3 (id 12), then one a copy: 4, 5.
    CHECK(plan.slots == 6);
    CHECK(touched_slots(plan, plan.launches[3]) == std::vector<uint32_t>{0, 3, 2}); // the last recorded step
    CHECK(touched_slots(plan, plan.launches[5]) == std::vector<uint32_t>{0, 4, 3}); // copy 1: the step's, then its own
    CHECK(touched_slots(plan, plan.launches[7]) == std::vector<uint32_t>{0, 5, 4}); // copy 2
    std::vector<uint32_t> freed;
    for (const replay::FreeOp& f : plan.frees) freed.push_back(f.slot);
    CHECK(freed == std::vector<uint32_t>{1, 2, 3, 4});
    CHECK(plan.peak_live_bytes == 4 * kMiB + 2 * (2 * kMiB));
}

TEST_CASE("replay plan: copies are refused where the last step frees what nothing replaces", "[replay]") {
    trace::Trace t = chained_steps();
    // The last step's own activation is freed too: nothing it makes outlives it.
    t.frees.push_back({12, 0, t.launches.size()});
    const std::vector<uint64_t> bounds = iteration_bounds(t);
    CHECK_NOTHROW(replay::make_plan(t, bounds, {1.0, 0}));
    CHECK_THROWS_AS(replay::make_plan(t, bounds, {1.0, 1}), replay::PlanError);
    CHECK_THROWS_AS(replay::make_plan(t, {}, {1.0, 1}), replay::PlanError); // no whole step at all
}

TEST_CASE("replay plan: streams are ordered where their launches share memory", "[replay]") {
    trace::Trace t;
    t.allocs.push_back(alloc(1, 2 * kMiB, 0, trace::AllocKind::Pooled));
    t.allocs.push_back(alloc(2, 2 * kMiB, 0, trace::AllocKind::Pooled));
    const uint64_t a = 0x7000, b = 0x8000;
    launch(t, 0, {{1, 0, 0}}, b);            // 0: the first use of 1, on b
    launch(t, 1, {{1, 0, 0}, {2, 0, 0}}, a); // 1: waits for 0
    launch(t, 2, {{1, 0, 0}}, a);            // 2: a already waited for b's launch 0
    launch(t, 3, {{2, 0, 0}}, b);            // 3: waits for 1
    launch(t, 4, {{2, 0, 0}}, b);            // 4: nothing new
    t.frees.push_back({1, 0, 5});
    t.frees.push_back({2, 0, 5});

    const replay::Plan plan = replay::make_plan(t, {}, {});
    REQUIRE(plan.streams == std::vector<uint64_t>{b, a});
    auto waits_of = [&](size_t i) {
        const replay::LaunchOp& l = plan.launches[i];
        return std::vector<uint32_t>(plan.waits.begin() + l.first_wait, plan.waits.begin() + l.first_wait + l.wait_count);
    };
    CHECK(waits_of(0).empty());
    CHECK(waits_of(1) == std::vector<uint32_t>{0});
    CHECK(waits_of(2).empty());
    CHECK(waits_of(3) == std::vector<uint32_t>{1});
    CHECK(waits_of(4).empty());
    CHECK(plan.launches[0].waiters == 1);
    CHECK(plan.launches[1].waiters == 1);
    CHECK(plan.launches[2].waiters == 0);
    // Made on the stream of the first use, freed on that of the last.
    CHECK(plan.allocs[0].stream == 0);
    CHECK(plan.allocs[1].stream == 1);
    CHECK(plan.frees[0].stream == 1);
    CHECK(plan.frees[1].stream == 0);
}

namespace {

// The plan cut at its step boundaries: the prologue, each step, the epilogue.
struct Segment {
    std::vector<uint32_t> made;  // slots allocated
    std::vector<uint32_t> freed; // slots freed
};
std::vector<Segment> segments(const replay::Plan& plan) {
    std::vector<Segment> out(1);
    for (const replay::Op& op : plan.ops) {
        if (op.kind == OpKind::StepBoundary) out.emplace_back();
        if (op.kind == OpKind::Alloc) out.back().made.push_back(plan.allocs[op.index].slot);
        if (op.kind == OpKind::Free) out.back().freed.push_back(plan.frees[op.index].slot);
    }
    return out;
}

} // namespace

TEST_CASE("replay plan: copies of a pooled job's last step make and free what the step did", "[replay]") {
    const trace::Trace t = pooled_job(4);
    const std::vector<uint64_t> bounds = iteration_bounds(t);
    REQUIRE(bounds.size() == 5); // a mark at each step's start and one after the last
    const replay::Plan recorded = replay::make_plan(t, bounds, {});
    const replay::Plan plan = replay::make_plan(t, bounds, {1.0, 2});
    REQUIRE(plan.steps.size() == 6);
    CHECK(plan.steps[4].copy);
    CHECK(plan.steps[5].copy);
    CHECK(plan.launches.size() == recorded.launches.size() + 2 * recorded.steps.back().launches);
    // The pattern repeats: as many bytes live at the peak.
    CHECK(plan.peak_live_bytes == recorded.peak_live_bytes);

    const std::vector<Segment> parts = segments(plan); // prologue, 4 steps, 2 copies, epilogue
    REQUIRE(parts.size() == 8);
    const Segment& last = parts[4];
    REQUIRE_FALSE(last.made.empty());
    // The teardown (the model and the last loss) comes after the copies, not in the step.
    CHECK(parts[7].freed.size() == 3 * 4 + 1);
    CHECK(parts[7].made.empty());
    for (size_t c = 5; c <= 6; ++c) {
        const Segment& copy = parts[c];
        CHECK(copy.made.size() == last.made.size());
        CHECK(copy.freed.size() == last.freed.size());
        // Its own allocations, fresh slots; of the memory made before it, it frees
        // only the loss of the step before.
        const uint32_t first_slot = copy.made.front();
        for (uint32_t slot : copy.made) CHECK(slot >= first_slot);
        std::vector<uint32_t> carried;
        for (uint32_t slot : copy.freed)
            if (slot < first_slot) carried.push_back(slot);
        REQUIRE(carried.size() == 1);
        const Segment& before = parts[c - 1];
        CHECK(std::find(before.made.begin(), before.made.end(), carried[0]) != before.made.end());
    }
    // Launch for launch, a copy touches the step's memory from before it (the
    // model) where the step did, and its own allocations where the step touched its.
    const replay::Step& step = plan.steps[3];
    const uint32_t step_first_slot = parts[4].made.front();
    for (size_t c = 4; c <= 5; ++c) {
        const uint32_t copy_first_slot = parts[c + 1].made.front();
        for (uint64_t p = 0; p < step.launches; ++p) {
            const auto recorded_slots = touched_slots(plan, plan.launches[step.first_launch + p]);
            const auto copy_slots = touched_slots(plan, plan.launches[plan.steps[c].first_launch + p]);
            REQUIRE(copy_slots.size() == recorded_slots.size());
            for (size_t s = 0; s < copy_slots.size(); ++s) {
                if (recorded_slots[s] < step_first_slot) CHECK(copy_slots[s] == recorded_slots[s]);
                else CHECK(copy_slots[s] >= copy_first_slot);
            }
        }
    }
    // Every allocation of the replay is freed once.
    std::vector<uint32_t> freed;
    for (const replay::FreeOp& f : plan.frees) freed.push_back(f.slot);
    std::sort(freed.begin(), freed.end());
    std::vector<uint32_t> all(plan.slots);
    for (uint32_t s = 0; s < plan.slots; ++s) all[s] = s;
    CHECK(freed == all);
}

TEST_CASE("replay plan: a pooled job's last step that frees its model cannot be copied", "[replay]") {
    trace::Trace t = pooled_job(4);
    const std::vector<uint64_t> bounds = iteration_bounds(t);
    // The last step frees the first weight, made before the steps, halfway through.
    const uint64_t halfway = (bounds[3] + bounds[4]) / 2;
    t.frees.push_back({1, t.launches[halfway].time_ns, halfway});
    t.frees.erase(std::find_if(t.frees.begin(), t.frees.end() - 1, [](const trace::Free& f) { return f.id == 1; }));
    CHECK_NOTHROW(replay::make_plan(t, bounds, {1.0, 0}));
    CHECK_THROWS_WITH(replay::make_plan(t, bounds, {1.0, 1}),
                      Catch::Matchers::StartsWith("the last step frees allocation 1 (") &&
                          Catch::Matchers::EndsWith("its copies would free memory that no longer exists"));
}

TEST_CASE("replay plan: the bundled pooled traces copy their last step as it was recorded", "[replay][bundled]") {
    for (const char* name : {"gpt2-small-b16-pooled", "resnet50-b256-pooled"}) {
        const std::string path = std::string(UVMP_SOURCE_DIR) + "/examples/traces/" + name + ".uvmt";
        INFO(path);
        const trace::Trace t = trace::read_trace_file(path);
        const std::vector<uint64_t> bounds = iteration_bounds(t);
        REQUIRE(bounds.size() == 2); // the warm-up before the first mark, one marked step
        const replay::Plan recorded = replay::make_plan(t, bounds, {});
        const replay::Plan plan = replay::make_plan(t, bounds, {1.0, 1});
        REQUIRE(plan.steps.size() == 2);
        CHECK(plan.steps[1].copy);
        CHECK(plan.steps[1].launches == plan.steps[0].launches);
        CHECK(plan.peak_live_bytes == recorded.peak_live_bytes);
        const std::vector<Segment> parts = segments(plan); // prologue, the step, its copy, the teardown
        REQUIRE(parts.size() == 4);
        CHECK(parts[2].made.size() == parts[1].made.size());
        CHECK(parts[2].freed.size() == parts[1].freed.size());
        CHECK(plan.allocs.size() == t.allocs.size() + parts[1].made.size());
        CHECK(plan.frees.size() == t.frees.size() + parts[1].freed.size());
    }
}

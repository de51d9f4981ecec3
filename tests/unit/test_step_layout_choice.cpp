// Whether a layout planned for the learned step is chosen (core/placement/
// recorded_homes.h, LayoutChoice), on the 6-step recordings of examples/traces:
// where the simulation says it pays and where it says it does not, and on a
// recording cut short as a run learning from itself holds it.
#include "core/homesearch/recorded_homes.h"
#include "core/sim/simulator.h"
#include "trace_file.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

using namespace uvmp;
using namespace uvmp::placement;

namespace {

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kChunk = 2ull << 20;

trace::Trace bundled(const char* name) {
    return tools::load_trace(std::string(UVMP_SOURCE_DIR) + "/examples/traces/" + name + "-6steps.uvmt.zst");
}

// The recording as a run learning from itself has it when it learns: the
// steps up to bound `last` (the third: two full steps) and a few launches of
// the next.
trace::Trace cut_after_learned(trace::Trace t, size_t last = 3) {
    const std::vector<uint64_t> bounds = iteration_bounds(t);
    REQUIRE(bounds.size() >= 5);
    const uint64_t keep = bounds[last] + 16;
    t.launches.resize(keep);
    std::erase_if(t.allocs, [&](const trace::Alloc& a) { return a.launches_before > keep; });
    std::erase_if(t.frees, [&](const trace::Free& f) { return f.launches_before > keep; });
    std::erase_if(t.slabs, [&](const trace::Slab& s) { return s.launches_before > keep; });
    std::erase_if(t.iterations, [&](const trace::Iteration& m) { return m.launches_before > keep; });
    return t;
}

// The recording a run that begins learning at launch `begin` holds: the
// allocations live then first, in order of address, as the registry gives
// them, each as made at the recording's start; then what came after, launches
// numbered from `begin`.
trace::Trace recording_begun_at(trace::Trace t, uint64_t begin) {
    std::unordered_set<uint32_t> gone;
    for (const trace::Free& f : t.frees)
        if (f.launches_before <= begin) gone.insert(f.id);
    std::vector<trace::Alloc> live, later;
    for (const trace::Alloc& a : t.allocs) {
        if (gone.contains(a.id)) continue;
        (a.launches_before < begin ? live : later).push_back(a);
    }
    std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return a.address < b.address; });
    t.allocs.clear();
    for (trace::Alloc a : live) {
        a.launches_before = 0;
        t.allocs.push_back(a);
    }
    for (trace::Alloc a : later) {
        a.launches_before -= begin;
        t.allocs.push_back(a);
    }
    std::erase_if(t.frees, [&](const trace::Free& f) { return f.launches_before <= begin; });
    for (trace::Free& f : t.frees) f.launches_before -= begin;
    std::erase_if(t.moves, [&](const trace::Move& m) { return m.launches_before < begin; });
    for (trace::Move& m : t.moves) m.launches_before -= begin;
    std::erase_if(t.iterations, [&](const trace::Iteration& m) { return m.launches_before < begin; });
    for (trace::Iteration& m : t.iterations) m.launches_before -= begin;
    std::erase_if(t.slabs, [&](const trace::Slab& x) { return x.launches_before < begin; });
    for (trace::Slab& x : t.slabs) x.launches_before -= begin;
    t.launches.erase(t.launches.begin(), t.launches.begin() + static_cast<std::ptrdiff_t>(begin));
    return t;
}

void check_planned(const RecordedHomes& homes, uint64_t budget) {
    REQUIRE(homes.planned());
    CHECK(homes.planned_step_seconds > 0);
    CHECK(layout_pays(homes.planned_step_seconds, homes.over_dead_step_seconds, homes.planned_step_out_bytes, budget));
    REQUIRE(homes.step_offsets.size() == homes.step.size());
    size_t offsets = 0;
    for (size_t i = 0; i < homes.step.size(); ++i) {
        if (!homes.step_offsets[i]) continue;
        ++offsets;
        CHECK(homes.step[i].home == Home::Gpu); // host-homed entries are not laid out
        CHECK(*homes.step_offsets[i] % kChunk == 0);
        CHECK(*homes.step_offsets[i] + homes.step[i].bytes <= homes.arena_bytes);
    }
    CHECK(offsets > 100);
}

} // namespace

TEST_CASE("step layout: chosen where the simulation says it pays (GPT-2), and not where it does not (resnet50)",
          "[placement][layout][bundled]") {
    std::string why;
    const trace::Trace gpt2 = bundled("gpt2-small-b16-pooled");
    const auto chosen = recorded_homes(gpt2, static_cast<uint64_t>(18.9 * kGiB), kChunk, &why, {},
                                       HomeScope::MadeInStep, {}, LayoutChoice::Auto);
    REQUIRE(chosen);
    check_planned(*chosen, static_cast<uint64_t>(18.9 * kGiB));
    // Off: no layout weighed.
    const auto off = recorded_homes(gpt2, static_cast<uint64_t>(18.9 * kGiB), kChunk, &why, {}, HomeScope::MadeInStep,
                                    {}, LayoutChoice::Off);
    REQUIRE(off);
    CHECK_FALSE(off->planned());
    CHECK(off->planned_step_seconds == 0);

    // resnet50 with its batch-norm kernels judged re-reading (a streaming line
    // at a third of the memory bandwidth): no home pays, and the layout only
    // fixes where live bytes swap.
    const trace::Trace resnet = bundled("resnet50-b256-pooled");
    const TimingPriorConfig bandwidth_third{.streaming_gbps = 1600};
    const auto auto_choice = recorded_homes(resnet, static_cast<uint64_t>(8.9 * kGiB), kChunk, &why, {},
                                            HomeScope::MadeInStep, bandwidth_third, LayoutChoice::Auto);
    REQUIRE(auto_choice);
    CHECK_FALSE(auto_choice->planned());
    CHECK(auto_choice->planned_step_seconds > auto_choice->over_dead_step_seconds);
    // On: the layout whatever it gains.
    const auto forced = recorded_homes(resnet, static_cast<uint64_t>(8.9 * kGiB), kChunk, &why, {},
                                       HomeScope::MadeInStep, bandwidth_third, LayoutChoice::On);
    REQUIRE(forced);
    CHECK(forced->planned());
    // At the default line their inputs live on the host, nothing is left to
    // swap, and the layout is taken.
    const auto by_default = recorded_homes(resnet, static_cast<uint64_t>(8.9 * kGiB), kChunk, &why, {},
                                           HomeScope::MadeInStep, {}, LayoutChoice::Auto);
    REQUIRE(by_default);
    CHECK(by_default->planned());
}

TEST_CASE("step layout: the rule weighs the gain and what the layout still moves out", "[placement][layout]") {
    constexpr uint64_t budget = 16 * kGiB;
    CHECK(layout_pays(0.6, 0.9, 0, budget));
    CHECK(layout_pays(0.9, 0.9, 0, budget)); // a tie: moving nothing, the layout's step is the least
    CHECK(layout_pays(0.94, 0.9, 0, budget)); // within 5%: placing as they come may churn dead bytes
    CHECK_FALSE(layout_pays(0.95, 0.9, 0, budget));
    CHECK(layout_pays(0.6, 0.9, budget / 16, budget)); // some hundreds of MiB: tens of ms
    CHECK_FALSE(layout_pays(0.6, 0.9, budget / 8, budget)); // live bytes still swap
}

TEST_CASE("step layout: a recording with one step past the learned one is lengthened to weigh it",
          "[placement][layout][bundled]") {
    const trace::Trace cut = cut_after_learned(bundled("gpt2-small-b16-pooled"));
    const std::vector<uint64_t> bounds = iteration_bounds(cut);
    REQUIRE(bounds.size() == 4);
    const auto lengthened = lengthened_for_layout(cut, bounds);
    REQUIRE(lengthened);
    CHECK(lengthened->bounds.size() == 3 + kStepsAfterLearned);
    CHECK(lengthened->trace.launches.size() == bounds[3] + kStepsAfterLearned * (bounds[2] - bounds[1]) - (bounds[3] - bounds[2]));
    CHECK_FALSE(lengthened_for_layout(lengthened->trace, lengthened->bounds)); // long enough

    std::string why;
    const auto homes = recorded_homes(cut, bounds, static_cast<uint64_t>(18.9 * kGiB), kChunk, &why, {},
                                      HomeScope::MadeInStep, {}, LayoutChoice::Auto);
    REQUIRE(homes);
    check_planned(*homes, static_cast<uint64_t>(18.9 * kGiB));
}

TEST_CASE("step layout: a recording with one full step learns from it, the part before it standing for a step",
          "[placement][layout][bundled]") {
    const trace::Trace full = bundled("gpt2-small-b16-pooled");
    const std::vector<uint64_t> bounds = iteration_bounds(full);
    REQUIRE(bounds.size() >= 5);
    REQUIRE(bounds[1] > 0);
    // As a run that marks its steps has it one step after the step it went over
    // its budget in: everything before bounds[1] is the part it began in.
    const trace::Trace one = cut_after_learned(full, 2);
    const std::vector<uint64_t> one_step{bounds[1], bounds[2]};
    CHECK(with_partial_step_before(one_step) == std::vector<uint64_t>{0, bounds[1], bounds[2]});
    CHECK(with_partial_step_before({0, bounds[1]}) == std::vector<uint64_t>{0, bounds[1]});
    CHECK(with_partial_step_before({bounds[1], bounds[2], bounds[3]}) ==
          std::vector<uint64_t>{bounds[1], bounds[2], bounds[3]});

    const uint64_t budget = static_cast<uint64_t>(18.9 * kGiB);
    std::string why;
    const auto from_one = homes_in_run(one, one_step, budget, kChunk, &why, {}, {}, LayoutChoice::Auto, false);
    REQUIRE(from_one);
    check_planned(*from_one, budget);
    CHECK(from_one->step_begin == bounds[1]);
    CHECK(from_one->step_end == bounds[2]);
    // The same step learned with a full step before it, as from two: the
    // partial one costs the simulated step little.
    const trace::Trace two = cut_after_learned(full, 3);
    const auto from_two = homes_in_run(two, {bounds[0], bounds[1], bounds[2], bounds[3]}, budget, kChunk, &why, {}, {},
                                       LayoutChoice::Auto, false);
    REQUIRE(from_two);
    check_planned(*from_two, budget);
    CHECK(from_one->planned_step_seconds <= from_two->planned_step_seconds * 1.05);
    CHECK(from_one->host_entries() > 0);

    // As the run records it: begun halfway into the step before, the
    // allocations live then first, in order of address.
    const uint64_t begin = bounds[0] + (bounds[1] - bounds[0]) / 2;
    const trace::Trace recorded = recording_begun_at(one, begin);
    const std::vector<uint64_t> recorded_step{bounds[1] - begin, bounds[2] - begin};
    const auto from_recording =
        homes_in_run(recorded, recorded_step, budget, kChunk, &why, {}, {}, LayoutChoice::Auto, false);
    REQUIRE(from_recording);
    check_planned(*from_recording, budget);
    CHECK(from_recording->planned_step_out_bytes <= budget / 256); // next to nothing: 8.6 MB when written
    CHECK(from_recording->planned_step_seconds <= from_two->planned_step_seconds * 1.05);
}

#include "core/trace/analysis/access_extents.h"
#include "core/sim/simulator.h"
#include "core/trace/edit/repeat.h"
#include "trace_fixtures.h"

#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>

using namespace uvmp;
using trace::fixtures::add_launch;
using trace::fixtures::loop_trace;

TEST_CASE("trace repeat: the last iteration is appended with its accesses and marks", "[repeat]") {
    auto t = loop_trace(3, 8, 2); // 3 launches an iteration, marked
    const auto bounds = iteration_bounds(t);
    REQUIRE(bounds.size() == 3);
    const size_t accesses = t.accesses.size();
    const auto lengthened = repeat_last_iteration(t, bounds, 4);
    REQUIRE(t.launches.size() == 6 * 3);
    CHECK(t.accesses.size() == accesses); // the copies name the original's
    CHECK(t.iterations.size() == 6);
    CHECK(t.iterations.back().launches_before == 15);
    for (uint64_t i = 6; i < t.launches.size(); ++i) {
        const trace::Launch& copy = t.launches[i];
        const trace::Launch& original = t.launches[3 + i % 3];
        CHECK(copy.seq == i);
        CHECK(copy.kernel_id == original.kernel_id);
        CHECK(copy.duration_ns == original.duration_ns);
        REQUIRE(copy.access_count == original.access_count);
        CHECK(copy.first_access == original.first_access);
    }
    CHECK(lengthened == std::vector<uint64_t>{0, 3, 6, 9, 12, 15, 18});
    CHECK(iteration_bounds(t) == lengthened);
}

TEST_CASE("trace repeat: the bounds returned for a trace without marks are those detected again", "[repeat]") {
    auto t = loop_trace(5, 8, 6);
    t.iterations.clear();
    const auto bounds = iteration_bounds(t);
    REQUIRE(bounds.size() >= 3);
    const auto lengthened = repeat_last_iteration(t, bounds, 7);
    CHECK(lengthened.back() == t.launches.size());
    CHECK(lengthened.size() == bounds.size() + 7);
    CHECK(iteration_bounds(t) == lengthened);
}

TEST_CASE("trace repeat: an iteration that allocates, or no iteration at all, is refused", "[repeat]") {
    auto t = loop_trace(3, 8, 2);
    t.allocs.push_back({99, 0x900000, 4096, trace::AllocKind::Converted, 0, 0, 4});
    CHECK_THROWS_AS(repeat_last_iteration(t, iteration_bounds(t), 1), std::invalid_argument);
    auto single = loop_trace(3, 8, 1);
    single.iterations.clear();
    CHECK_THROWS_AS(repeat_last_iteration(single, iteration_bounds(single), 1), std::invalid_argument);
}

TEST_CASE("trace repeat: slab records inside the last iteration refuse it, those after it move to the end",
          "[repeat]") {
    auto t = loop_trace(3, 8, 2);
    t.slabs.push_back({trace::SlabAction::Released, 1, 0x6000'0000'0000, 512 << 20, 0, 0, 4});
    CHECK_THROWS_WITH(repeat_last_iteration(t, iteration_bounds(t), 1), Catch::Contains("slabs"));
    // A third iteration cut short after two launches (dropped), and the slab
    // given back after it, at teardown.
    t.iterations.push_back({2, 6, 0});
    for (uint32_t k = 0; k < 2; ++k) {
        const trace::Access access{k, 0, 0};
        add_launch(t, k, {&access, 1});
    }
    t.slabs.back().launches_before = 8;
    REQUIRE(iteration_bounds(t) == std::vector<uint64_t>{0, 3, 6});
    repeat_last_iteration(t, iteration_bounds(t), 2);
    CHECK(t.launches.size() == 12);
    CHECK(t.slabs.back().launches_before == 12);
}

TEST_CASE("trace repeat: a mark where the repeated iteration ends is not doubled", "[repeat]") {
    auto t = loop_trace(3, 8, 3); // marks before launches 0, 3 and 6
    t.launches.resize(7);         // the recording stopped inside the third iteration
    const auto bounds = iteration_bounds(t);
    REQUIRE(bounds.back() == 6);
    const auto lengthened = repeat_last_iteration(t, bounds, 2);
    REQUIRE(t.launches.size() == 12);
    CHECK(lengthened == std::vector<uint64_t>{0, 3, 6, 9, 12});
    std::vector<uint64_t> marked;
    for (const trace::Iteration& m : t.iterations) marked.push_back(m.launches_before);
    CHECK(marked == std::vector<uint64_t>{0, 3, 6, 9});
}

TEST_CASE("trace repeat: extents inferred over the copies are the original iteration's", "[repeat]") {
    constexpr uint64_t kMiB = 1ull << 20;
    trace::Trace t;
    t.allocs.push_back({0, 0x1000000, 8 * kMiB});
    // Each iteration: a launch reading two tensors of one allocation, then one
    // reading the second of them; no lengths recorded.
    for (uint32_t it = 0; it < 2; ++it) {
        t.iterations.push_back({it, t.launches.size(), 0});
        const trace::Access both[] = {{0, 0, 0}, {0, 4 * kMiB, 0}};
        add_launch(t, 0, both);
        add_launch(t, 1, {both + 1, 1});
    }
    const auto bounds = repeat_last_iteration(t, iteration_bounds(t), 5);
    infer_access_extents(t, bounds);
    for (uint64_t i = 0; i < t.launches.size(); ++i) {
        const auto accesses = t.accesses_of(t.launches[i]);
        REQUIRE(accesses.size() == (i % 2 == 0 ? 2u : 1u));
        if (i % 2 == 0) CHECK(accesses[0].length == 4 * kMiB); // up to the other tensor
        CHECK(accesses.back().length == 4 * kMiB);               // to the allocation's end
    }
}

TEST_CASE("trace repeat: extents inferred before repeating are those inferred over the copies", "[repeat]") {
    constexpr uint64_t kMiB = 1ull << 20;
    // Two iterations of three launches over tensors of one allocation, then a
    // partial third iteration that repeating drops; no lengths recorded.
    const auto recorded = [] {
        trace::Trace t;
        t.allocs.push_back({0, 0x1000000, 16 * kMiB});
        for (uint32_t it = 0; it < 3; ++it) {
            t.iterations.push_back({it, t.launches.size(), 0});
            const trace::Access first[] = {{0, 0, 0}, {0, 4 * kMiB, 0}};
            const trace::Access second[] = {{0, 4 * kMiB, 0}, {0, 12 * kMiB, 0}};
            const trace::Access third[] = {{0, 8 * kMiB, 0}};
            add_launch(t, 0, first);
            if (it == 2) break;
            add_launch(t, 1, second);
            add_launch(t, 2, third);
        }
        return t;
    };
    trace::Trace after = recorded();
    infer_access_extents(after, repeat_last_iteration(after, iteration_bounds(after), 4));
    trace::Trace before = recorded();
    const auto bounds = iteration_bounds(before);
    infer_access_extents(before, bounds);
    repeat_last_iteration(before, bounds, 4);
    REQUIRE(before.launches.size() == after.launches.size());
    for (uint64_t i = 0; i < before.launches.size(); ++i) {
        const auto a = before.accesses_of(before.launches[i]);
        const auto b = after.accesses_of(after.launches[i]);
        REQUIRE(a.size() == b.size());
        for (size_t k = 0; k < a.size(); ++k) {
            CHECK(a[k].length != 0);
            CHECK(a[k].length == b[k].length);
        }
    }
}

namespace {

// The allocations launch `launch` of `t` names, in order.
std::vector<uint32_t> named_by(const trace::Trace& t, uint64_t launch) {
    std::vector<uint32_t> ids;
    for (const trace::Access& a : t.accesses_of(t.launches[launch])) ids.push_back(a.alloc_id);
    return ids;
}

// Steps of three launches that each make an activation (freed within the step)
// and a gradient (freed in the step after), over a weight made before them.
// The last step is cut short: a partial step after it frees its gradient.
trace::Trace stepping_blocks(uint32_t steps) {
    using trace::fixtures::add_alloc;
    using trace::fixtures::add_free;
    using trace::fixtures::add_launch_naming;
    trace::Trace t;
    constexpr uint64_t kMiB = 1ull << 20;
    add_alloc(t, 1, 8 * kMiB, 0, trace::AllocKind::Pooled); // the weight
    uint32_t id = 10;
    for (uint32_t s = 0; s < steps; ++s) {
        const uint64_t at = 3 * s;
        t.iterations.push_back({s, at, 0});
        const uint32_t activation = id++, gradient = id++;
        add_alloc(t, activation, 4 * kMiB, at, trace::AllocKind::Pooled);
        if (s > 0) add_free(t, gradient - 2, at); // the step before's gradient
        add_launch_naming(t, 0, {1, activation});
        add_alloc(t, gradient, 2 * kMiB, at + 1, trace::AllocKind::Pooled);
        add_launch_naming(t, 1, {activation, gradient});
        add_free(t, activation, at + 2);
        add_launch_naming(t, 2, {gradient, 1});
    }
    // A partial step: its mark, then the last gradient freed and one launch.
    t.iterations.push_back({steps, 3 * steps, 0});
    add_free(t, id - 1, 3 * steps);
    add_launch_naming(t, 0, {1});
    return t;
}

} // namespace

TEST_CASE("trace repeat with blocks: each copy makes its own and frees the copy before's", "[repeat]") {
    trace::Trace t = stepping_blocks(3);
    const auto bounds = iteration_bounds(t);
    REQUIRE(bounds == std::vector<uint64_t>{0, 3, 6, 9});
    const auto lengthened = repeat_last_iteration_with_blocks(t, bounds, 2);
    CHECK(lengthened == std::vector<uint64_t>{0, 3, 6, 9, 12, 15});
    REQUIRE(t.launches.size() == 15);
    // The last step's blocks are 14 and 15; the copies' 16, 17 and 18, 19.
    auto made = [&](uint32_t id) {
        for (const trace::Alloc& a : t.allocs)
            if (a.id == id) return std::optional<uint64_t>(a.launches_before);
        return std::optional<uint64_t>();
    };
    auto freed = [&](uint32_t id) {
        std::vector<uint64_t> at;
        for (const trace::Free& f : t.frees)
            if (f.id == id) at.push_back(f.launches_before);
        return at;
    };
    CHECK(made(16) == 9u);
    CHECK(made(17) == 10u);
    CHECK(made(18) == 12u);
    CHECK(made(19) == 13u);
    CHECK(freed(16) == std::vector<uint64_t>{11});
    // The last step's gradient is freed by the first copy alone (its recorded
    // free after the step is dropped), the first copy's by the second.
    CHECK(freed(15) == std::vector<uint64_t>{9});
    CHECK(freed(17) == std::vector<uint64_t>{12});
    CHECK(freed(19).empty());
    // The copies' launches name their own blocks, and the weight as it was.
    CHECK(named_by(t, 9) == std::vector<uint32_t>{1, 16});
    CHECK(named_by(t, 10) == std::vector<uint32_t>{16, 17});
    CHECK(named_by(t, 14) == std::vector<uint32_t>{19, 1});
    CHECK(named_by(t, 6) == std::vector<uint32_t>{1, 14}); // the original's untouched
    CHECK(std::is_sorted(t.allocs.begin(), t.allocs.end(),
                         [](const auto& a, const auto& b) { return a.launches_before < b.launches_before; }));
    CHECK(std::is_sorted(t.frees.begin(), t.frees.end(),
                         [](const auto& a, const auto& b) { return a.launches_before < b.launches_before; }));
    // Every block but the last copy's gradient and the weight is freed once.
    for (const trace::Alloc& a : t.allocs)
        CHECK(freed(a.id).size() == (a.id == 1 || a.id == 19 ? 0u : 1u));
    // The lengthened trace simulates, its copies as steady as the step they copy.
    SimConfig config;
    config.budget_bytes = 64ull << 20;
    const SimResult result = simulate(t, config);
    CHECK(result.steady_steps == 4);
}

TEST_CASE("trace repeat with blocks: refusals", "[repeat]") {
    trace::Trace one = stepping_blocks(1);
    CHECK_THROWS_AS(repeat_last_iteration_with_blocks(one, iteration_bounds(one), 1), std::invalid_argument);
    trace::Trace converted = stepping_blocks(3);
    trace::fixtures::add_alloc(converted, 99, 4096, 7);
    std::stable_sort(converted.allocs.begin(), converted.allocs.end(),
                     [](const auto& a, const auto& b) { return a.launches_before < b.launches_before; });
    CHECK_THROWS_WITH(repeat_last_iteration_with_blocks(converted, iteration_bounds(converted), 1),
                      Catch::Contains("outside the pool"));
    trace::Trace none = stepping_blocks(3);
    const auto bounds = iteration_bounds(none);
    CHECK(repeat_last_iteration_with_blocks(none, bounds, 0) == bounds);
}

TEST_CASE("trace repeat with blocks: a freed block pairs with one of its size that outlives the step", "[repeat]") {
    using trace::fixtures::add_alloc;
    using trace::fixtures::add_free;
    using trace::fixtures::add_launch_naming;
    constexpr uint64_t kMiB = 1ull << 20;
    trace::Trace t;
    // The step before makes G (freed in the last step) and then P, state never
    // freed; the last step makes T (freed within it) where G was in the order,
    // and G2 (outliving it) where P was: same sizes, other lifetimes. G pairs
    // with G2, the one block of its size that outlives the last step, whatever
    // their places.
    t.iterations.push_back({0, 0, 0});
    add_alloc(t, 10, 4 * kMiB, 0, trace::AllocKind::Pooled);     // G
    add_alloc(t, 11, 4 * kMiB, 0, trace::AllocKind::Pooled);     // P
    add_launch_naming(t, 0, {10, 11});
    add_launch_naming(t, 1, {11});
    t.iterations.push_back({1, 2, 0});
    add_alloc(t, 12, 4 * kMiB, 2, trace::AllocKind::Pooled);     // T
    add_free(t, 10, 2);                                           // G, the step before's
    add_launch_naming(t, 0, {12, 11});
    add_alloc(t, 13, 4 * kMiB, 3, trace::AllocKind::Pooled);     // G2
    add_free(t, 12, 3);
    add_launch_naming(t, 1, {13, 11});
    t.iterations.push_back({2, 4, 0});
    add_free(t, 13, 4);
    add_launch_naming(t, 0, {11});
    const auto bounds = iteration_bounds(t);
    REQUIRE(bounds == std::vector<uint64_t>{0, 2, 4});
    repeat_last_iteration_with_blocks(t, bounds, 2);
    std::map<uint32_t, int> frees;
    for (const trace::Free& f : t.frees) ++frees[f.id];
    // Every block is freed once at most, P never: T is freed within its step,
    // and P is not freed by the last step.
    for (const auto& [id, n] : frees) CHECK(n == 1);
    CHECK(frees.count(11) == 0);
    // The copies name P itself, and their own blocks.
    CHECK(named_by(t, 4) == std::vector<uint32_t>{14, 11});
    CHECK(named_by(t, 5) == std::vector<uint32_t>{15, 11});
    // Each copy frees the G2 before its own, where the last step freed G; the
    // last copy's G2 is left live.
    CHECK(frees[13] == 1);
    CHECK(frees[15] == 1);
    CHECK(frees.count(17) == 0);
}

TEST_CASE("trace repeat with blocks: a partial span before pairs its last blocks with the iteration's",
          "[repeat]") {
    using trace::fixtures::add_alloc;
    using trace::fixtures::add_free;
    using trace::fixtures::add_launch_naming;
    constexpr uint64_t kMiB = 1ull << 20;
    trace::Trace t;
    // A recording begun late in a step: of that step's blocks it holds only the
    // gradient G0 (its activation came before). The full step makes activation
    // A and gradient G1, frees G0 and A; G1 outlives it.
    add_alloc(t, 1, 8 * kMiB, 0, trace::AllocKind::Pooled); // the weight, made before
    add_alloc(t, 10, 2 * kMiB, 0, trace::AllocKind::Pooled); // G0
    add_launch_naming(t, 0, {10, 1});
    t.iterations.push_back({0, 1, 0});
    add_alloc(t, 11, 4 * kMiB, 1, trace::AllocKind::Pooled); // A
    add_free(t, 10, 1);
    add_launch_naming(t, 1, {1, 11});
    add_alloc(t, 12, 2 * kMiB, 2, trace::AllocKind::Pooled); // G1
    add_launch_naming(t, 2, {11, 12});
    add_free(t, 11, 3);
    add_launch_naming(t, 3, {12, 1});
    t.iterations.push_back({1, 4, 0});
    add_free(t, 12, 4);
    add_launch_naming(t, 1, {1});
    const std::vector<uint64_t> bounds{0, 1, 4};
    repeat_last_iteration_with_blocks(t, bounds, 2);
    std::map<uint32_t, std::vector<uint64_t>> frees;
    for (const trace::Free& f : t.frees) frees[f.id].push_back(f.launches_before);
    // Counted from the first block, G0 would meet A (another size) and pair
    // with nothing; from the last it meets G1. The copies make A and G as 13,
    // 14 and 15, 16: each frees the gradient before its own.
    CHECK(frees[12] == std::vector<uint64_t>{4});
    CHECK(frees[14] == std::vector<uint64_t>{7});
    CHECK(frees.count(16) == 0);
    CHECK(frees[13] == std::vector<uint64_t>{6});
    CHECK(named_by(t, 4) == std::vector<uint32_t>{1, 13});
    CHECK(named_by(t, 6) == std::vector<uint32_t>{14, 1});
}

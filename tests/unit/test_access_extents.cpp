#include "core/trace/analysis/access_extents.h"
#include "trace_fixtures.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace uvmp;
using trace::fixtures::add_launch;

namespace {

constexpr uint64_t kAllocSize = 1000;

uint64_t size_of(uint32_t id) { return id == 1 ? kAllocSize : 0; }

// One access per launch: (position, offset) into allocation 1, length unknown.
std::vector<trace::Access> infer(const std::vector<std::pair<uint64_t, uint64_t>>& launches) {
    std::vector<trace::Access> accesses;
    for (const auto& [position, offset] : launches) accesses.push_back({1, offset, 0});
    std::vector<AccessUse> uses;
    for (size_t i = 0; i < accesses.size(); ++i) uses.push_back({launches[i].first, &accesses[i]});
    infer_access_extents(uses, size_of);
    return accesses;
}

} // namespace

TEST_CASE("access extents: a buffer in use with a higher one ends where that one starts", "[extents]") {
    // 0 is used at launches 0..4, 300 at launch 2: both alive together.
    const auto a = infer({{0, 0}, {2, 300}, {4, 0}});
    CHECK(a[0].length == 300);
    CHECK(a[2].length == 300);
    CHECK(a[1].length == kAllocSize - 300); // nothing above it: to the end
}

TEST_CASE("access extents: buffers used at different times do not bound each other", "[extents]") {
    // 300 is used only after the last use of 0: the memory may have been reused.
    const auto a = infer({{0, 0}, {1, 0}, {5, 300}});
    CHECK(a[0].length == kAllocSize);
    CHECK(a[2].length == kAllocSize - 300);
}

TEST_CASE("access extents: the nearest overlapping pointer bounds, not the nearest one", "[extents]") {
    // 100 is used before 0's span, 600 inside it.
    const auto a = infer({{0, 100}, {3, 0}, {4, 600}, {5, 0}});
    CHECK(a[1].length == 600);
    CHECK(a[0].length == kAllocSize - 100);
}

TEST_CASE("access extents: known lengths stay, and bound the unknown ones", "[extents]") {
    std::vector<trace::Access> accesses{{1, 0, 0}, {1, 200, 50}, {2, 0, 0}};
    std::vector<AccessUse> uses{{0, &accesses[0]}, {0, &accesses[1]}, {0, &accesses[2]}};
    CHECK(infer_access_extents(uses, size_of) == 1);
    CHECK(accesses[0].length == 200);
    CHECK(accesses[1].length == 50);
    CHECK(accesses[2].length == 0); // allocation of unknown size: left alone
}

TEST_CASE("access extents: a trace is inferred one iteration at a time", "[extents]") {
    trace::Trace t;
    t.allocs.push_back({1, 0x1000, kAllocSize});
    // Iteration 1: offsets 0 and 500 in use together. Iteration 2: only 0.
    const std::vector<std::vector<uint64_t>> launches{{0, 500}, {0}};
    for (const auto& offsets : launches) {
        std::vector<trace::Access> accesses;
        for (uint64_t offset : offsets) accesses.push_back({1, offset, 0});
        add_launch(t, 0, accesses);
    }
    const std::vector<uint64_t> bounds{0, 1, 2};
    CHECK(infer_access_extents(t, bounds) == 3);
    CHECK(t.accesses[0].length == 500);
    CHECK(t.accesses[1].length == kAllocSize - 500);
    CHECK(t.accesses[2].length == kAllocSize);
}

TEST_CASE("access extents: allocation sizes by id, dense or spread, an id recorded twice taking its last size",
          "[extents]") {
    for (const uint32_t high_id : {7u, 1u << 30}) {
        trace::Trace t;
        t.allocs.push_back({high_id, 0x1000, 100});
        t.allocs.push_back({2, 0x9000, 300});
        t.allocs.push_back({high_id, 0x1000, kAllocSize}); // recorded again, larger
        const trace::Access accesses[] = {{high_id, 0, 0}, {2, 100, 0}, {5, 0, 0}};
        add_launch(t, 0, accesses);
        CHECK(infer_access_extents(t, std::vector<uint64_t>{}) == 2);
        CHECK(t.accesses[0].length == kAllocSize);
        CHECK(t.accesses[1].length == 200);
        CHECK(t.accesses[2].length == 0); // allocation never recorded: left alone
    }
}

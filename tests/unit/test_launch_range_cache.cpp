#include "core/policy/launch_range_cache.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace uvmp;

namespace {

bool same(std::span<const ChunkRange> a, const std::vector<ChunkRange>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].first != b[i].first || a[i].last != b[i].last) return false;
    return true;
}

} // namespace

TEST_CASE("launch range cache: ranges are found under their key while the layout stays", "[range-cache]") {
    LaunchRangeCache cache;
    CHECK_FALSE(cache.find(7, 1));
    const std::vector<ChunkRange> ranges{{0, 3}, {8, 8}};
    CHECK(same(cache.store(7, 1, ranges), ranges));
    const auto found = cache.find(7, 1);
    REQUIRE(found);
    CHECK(same(*found, ranges));
    CHECK_FALSE(cache.find(8, 1));
    // A key stored with no ranges is found, empty.
    cache.store(9, 1, {});
    REQUIRE(cache.find(9, 1));
    CHECK(cache.find(9, 1)->empty());
    // Another layout: nothing stored before holds.
    CHECK_FALSE(cache.find(7, 2));
    CHECK_FALSE(cache.find(7, 1)); // and going back does not bring it back
}

TEST_CASE("launch range cache: many keys, colliding in their low bits, are all kept", "[range-cache]") {
    LaunchRangeCache cache;
    // Keys that share their low 16 bits land on the same slot first.
    for (uint64_t k = 0; k < 5000; ++k) cache.store(k << 16, 3, std::vector<ChunkRange>{{ChunkId(k), ChunkId(k + 1)}});
    for (uint64_t k = 0; k < 5000; ++k) {
        const auto found = cache.find(k << 16, 3);
        REQUIRE(found);
        CHECK(same(*found, {{ChunkId(k), ChunkId(k + 1)}}));
    }
    CHECK_FALSE(cache.find(5000ull << 16, 3));
    // A key stored again takes its new ranges.
    cache.store(0, 3, std::vector<ChunkRange>{{40, 41}});
    CHECK(same(*cache.find(0, 3), {{40, 41}}));
}

#include "core/model/residency.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <vector>

using namespace uvmp;

namespace {
constexpr uint64_t kMiB = 1ull << 20;

// Chunks 0..39 in allocations of uneven sizes, so that some last chunks are short.
// The range tests run two of these side by side: one driven by ranges, the
// other chunk by chunk.
Residency uneven_allocations(uint64_t budget) {
    Residency r(budget);
    const std::vector<uint64_t> sizes{5 * kMiB, 16 * kMiB, 3 * kMiB, 24 * kMiB, 7 * kMiB, 21 * kMiB};
    for (uint32_t id = 0; id < sizes.size(); ++id) r.add_allocation(id, sizes[id]);
    return r;
}

// The chunks a launch's accesses touch, from its ranges, one by one.
std::vector<ChunkId> launch_chunks(const Residency& r, const std::vector<trace::Access>& accesses) {
    std::vector<ChunkRange> ranges;
    r.launch_ranges(accesses, ranges);
    std::vector<ChunkId> chunks;
    for (const ChunkRange& range : ranges)
        for (ChunkId c = range.first; c <= range.last; ++c) chunks.push_back(c);
    return chunks;
}

// Resident chunks from least to most recently used.
std::vector<ChunkId> lru_order(const Residency& r) {
    std::vector<ChunkId> order;
    for (ChunkId c = r.lru_front(); c != kNoChunk; c = r.lru_next(c)) order.push_back(c);
    return order;
}
} // namespace

TEST_CASE("residency: allocations get contiguous chunk ids, the last chunk may be short", "[residency]") {
    Residency r(100 * kMiB);
    r.add_allocation(7, 5 * kMiB);
    r.add_allocation(3, 2 * kMiB);
    CHECK(r.chunk_count(7) == 3);
    CHECK(r.first_chunk(7) == 0);
    CHECK(r.first_chunk(3) == 3);
    CHECK(r.chunk_slots() == 4);
    CHECK(r.chunk_size(0) == 2 * kMiB);
    CHECK(r.chunk_size(2) == 1 * kMiB);
    CHECK(r.chunk_offset(2) == 4 * kMiB);
    CHECK(r.alloc_id_of(3) == 3);
    CHECK_THROWS_AS(r.add_allocation(7, kMiB), std::invalid_argument);
    CHECK(r.first_chunk(99) == kNoChunk);
}

TEST_CASE("residency: chunk size must be a power of two", "[residency]") {
    CHECK_THROWS_AS(Residency(kMiB, 3 * kMiB), std::invalid_argument);
    CHECK_THROWS_AS(Residency(kMiB, 0), std::invalid_argument);
    CHECK_NOTHROW(Residency(kMiB, 64 * 1024));
}

TEST_CASE("residency: accesses map to the chunks they overlap", "[residency]") {
    Residency r(100 * kMiB);
    r.add_allocation(1, 10 * kMiB);
    CHECK(launch_chunks(r, {{1, 3 * kMiB, 2 * kMiB}}) == std::vector<ChunkId>{1, 2}); // bytes 3..5 MiB
    CHECK(launch_chunks(r, {{1, 9 * kMiB, 0}}) == std::vector<ChunkId>{4});           // length 0: to the end
    CHECK(launch_chunks(r, {{1, 4 * kMiB, 100 * kMiB}}) == std::vector<ChunkId>{2, 3, 4}); // clamped
    CHECK(launch_chunks(r, {{1, 11 * kMiB, 0}}).empty()); // past the end
    CHECK(launch_chunks(r, {{2, 0, 0}}).empty());         // unknown allocation
}

TEST_CASE("residency: a launch's chunks come sorted and once, whatever its accesses overlap", "[residency]") {
    Residency r(100 * kMiB);
    r.add_allocation(1, 10 * kMiB); // chunks 0..4
    r.add_allocation(2, 4 * kMiB);  // chunks 5..6
    r.add_allocation(3, 6 * kMiB);  // chunks 7..9
    r.remove_allocation(3);
    const std::vector<trace::Access> accesses{
        {2, 0, 0},                  // 5, 6
        {1, 6 * kMiB, 2 * kMiB},    // 3
        {1, 0, 3 * kMiB},           // 0, 1: ends right before the next range
        {1, 2 * kMiB, 1 * kMiB},    // 1: inside the one above
        {1, 4 * kMiB, 1},           // 2: adjacent on both sides
        {3, 0, 0},                  // removed: nothing
        {4, 0, 0},                  // unknown: nothing
        {1, 12 * kMiB, 0},          // past the end: nothing
    };
    std::vector<ChunkRange> ranges{{7, 9}}; // replaced
    uint64_t not_live = 0;
    r.launch_ranges(accesses, ranges, &not_live);
    // Overlapping and adjacent ranges merge: 0..3, then 5..6 (chunk 4 untouched).
    REQUIRE(ranges.size() == 2);
    CHECK(ranges[0].first == 0);
    CHECK(ranges[0].last == 3);
    CHECK(ranges[1].first == 5);
    CHECK(ranges[1].last == 6);
    CHECK(not_live == 2);

    // The same as every access's chunks, sorted, each once, for a long access list too.
    std::vector<trace::Access> many;
    for (uint32_t i = 0; i < 100; ++i) many.push_back({1 + i % 2, (i * 7 % 10) * kMiB, (i % 3) * kMiB});
    std::vector<ChunkId> expected;
    for (const trace::Access& a : many)
        for (ChunkId c : launch_chunks(r, {a})) expected.push_back(c);
    std::sort(expected.begin(), expected.end());
    expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
    CHECK(launch_chunks(r, many) == expected);
}

TEST_CASE("residency: resident bytes follow fetches, evictions and frees", "[residency]") {
    Residency r(6 * kMiB);
    r.add_allocation(1, 5 * kMiB);
    r.make_resident(0, 0);
    r.make_resident(2, 0);
    r.make_resident(2, 1); // already resident: no double count
    CHECK(r.resident_bytes() == 3 * kMiB);
    CHECK(r.free_bytes() == 3 * kMiB);
    r.make_resident(1, 1);
    r.add_allocation(2, 4 * kMiB);
    r.make_resident(r.first_chunk(2), 2);
    CHECK(r.resident_bytes() == 7 * kMiB);
    CHECK(r.free_bytes() == 0);
    CHECK(r.peak_held_bytes() == 7 * kMiB);
    r.evict(0);
    CHECK_FALSE(r.is_resident(0));
    CHECK(r.resident_bytes() == 5 * kMiB);
    CHECK(r.remove_allocation(1));
    CHECK_FALSE(r.remove_allocation(1));
    CHECK_FALSE(r.is_live(1));
    CHECK(r.resident_bytes() == 2 * kMiB);
    CHECK(r.resident_chunk_count() == 1);
    CHECK(launch_chunks(r, {{1, 0, 0}}).empty());
}

TEST_CASE("residency: the LRU order follows touches", "[residency]") {
    Residency r(100 * kMiB);
    r.add_allocation(1, 8 * kMiB);
    for (ChunkId c = 0; c < 4; ++c) r.make_resident(c, c);
    r.touch(0, 10);
    r.touch(2, 11);
    CHECK(lru_order(r) == std::vector<ChunkId>{1, 3, 0, 2});
    CHECK(r.last_use(2) == 11);
    r.evict(3);
    CHECK(lru_order(r) == std::vector<ChunkId>{1, 0, 2});
}

TEST_CASE("residency: a launch's chunks are pinned until it is unpinned", "[residency]") {
    Residency r(100 * kMiB);
    r.add_allocation(1, 16 * kMiB); // chunks 0..7
    for (ChunkId c = 0; c < 8; ++c) CHECK_FALSE(r.is_pinned(c));
    const ChunkRange first[] = {{0, 1}, {4, 5}};
    r.pin_launch(first);
    for (ChunkId c = 0; c < 8; ++c) CHECK(r.is_pinned(c) == (c <= 1 || c == 4 || c == 5));
    r.unpin_launch();
    for (ChunkId c = 0; c < 8; ++c) CHECK_FALSE(r.is_pinned(c));
    // The next launch's chunks alone: the marks of the one before no longer count.
    const ChunkRange second[] = {{5, 7}};
    r.pin_launch(second);
    for (ChunkId c = 0; c < 8; ++c) CHECK(r.is_pinned(c) == (c >= 5));
    r.unpin_launch();
    r.unpin_launch(); // an extra unpin pins nothing
    for (ChunkId c = 0; c < 8; ++c) CHECK_FALSE(r.is_pinned(c));
}

TEST_CASE("residency: a chunk pinned long ago stays unpinned when the launch marks wrap around", "[residency]") {
    Residency r(100 * kMiB);
    r.add_allocation(1, 4 * kMiB); // chunks 0..1
    const ChunkRange first[] = {{0, 0}};
    const ChunkRange second[] = {{1, 1}};
    r.pin_launch(first);
    r.unpin_launch();
    bool ever_pinned_again = false;
    for (int launch = 0; launch < 70000; ++launch) {
        r.pin_launch(second);
        ever_pinned_again |= r.is_pinned(0) || !r.is_pinned(1);
        r.unpin_launch();
        ever_pinned_again |= r.is_pinned(0) || r.is_pinned(1);
    }
    CHECK_FALSE(ever_pinned_again);
}

TEST_CASE("residency: chunks given to a new allocation are not pinned", "[residency]") {
    Residency r(100 * kMiB, 2 * kMiB, ChunkIds::Reused);
    REQUIRE(r.add_allocation(1, 4 * kMiB)->first == 0); // chunks 0..1
    const ChunkRange both[] = {{0, 1}};
    r.pin_launch(both);
    r.remove_allocation(1);
    REQUIRE(r.add_allocation(2, 4 * kMiB)->first == 0); // the same ids, while the launch is pinned
    CHECK_FALSE(r.is_pinned(0));
    CHECK_FALSE(r.is_pinned(1));
}

TEST_CASE("residency: using a range is making resident and touching its chunks one by one", "[residency]") {
    Residency by_range = uneven_allocations(60 * kMiB), by_chunk = uneven_allocations(60 * kMiB);
    const ChunkId slots = by_range.chunk_slots();
    std::mt19937 random(7);
    for (uint64_t step = 1; step <= 3000; ++step) {
        // Evict a few at random, so that runs of the recency list break up.
        for (int k = 0; k < 3; ++k) {
            const ChunkId c = random() % slots;
            by_range.evict(c);
            by_chunk.evict(c);
        }
        const ChunkId first = random() % slots;
        const ChunkId last = std::min<ChunkId>(slots - 1, first + random() % 12);
        const ChunkRange range{first, last};
        uint64_t missing = 0;
        for (ChunkId c = first; c <= last; ++c)
            if (!by_chunk.is_resident(c)) missing += by_chunk.chunk_size(c);
        REQUIRE(by_range.missing_bytes(range) == missing);
        std::vector<ChunkId> fetched_by_range, fetched_by_chunk;
        by_range.use(range, step, [&](ChunkRange run) { for (ChunkId c = run.first; c <= run.last; ++c) fetched_by_range.push_back(c); });
        for (ChunkId c = first; c <= last; ++c) {
            if (!by_chunk.is_resident(c)) {
                by_chunk.make_resident(c, step);
                fetched_by_chunk.push_back(c);
            }
            by_chunk.touch(c, step);
        }
        REQUIRE(fetched_by_range == fetched_by_chunk);
        REQUIRE(lru_order(by_range) == lru_order(by_chunk));
        REQUIRE(by_range.resident_bytes() == by_chunk.resident_bytes());
        for (ChunkId c = first; c <= last; ++c) REQUIRE(by_range.last_use(c) == step);
    }
}

TEST_CASE("residency: the first missing chunk of a range", "[residency]") {
    Residency r(1000 * kMiB);
    r.add_allocation(1, 300 * kMiB); // chunks 0..149, across three 64-chunk words
    for (ChunkId c = 0; c < 150; ++c) r.make_resident(c, 0);
    CHECK(r.first_missing({0, 149}) == 150); // none: one past the range
    CHECK(r.first_missing({10, 20}) == 21);
    r.evict(130);
    CHECK(r.first_missing({5, 149}) == 130);
    CHECK(r.first_missing({130, 140}) == 130);
    CHECK(r.first_missing({131, 149}) == 150);
    r.evict(63);
    CHECK(r.first_missing({0, 200}) == 63);
    // Chunks not handed out yet are missing, from where the range starts.
    CHECK(r.first_missing({140, 200}) == 150);
    CHECK(r.first_missing({160, 170}) == 160);
    CHECK(r.missing_bytes({60, 140}) == 4 * kMiB);
}

TEST_CASE("residency: fetching and evicting a range is doing it chunk by chunk", "[residency]") {
    Residency by_range = uneven_allocations(80 * kMiB), by_chunk = uneven_allocations(80 * kMiB);
    const ChunkId slots = by_range.chunk_slots();
    std::mt19937 random(11);
    for (uint64_t step = 1; step <= 3000; ++step) {
        const ChunkId first = random() % slots;
        const ChunkRange range{first, std::min<ChunkId>(slots - 1, first + random() % 10)};
        uint64_t bytes = 0;
        for (ChunkId c = range.first; c <= range.last; ++c) bytes += by_chunk.chunk_size(c);
        REQUIRE(by_range.bytes_of(range) == bytes);
        if (random() % 2) {
            by_range.evict(range);
            for (ChunkId c = range.first; c <= range.last; ++c) by_chunk.evict(c);
        } else {
            // Partly resident ranges too: those chunks stay where they are.
            by_range.make_resident(range, step);
            for (ChunkId c = range.first; c <= range.last; ++c) by_chunk.make_resident(c, step);
        }
        REQUIRE(lru_order(by_range) == lru_order(by_chunk));
        REQUIRE(by_range.resident_bytes() == by_chunk.resident_bytes());
        REQUIRE(by_range.resident_chunk_count() == by_chunk.resident_chunk_count());
        REQUIRE(by_range.peak_held_bytes() == by_chunk.peak_held_bytes());
        for (ChunkId c = range.first; c <= range.last; ++c) {
            REQUIRE(by_range.is_resident(c) == by_chunk.is_resident(c));
            REQUIRE(by_range.last_use(c) == by_chunk.last_use(c));
        }
    }
}

TEST_CASE("residency: removed allocations' chunk ids go to later ones when reuse is on", "[residency]") {
    Residency r(100 * kMiB, 2 * kMiB, ChunkIds::Reused);
    REQUIRE(r.add_allocation(1, 10 * kMiB)->first == 0); // chunks 0..4
    REQUIRE(r.add_allocation(2, 4 * kMiB)->first == 5);  // 5..6
    r.make_resident({0, 4}, 3);
    const ChunkRange pinned[] = {{0, 1}};
    r.pin_launch(pinned);
    r.remove_allocation(1);
    CHECK(r.free_chunk_ids() == 5);

    // The smallest free run that holds it, from its start.
    const auto c = r.add_allocation(3, 5 * kMiB); // 3 chunks, the last short
    REQUIRE(c);
    CHECK(c->first == 0);
    CHECK(c->last == 2);
    CHECK(r.chunk_slots() == 7);
    CHECK(r.free_chunk_ids() == 2);
    // Nothing of allocation 1 is left on them.
    for (ChunkId id = 0; id <= 2; ++id) {
        CHECK_FALSE(r.is_resident(id));
        CHECK_FALSE(r.is_pinned(id));
        CHECK(r.is_chunk_live(id));
        CHECK(r.last_use(id) == 0);
        CHECK(r.alloc_id_of(id) == 3);
    }
    CHECK(r.chunk_size(2) == kMiB);
    CHECK(r.bytes_of({0, 2}) == 5 * kMiB);
    CHECK(r.resident_bytes() == 0);
    CHECK(launch_chunks(r, {{3, 0, 0}}) == std::vector<ChunkId>{0, 1, 2});
    CHECK(launch_chunks(r, {{1, 0, 0}}).empty()); // the removed one names nothing

    // Too large for the two ids left (3..4): new ids.
    CHECK(r.add_allocation(4, 6 * kMiB)->first == 7);
    // Free runs side by side join: 0..2 and 3..4 make room for five chunks.
    r.remove_allocation(3);
    CHECK(r.free_chunk_ids() == 5);
    CHECK(r.add_allocation(5, 10 * kMiB)->first == 0);
    CHECK(r.chunk_slots() == 10);
    CHECK(r.free_chunk_ids() == 0);
    // An allocation with no bytes has no chunks.
    CHECK_FALSE(r.add_allocation(6, 0));
}

TEST_CASE("residency: without reuse, ids are handed out once", "[residency]") {
    Residency r(100 * kMiB);
    r.add_allocation(1, 10 * kMiB);
    r.remove_allocation(1);
    CHECK(r.add_allocation(2, 4 * kMiB)->first == 5);
    CHECK(r.free_chunk_ids() == 0);
}

TEST_CASE("residency: a removed allocation leaves only its id behind", "[residency]") {
    for (const ChunkIds ids : {ChunkIds::NeverReused, ChunkIds::Reused}) {
        Residency r(100 * kMiB, 2 * kMiB, ids);
        r.add_allocation(1, 6 * kMiB); // chunks 0..2
        r.add_allocation(5'000'000, 3 * kMiB); // an id past the dense table: chunks 3..4
        r.make_resident({0, 4}, 1);
        CHECK(r.remove_allocation(1));
        CHECK(r.remove_allocation(5'000'000));
        for (const uint32_t id : {1u, 5'000'000u}) {
            CHECK(r.was_removed(id));
            CHECK_FALSE(r.is_live(id));
            CHECK(r.first_chunk(id) == kNoChunk);
            CHECK(r.chunk_count(id) == 0);
            CHECK_FALSE(r.remove_allocation(id));
            // An id is never handed out twice, removed or not.
            CHECK_THROWS_AS(r.add_allocation(id, kMiB), std::invalid_argument);
        }
        CHECK_FALSE(r.was_removed(2));
        CHECK(r.resident_bytes() == 0);
        // Chunks of removed memory belong to no allocation and read harmlessly.
        CHECK(r.alloc_id_of(4) == UINT32_MAX);
        CHECK_FALSE(r.is_chunk_live(4));
        // Ten thousand allocations, each removed once the next one is made: the
        // new ones take the freed slots, and each is found by its id and chunks.
        for (uint32_t id = 10; id < 10'010; ++id) {
            const auto chunks = r.add_allocation(id, 4 * kMiB);
            REQUIRE(chunks);
            CHECK(r.alloc_id_of(chunks->first) == id);
            CHECK(r.first_chunk(id) == chunks->first);
            CHECK(r.bytes_of(*chunks) == 4 * kMiB);
            if (id > 10) REQUIRE(r.remove_allocation(id - 1));
        }
        CHECK(r.is_live(10'009));
        CHECK(r.was_removed(10'008));
        if (ids == ChunkIds::Reused) CHECK(r.chunk_slots() <= 9);
    }
}

TEST_CASE("residency: without the recency list, residency, bytes and uses are the same", "[residency]") {
    Residency with_list = uneven_allocations(70 * kMiB), without = uneven_allocations(70 * kMiB);
    without.keep_recency_order(false);
    CHECK_FALSE(without.keeps_recency_order());
    const ChunkId slots = with_list.chunk_slots();
    std::mt19937 random(5);
    for (uint64_t step = 1; step <= 3000; ++step) {
        const ChunkId first = random() % slots;
        const ChunkRange range{first, std::min<ChunkId>(slots - 1, first + random() % 12)};
        std::vector<ChunkId> fetched_with, fetched_without;
        switch (random() % 4) {
        case 0:
            with_list.evict(range);
            without.evict(range);
            break;
        case 1:
            with_list.make_resident(range, step);
            without.make_resident(range, step);
            break;
        case 2:
            with_list.evict(range.first);
            without.evict(range.first);
            break;
        default:
            with_list.use(range, step, [&](ChunkRange run) { for (ChunkId c = run.first; c <= run.last; ++c) fetched_with.push_back(c); });
            without.use(range, step, [&](ChunkRange run) { for (ChunkId c = run.first; c <= run.last; ++c) fetched_without.push_back(c); });
        }
        REQUIRE(fetched_with == fetched_without);
        REQUIRE(with_list.resident_bytes() == without.resident_bytes());
        REQUIRE(with_list.resident_chunk_count() == without.resident_chunk_count());
        for (ChunkId c = range.first; c <= range.last; ++c) {
            REQUIRE(with_list.is_resident(c) == without.is_resident(c));
            REQUIRE(with_list.last_use(c) == without.last_use(c));
        }
    }
    CHECK(without.lru_front() == kNoChunk);
    // The list cannot start or stop halfway: it would miss the resident chunks.
    REQUIRE(without.resident_chunk_count() > 0);
    CHECK_THROWS_AS(without.keep_recency_order(true), std::logic_error);
}

TEST_CASE("residency: with given chunk ids an allocation takes the ids it is given", "[residency]") {
    Residency r(100 * kMiB, 2 * kMiB, ChunkIds::Given);
    // Past every id so far: the ids in between belong to nobody.
    const auto a = r.add_allocation(1, 4 * kMiB, 3);
    REQUIRE(a);
    CHECK(a->first == 3);
    CHECK(a->last == 4);
    CHECK(r.chunk_slots() == 5);
    for (ChunkId c = 0; c < 3; ++c) CHECK_FALSE(r.is_chunk_live(c));
    CHECK(r.is_chunk_live(3));
    CHECK(r.chunk_size(4) == 2 * kMiB);
    // Below them, and a removed allocation's ids taken again with nothing of it left.
    REQUIRE(r.add_allocation(2, 3 * kMiB, 0)->last == 1);
    CHECK(r.chunk_size(1) == 1 * kMiB);
    r.make_resident({3, 4}, 7);
    const ChunkRange pinned[] = {{3, 4}};
    r.pin_launch(pinned);
    r.remove_allocation(1);
    const auto c = r.add_allocation(3, 4 * kMiB, 3);
    REQUIRE(c);
    CHECK_FALSE(r.is_resident(3));
    CHECK_FALSE(r.is_pinned(4));
    CHECK(r.last_use(3) == 0);
    CHECK(r.alloc_id_of(4) == 3);
    CHECK(r.resident_bytes() == 0);
    // A size-0 allocation needs no ids.
    CHECK_FALSE(r.add_allocation(4, 0));
}

TEST_CASE("residency: given chunk ids are checked", "[residency]") {
    Residency given(100 * kMiB, 2 * kMiB, ChunkIds::Given);
    CHECK_THROWS_AS(given.add_allocation(1, 4 * kMiB), std::invalid_argument); // no first id
    given.add_allocation(1, 4 * kMiB, 0);
    CHECK_THROWS_AS(given.add_allocation(2, 4 * kMiB, 1), std::invalid_argument); // chunk 1 is allocation 1's
    CHECK_NOTHROW(given.add_allocation(3, 4 * kMiB, 2));
    Residency reused(100 * kMiB, 2 * kMiB, ChunkIds::Reused);
    CHECK_THROWS_AS(reused.add_allocation(1, 4 * kMiB, 0), std::invalid_argument); // ids are not given
}

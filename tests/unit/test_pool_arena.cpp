// The arena (PoolBook::make_arena, allocate_at): a slab apart for a layout
// planned for the step (core/pool/step_layout.h).
#include "pool_test_support.h"

#include <catch2/catch.hpp>

using namespace uvmp::pool;
using namespace uvmp::pool::testing;

TEST_CASE_METHOD(PoolTest, "pool: an arena takes blocks only where allocate_at names them", "[pool][arena]") {
    PoolBook book(small_config(), slabs, fences);
    CHECK_FALSE(book.arena_base());
    CHECK_FALSE(book.allocate_at(1ull << 40, 2 * MiB, kS1, 0)); // no arena yet
    std::vector<SlabEvent> events;
    const auto base = book.make_arena(15 * MiB, &events); // rounded up to chunks
    REQUIRE(base);
    REQUIRE(events.size() == 1);
    CHECK(events[0].bytes == 16 * MiB);
    CHECK(book.make_arena(64 * MiB) == base); // once
    CHECK(slabs.creates == 1);

    // Best fit never goes there: an ordinary allocation makes a slab of its own.
    auto ordinary = book.allocate(2 * MiB, kS1, 0, 0);
    REQUIRE(ordinary);
    CHECK(ordinary->slab_base != *base);

    auto a = book.allocate_at(*base + 4 * MiB, 4 * MiB, kS1, 7);
    REQUIRE(a);
    CHECK(a->address == *base + 4 * MiB);
    CHECK(a->fresh_begin == *base + 4 * MiB);
    CHECK(a->fresh_end == *base + 8 * MiB);
    CHECK(book.find(*base + 5 * MiB)->address == a->address);
    CHECK(book.figures(7).used == 4 * MiB);
    // Taken, overlapping, off the arena, off a chunk boundary: refused.
    CHECK_FALSE(book.allocate_at(*base + 6 * MiB, 2 * MiB, kS1, 0));
    CHECK_FALSE(book.allocate_at(*base + 2 * MiB, 4 * MiB, kS1, 0));
    CHECK_FALSE(book.allocate_at(*base + 14 * MiB, 4 * MiB, kS1, 0));
    CHECK_FALSE(book.allocate_at(*base + 1 * MiB, 2 * MiB, kS1, 0));
    // A small block needs the alignment only.
    auto small = book.allocate_at(*base + 512, 1024, kS1, 0);
    REQUIRE(small);
    CHECK(small->address == *base + 512);
    CHECK(small->fresh_bytes() == 2 * MiB);

    // Freed on S1: at once again on S1, over the pages it left (nothing fresh).
    const FenceKey f = fences.issue(kS1);
    CHECK(book.free(a->address, kS1, f, 1) == 4 * MiB);
    auto again = book.allocate_at(*base + 4 * MiB, 4 * MiB, kS1, 0);
    REQUIRE(again);
    CHECK(again->fresh_bytes() == 0);
    // The free took in the ready memory beside the block, which waits on f still.
    CHECK(fences.destroyed(f) == 0);

    // On another stream only once the fence has completed; never waited for.
    const FenceKey g = fences.issue(kS1);
    book.free(again->address, kS1, g, 2);
    CHECK_FALSE(book.allocate_at(*base + 4 * MiB, 4 * MiB, kS2, 0));
    CHECK_FALSE(book.allocate_at(*base + 4 * MiB, 4 * MiB, kNoStream, 0));
    CHECK(fences.waits == 0);
    fences.complete(g);
    auto other = book.allocate_at(*base + 4 * MiB, 4 * MiB, kS2, 0);
    REQUIRE(other);
    CHECK(fences.destroyed(f) == 1);
    CHECK(fences.destroyed(g) == 1);

    // Idle passes and trims leave the arena (wholly free or not) alone.
    book.free(other->address, kNoStream, 0, 3);
    book.free(small->address, kNoStream, 0, 3);
    book.free(ordinary->address, kNoStream, 0, 3);
    book.release_idle(10'000'000'000ull);
    book.trim(0);
    CHECK(book.arena_base() == base);
    CHECK(book.figures().slabs == 1);
    CHECK(book.allocate_at(*base, 16 * MiB, kNoStream, 0));
}

TEST_CASE_METHOD(PoolTest, "pool: allocate_at joins the ready and pending pieces of its range on its stream", "[pool][arena]") {
    PoolBook book(small_config(), slabs, fences);
    const auto base = book.make_arena(8 * MiB);
    REQUIRE(base);
    std::vector<Block> blocks;
    for (uint64_t i = 0; i < 4; ++i) {
        auto b = book.allocate_at(*base + i * 2 * MiB, 2 * MiB, kS1, 0);
        REQUIRE(b);
        blocks.push_back(*b);
    }
    // Pieces by turns: 0 pending on S1, 1 ready, 2 pending on S1 (a later fence), 3 live.
    const FenceKey f0 = fences.issue(kS1);
    book.free(blocks[0].address, kS1, f0, 1);
    const FenceKey f2 = fences.issue(kS1);
    book.free(blocks[2].address, kS1, f2, 1);
    book.free(blocks[1].address, kNoStream, 0, 1);
    // Live memory anywhere in the range refuses it.
    CHECK_FALSE(book.allocate_at(*base, 8 * MiB, kS1, 0));
    // S2 may not have the pending pieces; S1 has the three joined at once.
    CHECK_FALSE(book.allocate_at(*base, 6 * MiB, kS2, 0));
    auto joined = book.allocate_at(*base, 6 * MiB, kS1, 0);
    REQUIRE(joined);
    CHECK(joined->address == *base);
    CHECK(book.figures().used == 8 * MiB);
    CHECK(fences.destroyed(f0) == 1);
    CHECK(fences.destroyed(f2) == 1);
    book.free(joined->address, kNoStream, 0, 2);
    book.free(blocks[3].address, kNoStream, 0, 2);
    CHECK(fences.waits == 0);
    CHECK(book.figures().used == 0);
    auto whole = book.allocate_at(*base, 8 * MiB, kNoStream, 0);
    REQUIRE(whole);
}

TEST_CASE("pool: allocate_at refuses bad requests and is safe beside every other call", "[pool][arena]") {
    FakeSlabs slabs(4 * MiB);
    FakeFences fences;
    PoolBook book(small_config(), slabs, fences);
    CHECK_FALSE(book.make_arena(0));
    CHECK_FALSE(book.make_arena(8 * MiB)); // the guard refuses it
    CHECK_FALSE(book.arena_base());
    slabs.set_limit(~0ull);
    const auto base = book.make_arena(4 * MiB);
    REQUIRE(base);
    CHECK_FALSE(book.allocate_at(*base, 0, kS1, 0));
    CHECK_FALSE(book.allocate_at(*base + 100, 512, kS1, 0)); // off the alignment
    CHECK_FALSE(book.allocate_at(*base - 2 * MiB, 2 * MiB, kS1, 0));
    CHECK_FALSE(book.allocate_at(*base, 1ull << 63, kS1, 0));
}

TEST_CASE("pool: threads making the arena at once make one, within a guard that holds one", "[pool][arena]") {
    for (int round = 0; round < 50; ++round) {
        FakeSlabs slabs(12 * MiB); // room for one arena of 8 MiB, not two
        FakeFences fences;
        PoolBook book(small_config(), slabs, fences);
        std::optional<uint64_t> bases[4];
        std::vector<std::thread> threads;
        for (auto& base : bases) threads.emplace_back([&book, &base] { base = book.make_arena(8 * MiB); });
        for (auto& t : threads) t.join();
        for (const auto& base : bases) {
            REQUIRE(base);
            CHECK(base == bases[0]);
        }
        CHECK(slabs.creates == 1);
        CHECK(slabs.refusals == 0);
    }
}

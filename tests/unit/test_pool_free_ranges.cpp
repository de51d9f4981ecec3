// Where the pool puts a block (core/pool/block_placement.h) and how its free
// memory merges (core/pool/free_ranges.h): alignment, best fit, coalescing,
// and placement over dead memory still on the GPU.
#include "pool_test_support.h"

#include "core/pool/free_index.h"

#include <catch2/catch.hpp>

using namespace uvmp::pool;
using namespace uvmp::pool::testing;

TEST_CASE_METHOD(PoolTest, "pool: large blocks start on chunk boundaries, small ones on the alignment", "[pool]") {
    PoolBook book(small_config(16 * MiB), slabs, fences);
    auto tiny = book.allocate(1, kS1, 0, 0);
    REQUIRE(tiny);
    CHECK(tiny->size == 512);
    const uint64_t base = tiny->slab_base;
    CHECK(tiny->address == base);
    auto big = book.allocate(3 * MiB, kS1, 0, 0);
    REQUIRE(big);
    CHECK(big->address == base + 2 * MiB);
    // The gap in front of it serves smaller requests.
    auto gap = book.allocate(1 * MiB, kS1, 0, 0);
    REQUIRE(gap);
    CHECK(gap->address == base + 512);
    auto odd = book.allocate(1000, kS1, 0, 0);
    REQUIRE(odd);
    CHECK(odd->address == base + 512 + 1 * MiB);
    CHECK(odd->size == 1024);
    // 3 MiB ends mid-chunk: the next large block starts on the next boundary.
    auto chunk = book.allocate(2 * MiB, kS1, 0, 0);
    REQUIRE(chunk);
    CHECK(chunk->address == base + 6 * MiB);
    auto after = book.allocate(4 * KiB, kS1, 0, 0);
    REQUIRE(after);
    // The best fit: what is left of the first gap (1 MiB less 1.5 KiB), not the
    // 1 MiB gap in front of `chunk`.
    CHECK(after->address == odd->address + 1024);
    auto after2 = book.allocate(1 * MiB, kS1, 0, 0);
    REQUIRE(after2);
    CHECK(after2->address == base + 5 * MiB);

    // Random sizes: every block aligned, inside its slab, no two overlapping.
    std::mt19937_64 rng(7);
    std::map<uint64_t, uint64_t> blocks;
    for (int i = 0; i < 400; ++i) {
        const uint64_t range = rng() % 2 ? 6 * MiB : 64 * KiB;
        const uint64_t bytes = 1 + rng() % range;
        auto b = book.allocate(bytes, kS1, 0, 0);
        REQUIRE(b);
        CHECK(b->size == (bytes + 511) / 512 * 512);
        CHECK((b->address - b->slab_base) % (b->size >= 2 * MiB ? 2 * MiB : 512) == 0);
        CHECK(b->address + b->size <= b->slab_base + 16 * MiB);
        auto next = blocks.upper_bound(b->address);
        if (next != blocks.end()) CHECK(b->address + b->size <= next->first);
        if (next != blocks.begin()) CHECK(std::prev(next)->second <= b->address);
        blocks[b->address] = b->address + b->size;
        if (rng() % 3 == 0) {
            auto victim = blocks.begin();
            std::advance(victim, static_cast<long>(rng() % blocks.size()));
            CHECK(book.free(victim->first, kNoStream, 0, 0));
            blocks.erase(victim);
        }
    }
}

TEST_CASE_METHOD(PoolTest, "pool: best fit, coalescing and fragmentation", "[pool]") {
    PoolBook book(small_config(16 * MiB), slabs, fences);

    SECTION("the smallest hole that holds a request is used") {
        const uint64_t sizes[] = {1 * MiB, 64 * KiB, 512 * KiB, 64 * KiB, 256 * KiB, 64 * KiB};
        std::vector<Block> b;
        for (uint64_t s : sizes) b.push_back(*book.allocate(s, kS1, 0, 0));
        for (int i : {0, 2, 4}) book.free(b[static_cast<size_t>(i)].address, kNoStream, 0, 0);
        CHECK(book.allocate(200 * KiB, kS1, 0, 0)->address == b[4].address);
        CHECK(book.allocate(400 * KiB, kS1, 0, 0)->address == b[2].address);
        CHECK(book.allocate(900 * KiB, kS1, 0, 0)->address == b[0].address);
    }

    SECTION("holes too small for a request: new memory; the holes coalesced: the old slab") {
        std::vector<Block> b;
        for (int i = 0; i < 16; ++i) b.push_back(*book.allocate(1 * MiB, kS1, 0, 0));
        for (const Block& x : b) CHECK(x.slab == 1);
        for (size_t i = 0; i < b.size(); i += 2) book.free(b[i].address, kNoStream, 0, 0);
        CHECK(book.figures().used == 8 * MiB);
        auto wide = book.allocate(1 * MiB + 512 * KiB, kS1, 0, 0);
        REQUIRE(wide);
        CHECK(wide->slab == 2);
        // A hole still takes what fits in it (of equal holes, the last freed).
        auto fits = book.allocate(1 * MiB, kS1, 0, 0);
        REQUIRE(fits);
        CHECK(fits->address == b[14].address);
        book.free(fits->address, kNoStream, 0, 0);
        for (size_t i = 1; i < b.size(); i += 2) book.free(b[i].address, kNoStream, 0, 0);
        auto whole = book.allocate(16 * MiB, kS1, 0, 0);
        REQUIRE(whole);
        CHECK(whole->slab == 1);
        CHECK(whole->address == b[0].address);
        CHECK(slabs.creates == 2);
    }

    SECTION("pending blocks of one stream coalesce; of two streams, never") {
        std::vector<Block> b;
        for (int i = 0; i < 4; ++i) b.push_back(*book.allocate(4 * MiB, kS1, 0, 0));
        const FenceKey f0 = fences.issue(kS1), f1 = fences.issue(kS1), f2 = fences.issue(kS2);
        book.free(b[0].address, kS1, f0, 0);
        book.free(b[1].address, kS1, f1, 0);
        // Merged into one block pending on the later fence: the earlier is let go.
        CHECK(fences.destroyed(f0) == 1);
        CHECK(fences.destroyed(f1) == 0);
        book.free(b[2].address, kS2, f2, 0);
        // S1 may use its 8 MiB at once, but not S2's neighbour.
        auto s1 = book.allocate(8 * MiB, kS1, 0, 0);
        REQUIRE(s1);
        CHECK(s1->address == b[0].address);
        CHECK(fences.destroyed(f1) == 1);
        book.free(s1->address, kS1, fences.issue(kS1), 0);
        auto s1b = book.allocate(12 * MiB, kS1, 0, 0);
        REQUIRE(s1b);
        CHECK(s1b->slab == 2);
        // Once both complete, everything coalesces with the ready tail.
        fences.complete_all();
        book.free(b[3].address, kNoStream, 0, 0);
        auto all = book.allocate(16 * MiB, kS3, 0, 0);
        REQUIRE(all);
        CHECK(all->address == b[0].address);
    }
}

TEST_CASE("pool: with a placement hint, a block goes over dead memory still on the GPU", "[pool][placement]") {
    FakeSlabs slabs;
    FakeFences fences;
    PoolBook book(small_config(64 * MiB), slabs, fences);
    auto hint = std::make_shared<FakeHint>();
    std::vector<Block> b;
    for (int i = 0; i < 4; ++i) b.push_back(*book.allocate(8 * MiB, kS1, 0, 0));
    // Two equal holes apart: best fit takes the one freed last.
    book.free(b[2].address, kNoStream, 0, 0);
    book.free(b[0].address, kNoStream, 0, 0);

    SECTION("best fit alone, without a hint") {
        CHECK(book.allocate(8 * MiB, kS1, 0, 0)->address == b[0].address);
    }
    SECTION("the hole whose bytes are still on the GPU, with one") {
        hint->dead = {{b[2].address, b[2].address + 8 * MiB}};
        book.set_placement_hint(hint);
        CHECK(book.allocate(8 * MiB, kS1, 0, 0)->address == b[2].address);
        CHECK(hint->asked > 0);
    }
    SECTION("flush with a dead extent inside a larger piece, on a chunk boundary") {
        // b[2], b[3] and the free tail of the slab join into one 48 MiB piece,
        // whose dead bytes are the middle of what b[3] held.
        book.free(b[3].address, kNoStream, 0, 0);
        hint->dead = {{b[3].address + 3 * MiB, b[3].address + 7 * MiB}};
        book.set_placement_hint(hint);
        const auto got = book.allocate(4 * MiB, kS1, 0, 0);
        REQUIRE(got);
        // Starting at the extent's chunk (2 MiB in) covers 3 of its 4 MiB;
        // ending flush with it (from 3 MiB in, aligned down to 2 MiB) the same.
        CHECK(got->address == b[3].address + 2 * MiB);
        CHECK(got->address % (2 * MiB) == 0);
    }
    SECTION("where the hint names nothing, best fit as before") {
        hint->dead = {{b[1].address, b[1].address + 8 * MiB}}; // live: no free piece holds it
        book.set_placement_hint(hint);
        CHECK(book.allocate(8 * MiB, kS1, 0, 0)->address == b[0].address);
    }
    SECTION("blocks smaller than a chunk are placed by best fit, not asked about") {
        hint->dead = {{b[2].address, b[2].address + 8 * MiB}};
        book.set_placement_hint(hint);
        CHECK(book.allocate(1 * MiB, kS1, 0, 0)->address == b[0].address);
        CHECK(hint->asked == 0);
    }
    SECTION("of two pieces covering as much, the smaller") {
        book.free(b[3].address, kNoStream, 0, 0); // b[2], b[3] and the tail: one piece of 48 MiB
        hint->dead = {{b[0].address, b[0].address + 8 * MiB}, {b[2].address, b[2].address + 8 * MiB}};
        book.set_placement_hint(hint);
        CHECK(book.allocate(8 * MiB, kS1, 0, 0)->address == b[0].address);
    }
    SECTION("the hint taken away: best fit again") {
        hint->dead = {{b[2].address, b[2].address + 8 * MiB}};
        book.set_placement_hint(hint);
        book.set_placement_hint(nullptr);
        CHECK(book.allocate(8 * MiB, kS1, 0, 0)->address == b[0].address);
    }
}

TEST_CASE("pool: the free index finds the smallest piece that holds a size", "[pool]") {
    Slab slab;
    slab.base = 0;
    std::vector<Piece> pieces(5);
    const uint64_t sizes[] = {4 * KiB, 64 * KiB, 1 * KiB, 64 * KiB, 3 * MiB};
    FreeIndex index(9); // units of 512 bytes
    CHECK(index.empty());
    for (size_t i = 0; i < pieces.size(); ++i) {
        pieces[i].addr = i * 4 * MiB;
        pieces[i].size = sizes[i];
        pieces[i].slab = &slab;
        index.insert(&pieces[i]);
    }
    auto anywhere = [](const Piece* p, uint64_t, uint64_t& at) {
        at = p->addr;
        return true;
    };
    uint64_t start = 0;
    CHECK(index.best(2 * KiB, 2 * KiB, anywhere, start) == &pieces[0]);
    CHECK(start == pieces[0].addr);
    // Equal sizes: the most recently inserted first.
    CHECK(index.best(5 * KiB, 5 * KiB, anywhere, start) == &pieces[3]);
    CHECK(index.best(1 * MiB, 1 * MiB, anywhere, start) == &pieces[4]);
    CHECK(index.best(4 * MiB, 4 * MiB, anywhere, start) == nullptr);
    index.erase(&pieces[3]);
    CHECK(pieces[3].index == nullptr);
    CHECK(index.best(5 * KiB, 5 * KiB, anywhere, start) == &pieces[1]);
    std::vector<uint64_t> visited;
    index.each_holding(4 * KiB, 16, [&](Piece* p) {
        visited.push_back(p->size);
        return true;
    });
    CHECK(visited == std::vector<uint64_t>{4 * KiB, 64 * KiB, 3 * MiB});
    for (Piece* p : {&pieces[0], &pieces[1], &pieces[2], &pieces[4]}) index.erase(p);
    CHECK(index.empty());
}

// The pool's slabs (core/pool/slab_set.h): ids, slabs of their own, the
// chunks blocks cover (reserved), and idle slabs given back.
#include "pool_test_support.h"

#include <catch2/catch.hpp>

#include <memory>
#include <set>

using namespace uvmp::pool;
using namespace uvmp::pool::testing;

TEST_CASE_METHOD(PoolTest, "pool: a block says which whole chunks it is the first to cover", "[pool]") {
    PoolBook book(small_config(), slabs, fences);
    // The first block of a fresh slab: its chunk, whole, has no pages yet.
    auto a = book.allocate(1000, kS1, 0, 0);
    REQUIRE(a);
    CHECK(a->fresh_begin == a->slab_base);
    CHECK(a->fresh_bytes() == 2 * MiB);
    // Another in the same chunk finds its pages there.
    auto b = book.allocate(1000, kS1, 0, 1);
    REQUIRE(b);
    CHECK(b->fresh_bytes() == 0);
    // A block of a chunk or more starts on a chunk of its own: the two it
    // reaches into are fresh, the second only partly its own.
    auto c = book.allocate(3 * MiB, kS1, 0, 2);
    REQUIRE(c);
    CHECK(c->fresh_begin == c->address);
    CHECK(c->fresh_bytes() == 4 * MiB);
    CHECK(book.figures().reserved == 6 * MiB);
    // A small one lands in covered memory (the first chunk's rest, or c's
    // second chunk's): not fresh.
    auto e = book.allocate(512 * 1024, kS1, 0, 3);
    REQUIRE(e);
    CHECK(e->address + e->size <= c->fresh_end);
    CHECK(e->fresh_bytes() == 0);
    // Freed and allocated again in the same memory: nothing fresh.
    book.free(c->address, kS1, 0, 4);
    auto d = book.allocate(3 * MiB, kS1, 0, 5);
    REQUIRE(d);
    CHECK(d->address == c->address);
    CHECK(d->fresh_bytes() == 0);
    // find() tells of a live block, not of its first allocation.
    CHECK(book.find(d->address)->fresh_bytes() == 0);
}

TEST_CASE_METHOD(PoolTest, "pool: slab ids count up from first_slab_id", "[pool]") {
    PoolConfig c = small_config();
    c.first_slab_id = 1u << 31;
    PoolBook book(c, slabs, fences);
    const auto a = book.allocate(c.slab_bytes, kNoStream, 0, 0);
    const auto b = book.allocate(c.slab_bytes, kNoStream, 0, 0);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->slab == 1u << 31);
    CHECK(b->slab == (1u << 31) + 1);
}

TEST_CASE_METHOD(PoolTest, "pool: a request larger than a slab gets a slab of its own", "[pool]") {
    PoolBook book(small_config(4 * MiB), slabs, fences);
    std::vector<SlabEvent> events;
    auto big = book.allocate(5 * MiB + 1, kS1, 0, 0, &events);
    REQUIRE(big);
    CHECK(big->size == 5 * MiB + 512);
    REQUIRE(events.size() == 1);
    CHECK_FALSE(events[0].released);
    CHECK(events[0].bytes == 6 * MiB);
    CHECK(events[0].base == big->slab_base);
    CHECK(events[0].slab == big->slab);
    CHECK(big->address == big->slab_base);
    CHECK(book.figures().reserved == 6 * MiB);
    auto small = book.allocate(1 * MiB, kS1, 0, 0, &events);
    REQUIRE(small);
    CHECK(small->slab != big->slab); // the dedicated slab's tail (1 MiB less 512 B) is too small
    CHECK(events.size() == 2);
    CHECK(events[1].bytes == 4 * MiB);
    // Freed, the dedicated slab serves the next large request.
    book.free(big->address, kNoStream, 0, 1);
    auto again = book.allocate(5 * MiB, kS2, 0, 2, &events);
    REQUIRE(again);
    CHECK(again->slab == big->slab);
    CHECK(events.size() == 2);
}

TEST_CASE_METHOD(PoolTest, "pool: idle slabs are given back after release_after_ns, retain_bytes respected", "[pool]") {
    PoolConfig config = small_config(4 * MiB);
    config.release_after_ns = 1000;

    SECTION("release_idle") {
        PoolBook book(config, slabs, fences);
        auto a = book.allocate(4 * MiB, kS1, 0, 0);
        book.free(a->address, kNoStream, 0, 100);
        std::vector<SlabEvent> events;
        book.release_idle(1099, &events);
        CHECK(events.empty());
        CHECK(book.figures().slabs == 1);
        book.release_idle(1100, &events);
        REQUIRE(events.size() == 1);
        CHECK(events[0].released);
        CHECK(events[0].slab == a->slab);
        CHECK(events[0].base == a->slab_base);
        CHECK(events[0].bytes == 4 * MiB);
        CHECK(book.figures().slabs == 0);
        CHECK(book.figures().reserved == 0);
        CHECK(slabs.live_bytes == 0);
        CHECK(slabs.bad_releases == 0);
    }

    SECTION("allocate and free give back idle slabs themselves") {
        PoolBook book(config, slabs, fences);
        auto a = book.allocate(4 * MiB, kS1, 0, 0);
        auto b = book.allocate(4 * MiB, kS1, 0, 0);
        book.free(a->address, kNoStream, 0, 0);
        std::vector<SlabEvent> events;
        book.free(b->address, kNoStream, 0, 5000, &events);
        REQUIRE(events.size() == 1);
        CHECK(events[0].slab == a->slab);
        events.clear();
        // b's slab, idle since 5000, serves this one: it is not given back.
        auto c = book.allocate(1 * MiB, kS1, 0, 7000, &events);
        REQUIRE(c);
        CHECK(c->slab == b->slab);
        CHECK(events.empty());
        book.free(c->address, kNoStream, 0, 8000);
        // A request it cannot serve: the idle slab goes, a dedicated one comes.
        auto d = book.allocate(6 * MiB, kS1, 0, 9000, &events);
        REQUIRE(d);
        REQUIRE(events.size() == 2);
        CHECK(events[0].released);
        CHECK(events[0].slab == b->slab);
        CHECK_FALSE(events[1].released);
        CHECK(book.figures().slabs == 1);
    }

    SECTION("the newest retain_bytes of wholly free slabs are kept; trim gives them back") {
        config.retain_bytes = 4 * MiB;
        PoolBook book(config, slabs, fences);
        std::vector<Block> b;
        for (int i = 0; i < 3; ++i) b.push_back(*book.allocate(4 * MiB, kS1, 0, 0));
        for (int i = 0; i < 3; ++i) book.free(b[static_cast<size_t>(i)].address, kNoStream, 0, 10 + 10 * static_cast<uint64_t>(i));
        std::vector<SlabEvent> events;
        book.release_idle(100000, &events);
        REQUIRE(events.size() == 2);
        std::set<uint32_t> gone{events[0].slab, events[1].slab};
        CHECK(gone == std::set<uint32_t>{b[0].slab, b[1].slab});
        book.release_idle(~0ull, &events);
        CHECK(events.size() == 2);
        CHECK(book.figures().slabs == 1);
        // The kept one serves again.
        auto again = book.allocate(4 * MiB, kS2, 0, 200000);
        REQUIRE(again);
        CHECK(again->slab == b[2].slab);
        book.free(again->address, kNoStream, 0, 200001);
        book.trim(0, &events);
        REQUIRE(events.size() == 3);
        CHECK(events[2].slab == b[2].slab);
        CHECK(book.figures().reserved == 0);
    }

    SECTION("a slab kept for retain_bytes goes when due once a newer one is wholly free") {
        config.retain_bytes = 4 * MiB;
        PoolBook book(config, slabs, fences);
        auto a = book.allocate(4 * MiB, kS1, 0, 0);
        auto b = book.allocate(4 * MiB, kS1, 0, 0);
        auto c = book.allocate(1 * MiB, kS1, 0, 0);
        book.free(a->address, kNoStream, 0, 10);
        std::vector<SlabEvent> events;
        book.release_idle(20, &events); // a's slab: kept for retain_bytes
        CHECK(events.empty());
        book.free(b->address, kNoStream, 0, 30); // now b's is the one kept
        // a's slab is due at 1010, b's at 1030: the next call after 1010 gives a's back.
        auto d = book.allocate(512, kS1, 0, 1015, &events);
        REQUIRE(d);
        CHECK(d->slab == c->slab);
        REQUIRE(events.size() == 1);
        CHECK(events[0].slab == a->slab);
        book.release_idle(~0ull, &events);
        CHECK(events.size() == 1);
    }

    SECTION("trim keeps keep_bytes, never live blocks, and waits for pending frees") {
        PoolBook book(config, slabs, fences);
        std::vector<Block> b;
        for (int i = 0; i < 4; ++i) b.push_back(*book.allocate(4 * MiB, kS1, 0, 0));
        for (int i = 0; i < 3; ++i) book.free(b[static_cast<size_t>(i)].address, kNoStream, 0, static_cast<uint64_t>(i));
        std::vector<SlabEvent> events;
        book.trim(8 * MiB, &events);
        REQUIRE(events.size() == 2); // the two least recently used
        CHECK(events[0].slab == b[0].slab);
        CHECK(events[1].slab == b[1].slab);
        CHECK(book.figures().reserved == 8 * MiB);
        book.trim(0, &events);
        CHECK(events.size() == 3);
        CHECK(book.figures().slabs == 1); // b[3] is live
        const FenceKey f = fences.issue(kS1);
        book.free(b[3].address, kS1, f, 10);
        book.trim(0, &events);
        CHECK(fences.waits == 1);
        CHECK(fences.destroyed(f) == 1);
        CHECK(events.size() == 4);
        CHECK(book.figures().slabs == 0);
    }

    SECTION("a slab whose last free is pending goes once its fence completes") {
        PoolBook book(config, slabs, fences);
        auto a = book.allocate(4 * MiB, kS1, 0, 0);
        const FenceKey f = fences.issue(kS1);
        book.free(a->address, kS1, f, 0);
        std::vector<SlabEvent> events;
        book.release_idle(5000, &events);
        CHECK(events.empty());
        CHECK(fences.queries == 1);
        fences.complete(f);
        book.release_idle(5001, &events);
        CHECK(events.size() == 1);
        CHECK(fences.destroyed(f) == 1);
        CHECK(fences.waits == 0);
    }

    SECTION("release_after 0: a slab goes as soon as it is wholly free") {
        config.release_after_ns = 0;
        PoolBook book(config, slabs, fences);
        auto a = book.allocate(4 * MiB, kS1, 0, 0);
        std::vector<SlabEvent> events;
        book.free(a->address, kNoStream, 0, 0, &events);
        CHECK(events.size() == 1);
        CHECK(book.figures().slabs == 0);
    }
}

TEST_CASE_METHOD(PoolTest, "pool: once GPU room is short, a slab goes back as soon as it is wholly free", "[pool]") {
    PoolConfig config = small_config(4 * MiB);
    config.release_after_ns = 1'000'000'000;
    PoolBook book(config, slabs, fences);
    auto hint = std::make_shared<FakeHint>();
    book.set_placement_hint(hint);
    std::vector<SlabEvent> events;
    auto a = book.allocate(4 * MiB, kS1, 0, 0);
    auto b = book.allocate(4 * MiB, kS1, 0, 0);
    REQUIRE(a);
    REQUIRE(b);

    SECTION("room enough: kept for release_after_ns") {
        book.free(a->address, kNoStream, 0, 10, &events);
        book.free(b->address, kNoStream, 0, 20, &events);
        CHECK(events.empty());
        CHECK(book.figures().slabs == 2);
    }
    SECTION("room short: given back by the free that leaves it wholly free") {
        hint->room_short = true;
        book.free(a->address, kNoStream, 0, 10, &events);
        REQUIRE(events.size() == 1);
        CHECK(events[0].released);
        CHECK(events[0].slab == a->slab);
        CHECK(book.figures().slabs == 1);
        CHECK(slabs.bad_releases == 0);
    }
    SECTION("room short: a slab whose last free is pending goes once its fence completes") {
        hint->room_short = true;
        const FenceKey f = fences.issue(kS1);
        book.free(a->address, kS1, f, 10, &events);
        CHECK(events.empty());
        fences.complete(f);
        // The fence is asked again a millisecond on, at the next call.
        book.free(b->address, kNoStream, 0, 2'000'000, &events);
        std::set<uint32_t> gone;
        for (const SlabEvent& e : events) gone.insert(e.slab);
        CHECK(gone == std::set<uint32_t>{a->slab, b->slab});
        CHECK(book.figures().slabs == 0);
    }
    SECTION("room short: retain_bytes still kept") {
        PoolConfig keep = config;
        keep.retain_bytes = 4 * MiB;
        FakeSlabs own;
        PoolBook kept(keep, own, fences);
        kept.set_placement_hint(hint);
        hint->room_short = true;
        auto c = kept.allocate(4 * MiB, kS1, 0, 0);
        REQUIRE(c);
        kept.free(c->address, kNoStream, 0, 10, &events);
        CHECK(events.empty());
        CHECK(kept.figures().slabs == 1);
    }
}

TEST_CASE_METHOD(PoolTest, "pool: reserved counts the chunks that blocks have covered", "[pool]") {
    PoolBook book(small_config(16 * MiB), slabs, fences);
    // A block of 3 MiB at the slab's start covers two chunks; the rest of the
    // slab is address space only.
    auto a = book.allocate(3 * MiB, kS1, 1, 0);
    REQUIRE(a);
    CHECK(book.figures().slab_bytes == 16 * MiB);
    CHECK(book.figures().reserved == 4 * MiB);
    // A small block in the partly covered chunk adds nothing.
    auto b = book.allocate(4096, kS1, 1, 0);
    REQUIRE(b);
    CHECK(b->address < a->address + 4 * MiB);
    CHECK(book.figures().reserved == 4 * MiB);
    // Freed, a block's pages stay: reserved does not drop, and reusing the
    // range does not count it twice.
    book.free(a->address, kNoStream, 0, 0);
    CHECK(book.figures().reserved == 4 * MiB);
    auto c = book.allocate(2 * MiB, kS1, 1, 0);
    REQUIRE(c);
    CHECK(c->address == a->address);
    CHECK(book.figures().reserved == 4 * MiB);
    // Past the covered chunks, a block adds the chunks it reaches into.
    auto d = book.allocate(5 * MiB, kS1, 1, 0);
    REQUIRE(d);
    CHECK(book.figures().reserved == 10 * MiB);
    CHECK(book.figures().reserved_high == 10 * MiB);
    // A slab given back takes its covered chunks with it.
    for (auto block : {b, c, d}) book.free(block->address, kNoStream, 0, 0);
    book.trim(0);
    CHECK(book.figures().slabs == 0);
    CHECK(book.figures().reserved == 0);
    CHECK(book.figures().slab_bytes == 0);
    CHECK(book.figures().reserved_high == 10 * MiB);
}

// The managed pool's bookkeeping as its users see it (core/pool/pool_book.h):
// its config's rules, its figures, find(), and many threads at once. The
// rooms behind it have their own files: test_pool_free_ranges.cpp,
// test_pool_pending_frees.cpp, test_pool_slab_set.cpp, test_pool_arena.cpp.
#include "pool_test_support.h"

#include <catch2/catch.hpp>

using namespace uvmp::pool;
using namespace uvmp::pool::testing;

TEST_CASE_METHOD(PoolTest, "pool: a bad config throws", "[pool]") {
    auto bad = [&](auto edit) {
        PoolConfig c = small_config();
        edit(c);
        return [c, this] { PoolBook book(c, slabs, fences); };
    };
    CHECK_THROWS_AS(bad([](PoolConfig& c) { c.chunk_bytes = 3 * MiB; })(), std::invalid_argument);
    CHECK_THROWS_AS(bad([](PoolConfig& c) { c.chunk_bytes = 0; })(), std::invalid_argument);
    CHECK_THROWS_AS(bad([](PoolConfig& c) { c.alignment = 384; })(), std::invalid_argument);
    CHECK_THROWS_AS(bad([](PoolConfig& c) { c.alignment = 4 * MiB; })(), std::invalid_argument);
    CHECK_THROWS_AS(bad([](PoolConfig& c) { c.alignment = 0; })(), std::invalid_argument);
    CHECK_THROWS_AS(bad([](PoolConfig& c) { c.slab_bytes = 0; })(), std::invalid_argument);
    CHECK_THROWS_AS(bad([](PoolConfig& c) { c.slab_bytes = 3 * MiB; })(), std::invalid_argument);
    CHECK_THROWS_AS(bad([](PoolConfig& c) { c.first_slab_id = 0; })(), std::invalid_argument);
    CHECK_NOTHROW(bad([](PoolConfig&) {})());
    CHECK_NOTHROW(PoolBook(PoolConfig{}, slabs, fences));
    CHECK(slabs.creates == 0);
}

TEST_CASE_METHOD(PoolTest, "pool: figures and high marks per tag", "[pool]") {
    PoolBook book(small_config(4 * MiB), slabs, fences);
    auto a = book.allocate(1000, kS1, 1, 0);
    auto b = book.allocate(3000, kS1, 2, 0);
    auto c = book.allocate(1 * MiB, kS1, 2, 0);
    PoolFigures one = book.figures(1), two = book.figures(2), all = book.figures();
    CHECK(one.used == 1024);
    CHECK(one.blocks == 1);
    CHECK(two.used == 3072 + 1 * MiB);
    CHECK(two.blocks == 2);
    CHECK(all.used == 1024 + 3072 + 1 * MiB);
    CHECK(all.blocks == 3);
    // Reserved: the chunks blocks have covered (all three lie in the first).
    CHECK(one.reserved == 2 * MiB);
    CHECK(all.reserved_high == 2 * MiB);
    CHECK(all.slab_bytes == 4 * MiB);
    CHECK(all.slabs == 1);
    CHECK(book.figures(99).used == 0);

    book.free(c->address, kS1, fences.issue(kS1), 0);
    two = book.figures(2);
    CHECK(two.used == 3072);
    CHECK(two.used_high == 3072 + 1 * MiB);
    book.reset_used_high(2);
    CHECK(book.figures(2).used_high == 3072);
    CHECK(book.figures(1).used_high == 1024);

    // A dedicated slab raises the reserved high mark; given back, the mark stays
    // until reset.
    auto big = book.allocate(6 * MiB, kS1, 1, 0);
    REQUIRE(big);
    CHECK(book.figures().reserved_high == 8 * MiB);
    book.free(big->address, kNoStream, 0, 0);
    book.trim(0);
    CHECK(book.figures().reserved == 2 * MiB);
    CHECK(book.figures().reserved_high == 8 * MiB);
    book.reset_reserved_high();
    CHECK(book.figures().reserved_high == 2 * MiB);
    CHECK(book.figures(1).used_high == 1024 + 6 * MiB);
    book.free(a->address, kNoStream, 0, 0);
    book.free(b->address, kNoStream, 0, 0);
    CHECK(book.figures().used == 0);
    CHECK(book.figures().blocks == 0);
}

TEST_CASE_METHOD(PoolTest, "pool: find answers for addresses inside live blocks", "[pool]") {
    PoolBook book(small_config(), slabs, fences);
    auto a = book.allocate(4096, kS1, 0, 0);
    auto b = book.allocate(8192, kS1, 0, 0);
    REQUIRE(book.find(a->address));
    CHECK(book.find(a->address + 4095)->address == a->address);
    CHECK(book.find(b->address + 100)->address == b->address);
    CHECK(book.find(b->address + 100)->slab == b->slab);
    CHECK_FALSE(book.find(b->address + 8192));
    CHECK_FALSE(book.find(a->address - 1));
    book.free(a->address, kNoStream, 0, 0);
    CHECK_FALSE(book.find(a->address));
    CHECK_FALSE(book.free(a->address, kNoStream, 0, 0));
    CHECK_FALSE(book.free(b->address + 512, kNoStream, 0, 0));
    CHECK(book.find(b->address));
    CHECK_FALSE(book.allocate(0, kS1, 0, 0));
}

TEST_CASE("pool: eight threads allocating and freeing on their own streams", "[pool]") {
    FakeSlabs slabs(1ull << 40);
    FakeFences fences;
    std::mutex map_mutex;
    std::map<uint64_t, uint64_t> live_ranges; // start -> end, across threads
    std::atomic<int> overlaps{0}, failures{0};
    std::atomic<uint64_t> clock{0};
    {
        PoolConfig config = small_config(32 * MiB);
        config.release_after_ns = 200;
        PoolBook book(config, slabs, fences);
        std::vector<std::thread> threads;
        for (int t = 0; t < 8; ++t)
            threads.emplace_back([&, t] {
                std::mt19937_64 rng(static_cast<uint64_t>(t) + 1);
                const StreamKey mine = 0x1000 + static_cast<uint64_t>(t);
                std::vector<Block> held;
                std::vector<FenceKey> mine_fences;
                for (int i = 0; i < 3000; ++i) {
                    const uint64_t now = clock.fetch_add(1);
                    if (held.size() < 24 && (held.empty() || rng() % 2)) {
                        const uint64_t range = rng() % 8 == 0 ? 40 * MiB : 512 * KiB;
                        const uint64_t bytes = 1 + rng() % range;
                        auto b = book.allocate(bytes, mine, static_cast<PoolTag>(t % 3), now);
                        if (!b) {
                            ++failures;
                            continue;
                        }
                        std::lock_guard lock(map_mutex);
                        auto next = live_ranges.lower_bound(b->address);
                        if (next != live_ranges.end() && next->first < b->address + b->size) ++overlaps;
                        if (next != live_ranges.begin() && std::prev(next)->second > b->address) ++overlaps;
                        live_ranges[b->address] = b->address + b->size;
                        held.push_back(*b);
                    } else {
                        const size_t k = rng() % held.size();
                        const Block b = held[k];
                        held[k] = held.back();
                        held.pop_back();
                        {
                            // Out of the map before the pool may hand it out again.
                            std::lock_guard lock(map_mutex);
                            live_ranges.erase(b.address);
                        }
                        const bool async = rng() % 4 != 0;
                        const FenceKey f = async ? fences.issue(mine) : 0;
                        if (f) mine_fences.push_back(f);
                        if (book.free(b.address, async ? mine : kNoStream, f, now) != b.size) ++failures;
                        // The GPU catches up now and then.
                        if (!mine_fences.empty() && rng() % 3 == 0)
                            fences.complete(mine_fences[rng() % mine_fences.size()]);
                    }
                    if (rng() % 500 == 0) (void)book.figures();
                    if (rng() % 700 == 0) book.release_idle(now);
                    if (!held.empty() && rng() % 50 == 0) (void)book.find(held.front().address + 1);
                }
                for (const Block& b : held) {
                    {
                        std::lock_guard lock(map_mutex);
                        live_ranges.erase(b.address);
                    }
                    if (book.free(b.address, mine, fences.issue(mine), clock.fetch_add(1)) != b.size) ++failures;
                }
            });
        for (auto& th : threads) th.join();
        CHECK(overlaps == 0);
        CHECK(failures == 0);
        const PoolFigures all = book.figures();
        CHECK(all.used == 0);
        CHECK(all.blocks == 0);
        for (PoolTag tag = 0; tag < 3; ++tag) {
            CHECK(book.figures(tag).used == 0);
            CHECK(book.figures(tag).blocks == 0);
            CHECK(book.figures(tag).used_high > 0);
        }
        CHECK(all.slab_bytes == slabs.live_bytes);
        CHECK(all.reserved <= all.slab_bytes);
        fences.complete_all();
        book.trim(0);
        CHECK(book.figures().slabs == 0);
    }
    CHECK(slabs.live_bytes == 0);
    CHECK(slabs.bad_releases == 0);
    CHECK(fences.all_destroyed_once());
    CHECK(fences.used_after_destroy == 0);
}

namespace {
// A hint that records what the pool tells it.
class RecordingHint final : public uvmp::pool::PlacementHint {
public:
    size_t resident_dead(uint64_t, uint64_t, std::span<uvmp::pool::Extent>) const override { return 0; }
    bool room_is_short() const override { return false; }
    void block_freed(uint64_t begin, uint64_t end) const override { freed.push_back({begin, end}); }
    mutable std::vector<uvmp::pool::Extent> freed;
};
} // namespace

TEST_CASE_METHOD(PoolTest, "pool: a free tells the placement hint the block's range at once", "[pool][placement]") {
    PoolBook book(small_config(16 * MiB), slabs, fences);
    auto hint = std::make_shared<RecordingHint>();
    book.set_placement_hint(hint);
    const auto block = book.allocate(6 * MiB, kS1, 1, 0);
    REQUIRE(block);
    CHECK(hint->freed.empty());
    REQUIRE(book.free(block->address, kS1, 0, 0));
    REQUIRE(hint->freed.size() == 1);
    CHECK(hint->freed[0].begin == block->address);
    CHECK(hint->freed[0].end == block->address + block->size);
    // A free of no block tells it nothing.
    CHECK_FALSE(book.free(block->address + 1, kS1, 0, 0));
    CHECK(hint->freed.size() == 1);
}

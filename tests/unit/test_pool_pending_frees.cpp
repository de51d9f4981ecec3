// Stream-ordered reuse (core/pool/pending_frees.h): CUDA's free semantics,
// fences asked, waited for and destroyed.
#include "pool_test_support.h"

#include <catch2/catch.hpp>

using namespace uvmp::pool;
using namespace uvmp::pool::testing;

TEST_CASE_METHOD(PoolTest, "pool: a block freed on a stream is reused on that stream at once", "[pool]") {
    PoolBook book(small_config(), slabs, fences);
    auto a = book.allocate(1000, kS1, 0, 0);
    REQUIRE(a);
    CHECK(a->size == 1024);
    CHECK(a->slab == 1);
    const FenceKey f = fences.issue(kS1);
    CHECK(book.free(a->address, kS1, f, 1) == 1024u);
    auto b = book.allocate(1000, kS1, 0, 2);
    REQUIRE(b);
    CHECK(b->address == a->address);
    CHECK(fences.queries == 0);
    // The rest of the slab, taken in by the freed block, waits on the fence
    // until the pool learns that it completed.
    CHECK(fences.destroyed(f) == 0);
    CHECK(slabs.creates == 1);
    // A request that fits nowhere makes the pool ask, and the fence goes.
    fences.complete(f);
    auto big = book.allocate(8 * MiB, kS2, 0, 3);
    REQUIRE(big);
    CHECK(fences.destroyed(f) == 1);
}

TEST_CASE_METHOD(PoolTest, "pool: a block freed on a stream takes in the ready memory beside it", "[pool]") {
    PoolBook book(small_config(16 * MiB), slabs, fences);
    // a [0, 4M) and b [4M, 8M), the rest of the slab ready; b freed for every
    // stream, then a on S1: a's block and the 12 MiB after it are one piece.
    auto a = book.allocate(4 * MiB, kS1, 0, 0);
    auto b = book.allocate(4 * MiB, kS1, 0, 0);
    REQUIRE(a);
    REQUIRE(b);
    book.free(b->address, kNoStream, 0, 1);
    const FenceKey f = fences.issue(kS1);
    book.free(a->address, kS1, f, 2);
    // S1 gets 10 MiB from a's address on, in the memory a's pages already hold,
    // where neither a's block nor the ready rest alone held it.
    auto c = book.allocate(10 * MiB, kS1, 0, 3);
    REQUIRE(c);
    CHECK(c->address == a->address);
    CHECK(slabs.creates == 1);
    CHECK(book.figures().reserved == 10 * MiB);
    // Another stream waits for the fence for what is left: a new slab while
    // it has not completed, the rest once it has.
    auto d = book.allocate(16 * MiB, kS2, 0, 4);
    REQUIRE(d);
    CHECK(d->slab == 2);
    fences.complete(f);
    auto e = book.allocate(6 * MiB, kS2, 0, 5);
    REQUIRE(e);
    CHECK(e->slab == 1);
    CHECK(e->address == c->address + 10 * MiB);
    CHECK(slabs.creates == 2);
}

TEST_CASE_METHOD(PoolTest, "pool: another stream gets a pending block only once its fence completes", "[pool]") {
    PoolBook book(small_config(), slabs, fences);
    // Fill one slab: x and the rest.
    auto x = book.allocate(2 * MiB, kS1, 0, 0);
    auto rest = book.allocate(6 * MiB, kS1, 0, 0);
    REQUIRE(x);
    REQUIRE(rest);
    CHECK(x->slab == 1);
    CHECK(rest->slab == 1);
    const FenceKey f = fences.issue(kS1);
    book.free(x->address, kS1, f, 1);

    // S2 may not have it: the pool asks the fence, then makes a slab.
    auto y = book.allocate(2 * MiB, kS2, 0, 2);
    REQUIRE(y);
    CHECK(y->slab == 2);
    CHECK(fences.queries >= 1);
    CHECK(fences.destroyed(f) == 0);
    // Nor may kNoStream (cuMemAlloc), which takes ready memory only.
    auto z = book.allocate(6 * MiB, kNoStream, 0, 3);
    REQUIRE(z);
    CHECK(z->slab == 2);

    // Once the fence completes, S2 gets x rather than a new slab.
    fences.complete(f);
    auto w = book.allocate(2 * MiB, kS2, 0, 4);
    REQUIRE(w);
    CHECK(w->address == x->address);
    CHECK(slabs.creates == 2);
    CHECK(fences.destroyed(f) == 1);
}

TEST_CASE_METHOD(PoolTest, "pool: a free racing a launch: the freed block goes to another stream only after the fence", "[pool]") {
    PoolBook book(small_config(4 * MiB), slabs, fences);
    // Stream A's kernel still uses the block when A frees it.
    auto a = book.allocate(4 * MiB, kS1, 0, 0);
    REQUIRE(a);
    const FenceKey launch_done = fences.issue(kS1);
    book.free(a->address, kS1, launch_done, 1);
    // Stream B allocates while A's kernel runs: new memory, not a's block.
    auto b1 = book.allocate(4 * MiB, kS2, 0, 2);
    REQUIRE(b1);
    CHECK(b1->slab != a->slab);
    CHECK(b1->address != a->address);
    // Still running: again new memory.
    auto b2 = book.allocate(4 * MiB, kS2, 0, 3);
    REQUIRE(b2);
    CHECK(b2->address != a->address);
    CHECK(slabs.creates == 3);
    // A's kernel finishes: B gets a's block.
    fences.complete(launch_done);
    auto b3 = book.allocate(4 * MiB, kS2, 0, 4);
    REQUIRE(b3);
    CHECK(b3->address == a->address);
    CHECK(slabs.creates == 3);
    // A block B freed on B is B's at once, but A's only after B's fence.
    const FenceKey fb = fences.issue(kS2);
    book.free(b1->address, kS2, fb, 5);
    auto a2 = book.allocate(4 * MiB, kS1, 0, 6);
    REQUIRE(a2);
    CHECK(a2->address != b1->address);
    auto b4 = book.allocate(4 * MiB, kS2, 0, 7);
    REQUIRE(b4);
    CHECK(b4->address == b1->address);
}

TEST_CASE_METHOD(PoolTest, "pool: kNoStream frees, and frees without a fence, are ready for every stream at once", "[pool]") {
    PoolBook book(small_config(4 * MiB), slabs, fences);
    auto a = book.allocate(4 * MiB, kS1, 0, 0);
    REQUIRE(a);
    book.free(a->address, kNoStream, 0, 1);
    auto b = book.allocate(4 * MiB, kS2, 0, 2);
    REQUIRE(b);
    CHECK(b->address == a->address);
    // A fence handed with kNoStream is destroyed at once.
    const FenceKey f = fences.issue(kS2);
    book.free(b->address, kNoStream, f, 3);
    CHECK(fences.destroyed(f) == 1);
    auto c = book.allocate(4 * MiB, kS3, 0, 4);
    REQUIRE(c);
    CHECK(c->address == a->address);
    // Fence 0 on a stream: ready at once too.
    book.free(c->address, kS3, 0, 5);
    auto d = book.allocate(4 * MiB, kNoStream, 0, 6);
    REQUIRE(d);
    CHECK(d->address == a->address);
    CHECK(slabs.creates == 1);
    CHECK(fences.queries == 0);
}

TEST_CASE("pool: exhaustion waits for pending frees that would do, then gives up", "[pool]") {
    FakeFences fences;

    SECTION("a pending block of another stream is waited for and reused") {
        FakeSlabs slabs(8 * MiB);
        PoolBook book(small_config(4 * MiB), slabs, fences);
        auto a = book.allocate(4 * MiB, kS1, 0, 0);
        auto b = book.allocate(4 * MiB, kS1, 0, 0);
        REQUIRE(a);
        REQUIRE(b);
        const FenceKey f = fences.issue(kS1);
        book.free(a->address, kS1, f, 1);
        auto c = book.allocate(4 * MiB, kS2, 0, 2);
        REQUIRE(c);
        CHECK(c->address == a->address);
        CHECK(fences.waits == 1);
        CHECK(slabs.refusals == 1);
        CHECK(fences.destroyed(f) == 1);
        // Nothing left to wait for: out of memory.
        CHECK_FALSE(book.allocate(4 * MiB, kS2, 0, 3));
        CHECK_FALSE(book.allocate(512, kS2, 0, 3));
        CHECK(fences.waits == 1);
        CHECK(book.figures().used == 8 * MiB);
        CHECK(book.figures().slabs == 2);
    }

    SECTION("pending blocks that only together would do are all waited for") {
        FakeSlabs slabs(4 * MiB);
        PoolBook book(small_config(4 * MiB), slabs, fences);
        auto x = book.allocate(2 * MiB, kS1, 0, 0);
        auto y = book.allocate(2 * MiB, kS2, 0, 0);
        REQUIRE(x);
        REQUIRE(y);
        book.free(x->address, kS1, fences.issue(kS1), 1);
        book.free(y->address, kS2, fences.issue(kS2), 1);
        auto z = book.allocate(4 * MiB, kS3, 0, 2);
        REQUIRE(z);
        CHECK(z->address == x->address);
        CHECK(fences.waits == 2);
    }

    SECTION("wholly free slabs that cannot serve the request are given back first") {
        FakeSlabs slabs(8 * MiB);
        PoolBook book(small_config(4 * MiB), slabs, fences);
        auto a = book.allocate(4 * MiB, kS1, 0, 0);
        auto b = book.allocate(4 * MiB, kS1, 0, 0);
        book.free(a->address, kNoStream, 0, 1);
        book.free(b->address, kNoStream, 0, 1);
        CHECK(book.figures().slabs == 2);
        std::vector<SlabEvent> events;
        auto big = book.allocate(6 * MiB, kS1, 0, 2, &events);
        REQUIRE(big);
        REQUIRE(events.size() == 3);
        CHECK(events[0].released);
        CHECK(events[1].released);
        CHECK_FALSE(events[2].released);
        CHECK(events[2].bytes == 6 * MiB);
        CHECK(book.figures().slabs == 1);
        CHECK(book.figures().reserved == 6 * MiB);
        CHECK(slabs.live_bytes == 6 * MiB);
    }

    SECTION("a slab of the request's own size when a whole slab is refused") {
        FakeSlabs slabs(6 * MiB);
        PoolBook book(small_config(4 * MiB), slabs, fences);
        auto a = book.allocate(4 * MiB, kS1, 0, 0);
        REQUIRE(a);
        auto b = book.allocate(1 * MiB, kS1, 0, 0);
        REQUIRE(b);
        CHECK(b->slab == 2);
        CHECK(book.figures().reserved == 6 * MiB);
        CHECK(book.allocate(1 * MiB, kS1, 0, 0)); // the rest of the small slab
        CHECK_FALSE(book.allocate(1 * MiB, kS1, 0, 0));
    }
}

TEST_CASE_METHOD(PoolTest, "pool: every fence is destroyed exactly once", "[pool]") {
    {
        PoolBook book(small_config(16 * MiB), slabs, fences);
        std::vector<Block> b;
        for (int i = 0; i < 8; ++i) b.push_back(*book.allocate(2 * MiB, kS1, 0, 0));
        // x, z, then y between them: one block pending on y's fence.
        const FenceKey fx = fences.issue(kS1), fz = fences.issue(kS1), fy = fences.issue(kS1);
        book.free(b[0].address, kS1, fx, 0);
        book.free(b[2].address, kS1, fz, 0);
        book.free(b[1].address, kS1, fy, 0);
        CHECK(fences.destroyed(fx) == 1);
        CHECK(fences.destroyed(fz) == 1);
        CHECK(fences.destroyed(fy) == 0);
        // Promoted when another stream needs it.
        fences.complete(fy);
        auto c = book.allocate(6 * MiB, kS2, 0, 0);
        REQUIRE(c);
        CHECK(c->address == b[0].address);
        CHECK(fences.destroyed(fy) == 1);
        // A free of no live block: its fence is destroyed, nothing changes.
        const FenceKey stray = fences.issue(kS2);
        CHECK_FALSE(book.free(b[0].address + 512, kS2, stray, 0));
        CHECK(fences.destroyed(stray) == 1);
        CHECK(book.figures().blocks == 6);
        // A fence handed twice (against the contract) is still destroyed once.
        const FenceKey twice = fences.issue(kS2);
        book.free(b[3].address, kS2, twice, 0);
        book.free(b[5].address, kS2, twice, 0);
        // Still pending at the end: the destructor destroys them.
        book.free(b[4].address, kS2, fences.issue(kS2), 0); // merges b[3..5]
        CHECK(fences.destroyed(twice) == 1);
        book.free(b[6].address, kS3, fences.issue(kS3), 0);
        book.free(b[7].address, kS3, fences.issue(kS3), 0); // merges with b[6]
    }
    CHECK(fences.all_destroyed_once());
    CHECK(fences.used_after_destroy == 0);
    CHECK(slabs.live_bytes == 0);
    CHECK(slabs.bad_releases == 0);
}

TEST_CASE_METHOD(PoolTest, "pool: fence queries are bounded and never repeated within a call", "[pool]") {
    PoolBook book(small_config(2 * MiB), slabs, fences);
    // 100 streams each with a pending whole-slab block, none complete.
    for (StreamKey s = 1; s <= 100; ++s) {
        auto b = book.allocate(2 * MiB, s, 0, 0);
        REQUIRE(b);
        book.free(b->address, s, fences.issue(s), 0);
        book.free(book.allocate(1 * MiB, s, 0, 0)->address, s, fences.issue(s), 0);
    }
    fences.new_call();
    const int before = fences.queries;
    auto c = book.allocate(2 * MiB, kNoStream, 0, 0);
    REQUIRE(c);
    CHECK(fences.queries - before <= 32);
    CHECK(fences.asked_twice == 0);
    CHECK(slabs.creates == 101);
}


// Random work on a few streams, GPU progress at random: a block is only handed
// to a stream when every byte of it was last freed on that stream, without a
// stream, or under a fence that has completed.
namespace {

// Dead extents made up from the asked range alone: whatever a hint says, the
// pool's blocks must stay its own.
class ScatteredHint final : public PlacementHint {
public:
    explicit ScatteredHint(bool room_short) : room_short_(room_short) {}
    bool room_is_short() const override { return room_short_; }
    size_t resident_dead(uint64_t begin, uint64_t end, std::span<Extent> out) const override {
        const uint64_t span = end - begin;
        uint64_t h = begin * 0x9E3779B97F4A7C15ull;
        uint64_t at = begin;
        size_t n = 0;
        while (n < out.size() && n < 3 && at < end) {
            h ^= h >> 29;
            h *= 0xBF58476D1CE4E5B9ull;
            const uint64_t from = at + h % (end - at);
            const uint64_t to = std::min(end, from + 1 + (h >> 17) % std::max<uint64_t>(span / 2, 1));
            out[n++] = {from, to};
            at = to;
        }
        return n;
    }

private:
    bool room_short_;
};

} // namespace

TEST_CASE("pool: randomized frees on several streams keep CUDA's free semantics", "[pool]") {
    // With a hint, blocks land inside pieces rather than at their start.
    // Room short: wholly free slabs go back at once.
    const int hint_kind = GENERATE(0, 1, 2); // none, room enough, room short
    const bool hinted = hint_kind != 0;
    INFO("placement hint: " << hint_kind);
    FakeSlabs slabs(96 * MiB);
    FakeFences fences;
    struct LastFree {
        uint64_t end;
        StreamKey stream;
        FenceKey fence;
    };
    std::map<uint64_t, LastFree> last; // byte ranges, by start
    auto split_at = [&](uint64_t at) {
        auto it = last.upper_bound(at);
        if (it == last.begin()) return;
        --it;
        if (it->first < at && at < it->second.end) {
            LastFree tail = it->second;
            it->second.end = at;
            last[at] = tail;
        }
    };
    auto erase_range = [&](uint64_t start, uint64_t end) {
        split_at(start);
        split_at(end);
        last.erase(last.lower_bound(start), last.lower_bound(end));
    };
    int violations = 0, find_errors = 0, overlaps = 0, misaligned = 0;
    {
        PoolConfig config = small_config(16 * MiB);
        config.release_after_ns = 50;
        PoolBook book(config, slabs, fences);
        if (hinted) book.set_placement_hint(std::make_shared<ScatteredHint>(hint_kind == 2));
        std::mt19937_64 rng(11);
        const StreamKey streams[] = {kS1, kS2, kS3, kNoStream};
        std::vector<std::pair<Block, StreamKey>> live;
        std::vector<FenceKey> issued;
        uint64_t now = 0;
        for (int step = 0; step < 6000; ++step) {
            now += rng() % 3;
            const int op = static_cast<int>(rng() % 100);
            if (op < 50) {
                const StreamKey s = streams[rng() % 4];
                const uint64_t range = rng() % 4 == 0 ? 8 * MiB : 256 * KiB;
                const uint64_t bytes = 1 + rng() % range;
                auto b = book.allocate(bytes, s, 0, now);
                if (!b) continue;
                for (const auto& [other, stream] : live)
                    if (b->address < other.address + other.size && other.address < b->address + b->size) ++overlaps;
                if (b->size >= config.chunk_bytes && (b->address - b->slab_base) % config.chunk_bytes != 0) ++misaligned;
                for (auto it = last.lower_bound(b->address); it != last.end() && it->first < b->address + b->size; ++it)
                    if (it->second.stream != kNoStream && it->second.stream != s && !fences.done(it->second.fence))
                        ++violations;
                auto before = last.lower_bound(b->address);
                if (before != last.begin()) {
                    --before;
                    if (before->second.end > b->address && before->second.stream != kNoStream &&
                        before->second.stream != s && !fences.done(before->second.fence))
                        ++violations;
                }
                erase_range(b->address, b->address + b->size);
                live.push_back({*b, s});
            } else if (op < 97 && !live.empty()) {
                const size_t i = rng() % live.size();
                const Block b = live[i].first;
                live[i] = live.back();
                live.pop_back();
                const StreamKey s = streams[rng() % 4];
                const FenceKey f = s == kNoStream ? 0 : fences.issue(s);
                if (f) issued.push_back(f);
                erase_range(b.address, b.address + b.size);
                last[b.address] = {b.address + b.size, s, f};
                REQUIRE(book.free(b.address, s, f, now) == b.size);
            } else if (!issued.empty()) {
                fences.complete(issued[rng() % issued.size()]);
            }
            if (step % 1000 == 999) book.release_idle(now);
            // find() agrees with the live blocks, inside them and around them.
            for (int probe = 0; probe < 3; ++probe) {
                uint64_t address = 0;
                if (!live.empty() && probe < 2) {
                    const Block& b = live[rng() % live.size()].first;
                    address = probe == 0 ? b.address + rng() % b.size : b.address + b.size;
                } else if (!last.empty()) {
                    auto it = last.begin();
                    std::advance(it, static_cast<long>(rng() % std::min<size_t>(last.size(), 64)));
                    address = it->first + rng() % (it->second.end - it->first);
                } else {
                    continue;
                }
                const Block* expected = nullptr;
                for (const auto& [b, s] : live)
                    if (address >= b.address && address < b.address + b.size) expected = &b;
                const std::optional<Block> found = book.find(address);
                if (expected) {
                    if (!found || found->address != expected->address || found->size != expected->size ||
                        found->slab != expected->slab)
                        ++find_errors;
                } else if (found) {
                    ++find_errors;
                }
            }
        }
        CHECK(violations == 0);
        CHECK(find_errors == 0);
        CHECK(overlaps == 0);
        CHECK(misaligned == 0);
        for (auto& [b, s] : live) book.free(b.address, kNoStream, 0, now);
        CHECK(book.figures().used == 0);
        CHECK(book.figures().blocks == 0);
        book.trim(0);
        CHECK(book.figures().slabs == 0);
        CHECK(slabs.live_bytes == 0);
    }
    CHECK(fences.all_destroyed_once());
    CHECK(fences.used_after_destroy == 0);
    CHECK(slabs.bad_releases == 0);
}

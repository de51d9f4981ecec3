#include "core/pool/pool_book.h"
#include "core/pool/placement_hint.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace uvmp::pool;

namespace {

constexpr uint64_t KiB = 1ull << 10;
constexpr uint64_t MiB = 1ull << 20;

// Slabs at addresses from a counter (chunk-aligned, with gaps between them), and
// a byte limit standing for the physical guard.
class FakeSlabs final : public SlabSource {
public:
    explicit FakeSlabs(uint64_t limit = ~0ull) : limit_(limit) {}

    std::optional<uint64_t> create(uint64_t bytes) override {
        std::lock_guard lock(mutex_);
        ++creates;
        if (bytes > limit_ - live_bytes) {
            ++refusals;
            return std::nullopt;
        }
        const uint64_t base = next_;
        next_ += bytes + 64 * MiB;
        live_bytes += bytes;
        live[base] = bytes;
        return base;
    }
    void release(uint64_t base, uint64_t bytes) override {
        std::lock_guard lock(mutex_);
        ++releases;
        auto it = live.find(base);
        if (it == live.end() || it->second != bytes) {
            ++bad_releases;
            return;
        }
        live.erase(it);
        live_bytes -= bytes;
    }
    void set_limit(uint64_t limit) {
        std::lock_guard lock(mutex_);
        limit_ = limit;
    }

    int creates = 0, refusals = 0, releases = 0, bad_releases = 0;
    uint64_t live_bytes = 0;
    std::map<uint64_t, uint64_t> live; // base -> bytes

private:
    std::mutex mutex_;
    uint64_t limit_;
    uint64_t next_ = 1ull << 40;
};

// Fences issued by the test, each recorded on a stream; a fence completes with
// every earlier fence of its stream (events on one stream complete in order).
class FakeFences final : public FenceOracle {
public:
    FenceKey issue(StreamKey stream) {
        std::lock_guard lock(mutex_);
        const FenceKey key = next_++;
        stream_of_[key] = stream;
        return key;
    }
    void complete(FenceKey fence) {
        std::lock_guard lock(mutex_);
        complete_locked(fence);
    }
    bool done(FenceKey fence) {
        std::lock_guard lock(mutex_);
        return done_locked(fence);
    }
    // Every fence issued so far completes.
    void complete_all() {
        std::lock_guard lock(mutex_);
        for (auto& [key, stream] : stream_of_) complete_locked(key);
    }

    bool completed(FenceKey fence) override {
        std::lock_guard lock(mutex_);
        ++queries;
        if (destroyed_[fence] != 0) ++used_after_destroy;
        if (++asked_in_call[fence] > 1) ++asked_twice;
        return done_locked(fence);
    }
    void wait(FenceKey fence) override {
        std::lock_guard lock(mutex_);
        ++waits;
        if (destroyed_[fence] != 0) ++used_after_destroy;
        complete_locked(fence);
    }
    void destroy(FenceKey fence) override {
        std::lock_guard lock(mutex_);
        ++destroys;
        ++destroyed_[fence];
    }

    int destroyed(FenceKey fence) {
        std::lock_guard lock(mutex_);
        return destroyed_[fence];
    }
    // Every fence issued has been destroyed exactly once.
    bool all_destroyed_once() {
        std::lock_guard lock(mutex_);
        for (auto& [key, stream] : stream_of_)
            if (destroyed_[key] != 1) return false;
        for (auto& [key, n] : destroyed_)
            if (n > 1 || !stream_of_.count(key)) return false;
        return true;
    }
    void new_call() {
        std::lock_guard lock(mutex_);
        asked_in_call.clear();
        asked_twice = 0;
    }

    int queries = 0, waits = 0, destroys = 0, asked_twice = 0, used_after_destroy = 0;
    std::map<FenceKey, int> asked_in_call;

private:
    bool done_locked(FenceKey fence) {
        auto it = stream_of_.find(fence);
        if (it == stream_of_.end()) return false;
        auto d = done_upto_.find(it->second);
        return d != done_upto_.end() && d->second >= fence;
    }
    void complete_locked(FenceKey fence) {
        auto it = stream_of_.find(fence);
        if (it == stream_of_.end()) return;
        uint64_t& upto = done_upto_[it->second];
        upto = std::max(upto, fence);
    }

    std::mutex mutex_;
    FenceKey next_ = 1;
    std::map<FenceKey, StreamKey> stream_of_;
    std::map<StreamKey, FenceKey> done_upto_;
    std::map<FenceKey, int> destroyed_;
};

PoolConfig small_config(uint64_t slab = 8 * MiB) {
    PoolConfig c;
    c.slab_bytes = slab;
    c.chunk_bytes = 2 * MiB;
    c.alignment = 512;
    c.retain_bytes = 0;
    c.release_after_ns = 1'000'000'000;
    return c;
}

constexpr StreamKey kS1 = 0x100, kS2 = 0x200, kS3 = 0x300;

} // namespace

TEST_CASE("pool: a bad config throws", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
    auto bad = [&](auto edit) {
        PoolConfig c = small_config();
        edit(c);
        return [c, &slabs, &fences] { PoolBook book(c, slabs, fences); };
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

TEST_CASE("pool: a block freed on a stream is reused on that stream at once", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: a block says which whole chunks it is the first to cover", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: slab ids count up from first_slab_id", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: a block freed on a stream takes in the ready memory beside it", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: another stream gets a pending block only once its fence completes", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: a free racing a launch: the freed block goes to another stream only after the fence", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: kNoStream frees, and frees without a fence, are ready for every stream at once", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: large blocks start on chunk boundaries, small ones on the alignment", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: best fit, coalescing and fragmentation", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

namespace {

// Dead extents set by the test, answered as a hint does; counts its questions.
class FakeHint final : public PlacementHint {
public:
    size_t resident_dead(uint64_t begin, uint64_t end, std::span<Extent> out) const override {
        ++asked;
        size_t n = 0;
        for (const Extent& e : dead)
            if (e.end > begin && e.begin < end && n < out.size()) out[n++] = {std::max(e.begin, begin), std::min(e.end, end)};
        return n;
    }
    std::vector<Extent> dead; // in address order
    mutable int asked = 0;
};

} // namespace

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

TEST_CASE("pool: a request larger than a slab gets a slab of its own", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: idle slabs are given back after release_after_ns, retain_bytes respected", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: every fence is destroyed exactly once", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: reserved counts the chunks that blocks have covered", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: figures and high marks per tag", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: find answers for addresses inside live blocks", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: fence queries are bounded and never repeated within a call", "[pool]") {
    FakeSlabs slabs;
    FakeFences fences;
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
};

} // namespace

TEST_CASE("pool: randomized frees on several streams keep CUDA's free semantics", "[pool]") {
    // With a hint, blocks land inside pieces rather than at their start.
    const bool hinted = GENERATE(false, true);
    INFO("placement hint: " << hinted);
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
        if (hinted) book.set_placement_hint(std::make_shared<ScatteredHint>());
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

TEST_CASE("pool: an arena takes blocks only where allocate_at names them", "[pool][arena]") {
    FakeSlabs slabs;
    FakeFences fences;
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

TEST_CASE("pool: allocate_at joins the ready and pending pieces of its range on its stream", "[pool][arena]") {
    FakeSlabs slabs;
    FakeFences fences;
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

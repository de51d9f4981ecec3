#include "core/policy/eviction_queue.h"

#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <vector>

using namespace uvmp;

namespace {

// The entry the queue must report on top: the largest key, then the largest chunk id.
std::pair<uint64_t, ChunkId> expected_top(const std::map<ChunkId, uint64_t>& keys) {
    std::pair<uint64_t, ChunkId> best{0, 0};
    bool any = false;
    for (const auto& [chunk, key] : keys) {
        if (!any || key > best.first || (key == best.first && chunk > best.second)) best = {key, chunk};
        any = true;
    }
    return best;
}

// The queue's top must be expected_top(keys); it then leaves both.
void pop_expected_top(EvictionQueue& queue, std::map<ChunkId, uint64_t>& keys) {
    const auto [top_key, top_chunk] = expected_top(keys);
    REQUIRE(queue.top().key == top_key);
    REQUIRE(queue.top().chunk == top_chunk);
    queue.erase(top_chunk);
    keys.erase(top_chunk);
}

// Sets a key in both the queue and the reference.
void set_both(EvictionQueue& queue, std::map<ChunkId, uint64_t>& keys, ChunkId chunk, uint64_t key) {
    queue.set(chunk, key);
    keys[chunk] = key;
}

// Sets first..last to one key in both.
void set_range_both(EvictionQueue& queue, std::map<ChunkId, uint64_t>& keys, ChunkId first, ChunkId last, uint64_t key) {
    queue.set_range(first, last, key);
    for (ChunkId c = first; c <= last; ++c) keys[c] = key;
}

// Erases from both: the queue must say whether the chunk was there as the reference does.
void erase_both(EvictionQueue& queue, std::map<ChunkId, uint64_t>& keys, ChunkId chunk) {
    CHECK(queue.erase(chunk) == (keys.erase(chunk) == 1));
}

// 20000 random operations on a queue and its reference over chunks 0..423 and
// keys 0..39: of `kinds` kinds, kinds 0 and 1 set a range of up to 24 chunks to
// a key; `other(kind, first, key, random)` does the others. The sizes must
// agree after each.
template <class Other>
void random_range_ops(EvictionQueue& queue, std::map<ChunkId, uint64_t>& keys, unsigned seed, unsigned kinds,
                      Other other) {
    std::mt19937 random(seed);
    for (int op = 0; op < 20000; ++op) {
        const ChunkId first = random() % 400;
        const uint64_t key = random() % 40;
        const unsigned kind = random() % kinds;
        if (kind < 2) set_range_both(queue, keys, first, first + static_cast<ChunkId>(random() % 24), key);
        else other(kind, first, key, random);
        REQUIRE(queue.size() == keys.size());
    }
}

// random_range_ops with single chunks set, up to five pops at a time and
// `erase(first, random)` as its other kinds; then every entry left must come
// out in order.
template <class Erase>
void range_ops_then_drain(EvictionQueue& queue, std::map<ChunkId, uint64_t>& keys, unsigned seed, Erase erase) {
    random_range_ops(queue, keys, seed, 5, [&](unsigned kind, ChunkId first, uint64_t key, std::mt19937& random) {
        switch (kind) {
        case 2:
            set_both(queue, keys, first, key);
            break;
        case 3:
            erase(first, random);
            break;
        case 4:
            for (int pops = random() % 6; pops > 0 && !keys.empty(); --pops) pop_expected_top(queue, keys);
            break;
        }
    });
    while (!keys.empty()) pop_expected_top(queue, keys);
    CHECK(queue.empty());
}

} // namespace

TEST_CASE("eviction queue: the top is always the largest key, ties to the largest chunk", "[policy][queue]") {
    // All keys in the heap, half of them in the ordered run, all in the run.
    const uint64_t ordered_from = GENERATE(UINT64_MAX, 20, 0);
    std::mt19937 random(21);
    EvictionQueue queue(ordered_from);
    std::map<ChunkId, uint64_t> keys; // the reference
    for (int op = 0; op < 20000; ++op) {
        const ChunkId chunk = random() % 300;
        // Few distinct keys, so that ties are common.
        const uint64_t key = random() % 40;
        switch (random() % 4) {
        case 0:
        case 1:
            set_both(queue, keys, chunk, key);
            break;
        case 2:
            erase_both(queue, keys, chunk);
            break;
        case 3:
            if (!keys.empty()) pop_expected_top(queue, keys);
            break;
        }
        REQUIRE(queue.size() == keys.size());
        CHECK(queue.contains(chunk) == (keys.count(chunk) == 1));
    }
}

TEST_CASE("eviction queue: assign builds the same queue as one set per entry", "[policy][queue]") {
    const uint64_t ordered_from = GENERATE(UINT64_MAX, 50, 0);
    std::mt19937 random(5);
    std::vector<EvictionQueue::Entry> entries;
    std::map<ChunkId, uint64_t> keys;
    for (int i = 0; i < 500; ++i) {
        const EvictionQueue::Entry entry{random() % 100, static_cast<ChunkId>(random() % 700)};
        entries.push_back(entry);
        keys[entry.chunk] = entry.key; // a chunk listed twice keeps its last key
    }
    EvictionQueue queue(ordered_from);
    queue.set(999, 1'000'000); // replaced by assign
    queue.assign(entries);
    REQUIRE(queue.size() == keys.size());
    CHECK_FALSE(queue.contains(999));
    while (!keys.empty()) pop_expected_top(queue, keys);
    CHECK(queue.empty());
}

TEST_CASE("eviction queue: keys set in batches between looks at the top", "[policy][queue]") {
    // The ordered run takes batches in any order, and batches ranked after it
    // (the way recency ranks the chunks just used), also long ones nobody looks at.
    const uint64_t ordered_from = GENERATE(UINT64_MAX, 1000, 0);
    std::mt19937 random(8);
    EvictionQueue queue(ordered_from);
    std::map<ChunkId, uint64_t> keys;
    uint64_t lowest = 1'000'000;
    for (int round = 0; round < 300; ++round) {
        const int batch = round % 50 == 0 ? 5000 : static_cast<int>(random() % 200);
        const bool ranked_after = random() % 2 == 0;
        for (int i = 0; i < batch; ++i) {
            const ChunkId chunk = random() % 3000;
            const uint64_t key = ranked_after ? --lowest : 500 + random() % 2'000'000;
            if (random() % 8 == 0) erase_both(queue, keys, chunk);
            else set_both(queue, keys, chunk, key);
        }
        REQUIRE(queue.size() == keys.size());
        for (int pops = random() % 100; pops > 0 && !keys.empty(); --pops) pop_expected_top(queue, keys);
    }
}

TEST_CASE("eviction queue: runs of chunks set to one key keep the order of single chunks", "[policy][queue]") {
    // Ranges overlap earlier ones, chunks leave them one by one, and blocks of
    // equal keys interleave: the top must still be the largest key, then chunk.
    const uint64_t ordered_from = GENERATE(UINT64_MAX, 30, 0);
    EvictionQueue queue(ordered_from);
    std::map<ChunkId, uint64_t> keys;
    range_ops_then_drain(queue, keys, 13, [&](ChunkId first, std::mt19937&) { erase_both(queue, keys, first); });
}

TEST_CASE("eviction queue: a run at the top is what single pops would give next", "[policy][queue]") {
    const uint64_t ordered_from = GENERATE(UINT64_MAX, 30, 0);
    EvictionQueue queue(ordered_from);
    std::map<ChunkId, uint64_t> keys;
    uint64_t longer_than_one = 0;
    random_range_ops(queue, keys, 17, 4, [&](unsigned kind, ChunkId first, uint64_t, std::mt19937& random) {
        if (kind == 2) {
            erase_both(queue, keys, first);
            return;
        }
        if (keys.empty()) {
            CHECK(queue.top_run_length(8) == 0);
            return;
        }
        const uint32_t most = 1 + static_cast<uint32_t>(random() % 12);
        const EvictionQueue::Entry top = queue.top();
        const uint32_t length = queue.top_run_length(most);
        REQUIRE(length >= 1);
        REQUIRE(length <= most);
        longer_than_one += length > 1;
        // Taking the run at once leaves what popping one by one would.
        for (uint32_t k = 0; k < length; ++k) {
            const auto [expected_key, expected_chunk] = expected_top(keys);
            REQUIRE(expected_key == top.key);
            REQUIRE(expected_chunk == top.chunk - k);
            keys.erase(expected_chunk);
        }
        queue.erase(ChunkRange{top.chunk - (length - 1), top.chunk});
    });
    CHECK(longer_than_one > 100); // runs are found, not only single chunks
}

TEST_CASE("eviction queue: erasing a range's ordered keys leaves its other keys", "[policy][queue]") {
    const uint64_t ordered_from = GENERATE(UINT64_MAX, 30, 0);
    EvictionQueue queue(ordered_from);
    std::map<ChunkId, uint64_t> keys;
    uint64_t erased = 0;
    range_ops_then_drain(queue, keys, 23, [&](ChunkId first, std::mt19937& random) {
        const ChunkId last = first + static_cast<ChunkId>(random() % 24);
        queue.erase_ordered({first, last});
        for (ChunkId c = first; c <= last; ++c) {
            const auto it = keys.find(c);
            if (it == keys.end() || it->second < ordered_from) continue;
            keys.erase(it);
            ++erased;
        }
    });
    CHECK((erased > 0) == (ordered_from != UINT64_MAX));
}

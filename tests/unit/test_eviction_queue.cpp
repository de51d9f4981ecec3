#include "core/eviction_queue.h"

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

} // namespace

TEST_CASE("eviction queue: the top is always the largest key, ties to the largest chunk", "[policy][queue]") {
    std::mt19937 random(21);
    EvictionQueue queue;
    std::map<ChunkId, uint64_t> keys; // the reference
    for (int op = 0; op < 20000; ++op) {
        const ChunkId chunk = random() % 300;
        // Few distinct keys, so that ties are common.
        const uint64_t key = random() % 40;
        switch (random() % 4) {
        case 0:
        case 1:
            queue.set(chunk, key);
            keys[chunk] = key;
            break;
        case 2:
            CHECK(queue.erase(chunk) == (keys.erase(chunk) == 1));
            break;
        case 3:
            if (!keys.empty()) {
                const auto [top_key, top_chunk] = expected_top(keys);
                REQUIRE(queue.top().key == top_key);
                REQUIRE(queue.top().chunk == top_chunk);
                queue.erase(top_chunk);
                keys.erase(top_chunk);
            }
            break;
        }
        REQUIRE(queue.size() == keys.size());
        CHECK(queue.contains(chunk) == (keys.count(chunk) == 1));
    }
}

TEST_CASE("eviction queue: assign builds the same queue as one set per entry", "[policy][queue]") {
    std::mt19937 random(5);
    std::vector<EvictionQueue::Entry> entries;
    std::map<ChunkId, uint64_t> keys;
    for (int i = 0; i < 500; ++i) {
        const EvictionQueue::Entry entry{random() % 100, static_cast<ChunkId>(random() % 700)};
        entries.push_back(entry);
        keys[entry.chunk] = entry.key; // a chunk listed twice keeps its last key
    }
    EvictionQueue queue;
    queue.set(999, 1'000'000); // replaced by assign
    queue.assign(entries);
    REQUIRE(queue.size() == keys.size());
    CHECK_FALSE(queue.contains(999));
    while (!keys.empty()) {
        const auto [top_key, top_chunk] = expected_top(keys);
        REQUIRE(queue.top().key == top_key);
        REQUIRE(queue.top().chunk == top_chunk);
        queue.erase(top_chunk);
        keys.erase(top_chunk);
    }
    CHECK(queue.empty());
}

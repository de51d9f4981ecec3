#include "core/util/mpsc_ring.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

using uvmp::MpscRing;

namespace {

struct Item {
    uint32_t producer = 0;
    uint64_t index = 0;
};

bool push(MpscRing<Item>& ring, uint32_t producer, uint64_t index) {
    return ring.try_push([&](Item& item) {
        item.producer = producer;
        item.index = index;
    });
}

std::vector<uint64_t> take_all(MpscRing<Item>& ring) {
    std::vector<uint64_t> taken;
    ring.pop_until(ring.end(), [&](const Item& item) { taken.push_back(item.index); });
    return taken;
}

} // namespace

TEST_CASE("mpsc ring: capacity is a power of two, at least two", "[mpsc_ring]") {
    CHECK(MpscRing<Item>(0).capacity() == 2);
    CHECK(MpscRing<Item>(5).capacity() == 8);
    CHECK(MpscRing<Item>(16).capacity() == 16);
}

TEST_CASE("mpsc ring: records come out in order, and a full ring refuses without calling fill", "[mpsc_ring]") {
    MpscRing<Item> ring(4);
    CHECK(ring.empty());
    for (uint64_t i = 0; i < 4; ++i) REQUIRE(push(ring, 0, i));
    bool filled = false;
    CHECK_FALSE(ring.try_push([&](Item&) { filled = true; }));
    CHECK_FALSE(filled);
    CHECK_FALSE(ring.empty());
    CHECK(take_all(ring) == std::vector<uint64_t>{0, 1, 2, 3});
    CHECK(ring.empty());

    // Lap after lap, each place is used again.
    std::vector<uint64_t> all;
    for (uint64_t i = 0; i < 40; ++i) {
        REQUIRE(push(ring, 0, 100 + i));
        if (i % 3 == 2)
            for (uint64_t index : take_all(ring)) all.push_back(index);
    }
    for (uint64_t index : take_all(ring)) all.push_back(index);
    REQUIRE(all.size() == 40);
    for (uint64_t i = 0; i < 40; ++i) CHECK(all[i] == 100 + i);
}

TEST_CASE("mpsc ring: pop_until takes only what was put before the position", "[mpsc_ring]") {
    MpscRing<Item> ring(8);
    push(ring, 0, 1);
    push(ring, 0, 2);
    const uint64_t mark = ring.end();
    push(ring, 0, 3);
    std::vector<uint64_t> taken;
    CHECK(ring.pop_until(mark, [&](const Item& item) { taken.push_back(item.index); }) == 2);
    CHECK(taken == std::vector<uint64_t>{1, 2});
    // A position already passed takes nothing.
    CHECK(ring.pop_until(mark, [&](const Item& item) { taken.push_back(item.index); }) == 0);
    CHECK(take_all(ring) == std::vector<uint64_t>{3});
}

TEST_CASE("mpsc ring: a record whose take throws is taken, the rest stay", "[mpsc_ring]") {
    MpscRing<Item> ring(4);
    for (uint64_t i = 0; i < 4; ++i) push(ring, 0, i);
    std::vector<uint64_t> taken;
    CHECK_THROWS_AS(ring.pop_until(ring.end(),
                                   [&](const Item& item) {
                                       if (item.index == 1) throw std::runtime_error("planner failed");
                                       taken.push_back(item.index);
                                   }),
                    std::runtime_error);
    CHECK(taken == std::vector<uint64_t>{0});
    CHECK(take_all(ring) == std::vector<uint64_t>{2, 3});
    // Its place is free again: the ring takes four more.
    for (uint64_t i = 0; i < 4; ++i) CHECK(push(ring, 0, i));
}

TEST_CASE("mpsc ring: reset forgets what it holds", "[mpsc_ring]") {
    MpscRing<Item> ring(4);
    push(ring, 0, 1);
    push(ring, 0, 2);
    ring.reset();
    CHECK(ring.empty());
    CHECK(ring.end() == 0);
    for (uint64_t i = 0; i < 4; ++i) CHECK(push(ring, 0, 10 + i));
    CHECK(take_all(ring) == std::vector<uint64_t>{10, 11, 12, 13});
}

TEST_CASE("mpsc ring: several producers and a consumer at once lose, repeat and reorder nothing", "[mpsc_ring]") {
    constexpr uint32_t kProducers = 4;
    constexpr uint64_t kEach = 20000;
    // Small, so that producers find it full again and again.
    MpscRing<Item> ring(64);
    std::atomic<uint64_t> refused{0};
    std::atomic<uint32_t> finished{0};
    std::vector<std::thread> producers;
    for (uint32_t p = 0; p < kProducers; ++p)
        producers.emplace_back([&, p] {
            for (uint64_t i = 0; i < kEach; ++i)
                while (!push(ring, p, i)) {
                    refused.fetch_add(1, std::memory_order_relaxed);
                    std::this_thread::yield();
                }
            finished.fetch_add(1);
        });

    std::vector<uint64_t> next(kProducers, 0);
    uint64_t taken = 0;
    bool in_order = true;
    auto take = [&](const Item& item) {
        in_order = in_order && item.producer < kProducers && item.index == next[item.producer];
        if (item.producer < kProducers) ++next[item.producer];
        ++taken;
    };
    while (finished.load() < kProducers) ring.pop_until(ring.end(), take);
    for (std::thread& t : producers) t.join();
    ring.pop_until(ring.end(), take);

    CHECK(in_order);
    CHECK(taken == kProducers * kEach);
    for (uint32_t p = 0; p < kProducers; ++p) CHECK(next[p] == kEach);
    CHECK(ring.empty());
}

TEST_CASE("mpsc ring: a position read before a push is at or before the pushed record's", "[mpsc_ring]") {
    // What the executor's ordering rests on: work stamped with end() before a
    // record is put comes before that record, whichever thread put it.
    MpscRing<Item> ring(1024);
    std::atomic<uint64_t> stamp{UINT64_MAX};
    std::thread producer([&] {
        while (stamp.load() == UINT64_MAX) std::this_thread::yield();
        push(ring, 1, 0);
    });
    push(ring, 0, 0);
    stamp.store(ring.end());
    producer.join();
    uint64_t position = 0, late_position = UINT64_MAX;
    ring.pop_until(ring.end(), [&](const Item& item) {
        if (item.producer == 1) late_position = position;
        ++position;
    });
    CHECK(late_position >= stamp.load());
}

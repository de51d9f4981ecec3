#include "core/util/mpmc_queue.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

using uvmp::MpmcQueue;

TEST_CASE("mpmc queue: first in, first out, full refuses, empty gives nothing", "[mpmc_queue]") {
    MpmcQueue<int> queue(3);
    CHECK(queue.capacity() == 4);
    int out = -1;
    CHECK_FALSE(queue.try_pop(out));
    for (int i = 0; i < 4; ++i) REQUIRE(queue.try_push(i));
    CHECK_FALSE(queue.try_push(4));
    for (int i = 0; i < 4; ++i) {
        REQUIRE(queue.try_pop(out));
        CHECK(out == i);
    }
    CHECK_FALSE(queue.try_pop(out));
    // Lap after lap.
    for (int i = 0; i < 30; ++i) {
        REQUIRE(queue.try_push(100 + i));
        REQUIRE(queue.try_pop(out));
        CHECK(out == 100 + i);
    }
}

TEST_CASE("mpmc queue: values put and taken by several threads at once are each taken once", "[mpmc_queue]") {
    constexpr int kThreads = 4;
    constexpr int kEach = 20000;
    MpmcQueue<int> queue(32);
    std::vector<std::atomic<int>> taken(kThreads * kEach);
    std::atomic<int> consumed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kEach; ++i)
                while (!queue.try_push(t * kEach + i)) std::this_thread::yield();
        });
        threads.emplace_back([&] {
            int value = 0;
            while (consumed.load() < kThreads * kEach) {
                if (!queue.try_pop(value)) {
                    std::this_thread::yield();
                    continue;
                }
                taken[value].fetch_add(1);
                consumed.fetch_add(1);
            }
        });
    }
    for (std::thread& t : threads) t.join();
    bool each_once = true;
    for (const auto& count : taken) each_once = each_once && count.load() == 1;
    CHECK(each_once);
    CHECK(consumed.load() == kThreads * kEach);
}

#include "core/util/parallel_map.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using uvmp::parallel_map;

TEST_CASE("parallel map: results in call order, each call once", "[parallel_map]") {
    const std::vector<std::string> out =
        parallel_map<std::string>(100, [](size_t i) { return std::to_string(i * i); });
    REQUIRE(out.size() == 100);
    for (size_t i = 0; i < out.size(); ++i) CHECK(out[i] == std::to_string(i * i));
    CHECK(parallel_map<int>(0, [](size_t) { return 1; }).empty());
}

TEST_CASE("parallel map: runs on more than one thread where it may, one where told", "[parallel_map]") {
    const auto ids = [](size_t threads) {
        // Each call waits for a little so that no thread takes them all.
        const std::vector<std::thread::id> seen = parallel_map<std::thread::id>(
            16,
            [](size_t) {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                return std::this_thread::get_id();
            },
            threads);
        return std::set<std::thread::id>(seen.begin(), seen.end()).size();
    };
    CHECK(ids(1) == 1);
    if (std::thread::hardware_concurrency() > 1) CHECK(ids(4) > 1);
}

TEST_CASE("parallel map: the lowest index's exception, after every call has ended", "[parallel_map]") {
    std::atomic<int> calls{0};
    const auto f = [&](size_t i) -> int {
        ++calls;
        if (i == 3 || i == 7) throw std::runtime_error("call " + std::to_string(i));
        return static_cast<int>(i);
    };
    CHECK_THROWS_WITH(parallel_map<int>(10, f), "call 3");
    CHECK(calls == 10);
}

#include "driver/executor.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <stdexcept>

using uvmp::driver::Executor;

TEST_CASE("executor: a task that throws is skipped and the worker goes on", "[executor]") {
    // Never destroyed: the worker is detached and may still be waking up when the test ends.
    auto* executor = new Executor;
    std::promise<int> done;
    executor->post([](Executor&) { throw std::length_error("too many chunks"); });
    executor->post([](Executor&) { throw 42; });
    executor->post([&done](Executor&) { done.set_value(7); });
    auto result = done.get_future();
    REQUIRE(result.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    CHECK(result.get() == 7);
    executor->stop();
}

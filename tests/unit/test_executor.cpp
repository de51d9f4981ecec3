#include "core/util/mpsc_ring.h"
#include "driver/worker/executor.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

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

namespace {

// A lane of numbers: the worker logs each it drains, as it logs the tasks.
class NumberLane final : public Executor::Lane {
public:
    explicit NumberLane(std::vector<std::string>& log) : log_(log) {}
    void put(uint64_t number) {
        REQUIRE(ring_.try_push([&](uint64_t& slot) { slot = number; }));
    }
    uint64_t end() const override { return ring_.end(); }
    void drain_until(uint64_t end) override {
        ring_.pop_until(end, [this](const uint64_t& number) {
            log_.push_back(std::to_string(number));
            handled_.fetch_add(1);
        });
    }
    uint64_t handled() const { return handled_.load(); }
    bool empty() const override { return ring_.empty(); }
    void reset() override { ring_.reset(); }

private:
    uvmp::MpscRing<uint64_t> ring_{1024};
    std::vector<std::string>& log_;
    std::atomic<uint64_t> handled_{0};
};

// A worker draining a lane of numbers into a log. Never destroyed, as above.
struct LaneWorker {
    std::vector<std::string>* log = new std::vector<std::string>;
    NumberLane* lane = new NumberLane(*log);
    Executor* executor = new Executor;
    LaneWorker() { executor->set_lane(lane); }
};

} // namespace

TEST_CASE("executor: what was put in the lane before a task is handled before it", "[executor]") {
    const auto [log, lane, executor] = LaneWorker();
    std::promise<void> done;
    lane->put(1);
    lane->put(2);
    executor->lane_filled();
    executor->post([log](Executor&) { log->push_back("a"); });
    lane->put(3);
    executor->lane_filled();
    executor->post([log, &done](Executor&) {
        log->push_back("b");
        done.set_value();
    });
    REQUIRE(done.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    CHECK(*log == std::vector<std::string>{"1", "2", "a", "3", "b"});
    executor->stop();
}

TEST_CASE("executor: a record put in the lane wakes a worker that went to sleep", "[executor]") {
    const auto [log, lane, executor] = LaneWorker();
    std::promise<void> started;
    executor->post([&started](Executor&) { started.set_value(); });
    REQUIRE(started.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    // Long past the time an idle worker polls before it sleeps.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    lane->put(7);
    executor->lane_filled();
    // No task follows: the record alone must bring the worker round.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (lane->handled() == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(lane->handled() == 1);
    executor->stop();
}

// Launches on their way from the application's threads to the planner. Each is
// a fixed-size record in a ring (core/util/mpsc_ring.h), so that the launch path
// takes no lock and allocates nothing; the worker drains the ring as the
// executor's lane (Executor::Lane), in order and before every task posted after
// the launch, so that the planner sees launches, allocations and frees in the
// order the hooks saw them. A launch of more accesses than a record holds goes
// as a task of its own, which keeps that order too.
#pragma once

#include "core/registry/registry.h"
#include "core/util/mpsc_ring.h"
#include "driver/worker/executor.h"
#include "driver/worker/planner.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

namespace uvmp::driver {

struct LaunchRecord {
    // Most kernels name a few allocations; PyTorch's average about eight.
    static constexpr size_t kMaxAccesses = 16;

    uint64_t seq = 0;
    CUevent fence = nullptr;
    LaunchOrigin origin;
    uint32_t kernel_id = 0;
    uint32_t count = 0;
    uint32_t alloc_ids[kMaxAccesses] = {};
    uint64_t offsets[kMaxAccesses] = {};
};

class LaunchLane final : public Executor::Lane {
public:
    // On the worker, for each launch in turn.
    using Handler = std::function<void(const PlannedLaunch&)>;

    LaunchLane(size_t capacity, Handler handler);

    static bool fits(std::span<const AccessHit> hits) { return hits.size() <= LaunchRecord::kMaxAccesses; }
    // Any thread; `hits` must fit. False when the ring is full (the worker is
    // that many launches behind): the launch is the caller's to count unplanned.
    bool put(uint64_t seq, uint32_t kernel_id, std::span<const AccessHit> hits, CUevent fence,
             const LaunchOrigin& origin);

    uint64_t end() const override { return ring_.end(); }
    void drain_until(uint64_t end) override;
    bool empty() const override { return ring_.empty(); }
    void reset() override { ring_.reset(); }

private:
    MpscRing<LaunchRecord> ring_;
    Handler handler_;
    PlannedLaunch planned_{}; // the worker's, its accesses' storage kept from launch to launch
};

} // namespace uvmp::driver

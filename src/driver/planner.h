// The online side of the residency policies: on the worker thread it replays
// the stream of allocations and launches the hooks post, asks the policy
// (core/policy.h, the same code the simulator runs) what to move, and issues the
// moves as prefetch calls on the library's own streams. Every move is a hint to
// the driver's unified memory: a wrong one costs time, never correctness.
#pragma once

#include "core/options.h"
#include "core/registry.h"
#include "core/policy.h"
#include "core/residency.h"
#include "core/stats.h"
#include "core/trace_writer.h"
#include "driver/driver_table.h"
#include "driver/executor.h"

#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace uvmp::driver {

struct PlannedAllocation {
    uint32_t id;
    CUdeviceptr base;
    uint64_t size;
    CUdevice device;
    CUcontext context;
};

struct PlannedLaunch {
    uint64_t seq;
    uint32_t kernel_id;
    std::vector<trace::Access> accesses; // not empty
    CUevent fence;                       // recorded after the launch on its stream, or nullptr
};

// Events the launch path records behind launches, so the worker can tell how far
// the GPU has got; recycled once seen complete.
class FencePool {
public:
    CUevent acquire(const DriverTable& table);
    void release(CUevent event);

private:
    std::mutex mutex_;
    std::vector<CUevent> free_;
};

class Planner {
public:
    // The budget is per device; budgets[i] is device i's. policy must not be None.
    // registry: to skip moves of allocations freed since they were planned.
    Planner(ResidencyPolicy policy, uint64_t chunk_bytes, Stats& stats, const Registry& registry,
            FencePool& fences);

    // Worker thread only, in the order the hooks saw them.
    void allocation_added(const PlannedAllocation& allocation, uint64_t budget, Executor& executor);
    void allocation_removed(uint32_t id);
    void launch(const PlannedLaunch& launch, Executor& executor);

    void set_trace(trace::TraceWriter* trace) { trace_ = trace; }
    double prediction_hit_rate() const;

private:
    struct DeviceModel {
        std::unique_ptr<Residency> residency;
        std::unique_ptr<uvmp::Policy> policy;
    };

    // A launch the GPU may not have run yet: its chunks stay pinned until then,
    // since the application thread (and so this planner) runs ahead of the GPU.
    struct InFlight {
        DeviceModel* model;
        std::vector<ChunkId> chunks;
        CUevent fence;
    };

    DeviceModel& model_for(CUdevice device, uint64_t budget);
    void retire_finished_launches();
    void retire_front();
    void execute(const Plan& plan, DeviceModel& model, Executor& executor);
    void move(ChunkSpan span, trace::MoveKind kind, DeviceModel& model, Executor& executor);

    ResidencyPolicy kind_;
    uint64_t chunk_bytes_;
    Stats& stats_;
    const Registry& registry_;
    FencePool& fences_;
    std::deque<InFlight> in_flight_;
    trace::TraceWriter* trace_ = nullptr;
    std::unordered_map<CUdevice, DeviceModel> models_;
    std::unordered_map<uint32_t, PlannedAllocation> allocations_;
    std::vector<ChunkId> chunk_scratch_;
    Plan plan_;
    uint64_t launches_ = 0;
};

} // namespace uvmp::driver

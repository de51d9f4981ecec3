// The online side of the residency policies: on the worker thread it replays
// the stream of allocations and launches the hooks post, asks the policy
// (core/policy/policy.h, the same code the simulator runs) what to move, and issues the
// moves as prefetch calls on the library's own streams. Every move is a hint to
// the driver's unified memory: a wrong one costs time, never correctness.
//
// The application's thread runs ahead of the GPU, often by a whole training
// step. The moves planned for a launch are therefore queued behind a wait on
// the launch's fence: they run when the GPU reaches the launch, which is the
// moment the residency model describes (as in the simulator). So a chunk is
// evicted only once the kernels before the launch have finished with it, and
// nothing is fetched so early that it is pushed out again before its use.
#pragma once

#include "core/learn/loop_seed.h"
#include "core/config/options.h"
#include "core/registry/registry.h"
#include "core/placement/host_traffic.h"
#include "core/policy/policy.h"
#include "core/model/residency.h"
#include "core/model/reuse_in_place.h"
#include "core/accounting/stats.h"
#include "core/trace/analysis/mover_waits.h"
#include "core/trace/format/writer.h"
#include "driver/table/driver_table.h"
#include "driver/worker/executor.h"
#include "driver/hostmem/host_memory_guard.h"
#include "driver/pool/fence_pool.h"
#include "driver/rates/move_timer.h"

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace uvmp::driver {

struct PlannedAllocation {
    uint32_t id;
    CUdeviceptr base;
    uint64_t size;
    CUdevice device;
    CUcontext context;
    // The block's memory that has no pages anywhere yet (pool::Block's fresh
    // range; empty where not known): bringing it to the GPU populates it,
    // moving nothing over the link.
    uint64_t fresh_begin = 0;
    uint64_t fresh_end = 0;
};

// Where a launch was made: the context current on the launching thread and its
// device, the one the launch's moves are for.
struct LaunchOrigin {
    CUcontext context = nullptr;
    CUdevice device = -1; // -1: not known, and the device of its first allocation stands in
};

struct PlannedLaunch {
    uint64_t seq;
    uint32_t kernel_id;
    std::vector<trace::Access> accesses; // not empty
    // Recorded on the launch's stream just before the launch, or nullptr: it
    // completes when everything queued before the launch has run.
    CUevent fence;
    LaunchOrigin origin;
};

class Planner {
public:
    // One residency model and policy a device, each under that device's budget
    // (given with each allocation). policy must not be None.
    // registry: to tell a move that failed on memory freed since it was planned
    // (expected: the mover runs behind) from one that failed on live memory.
    // trace_in: an earlier run's trace to start the learned policy from, or empty.
    // mover: the thread that issues the moves. A prefetch call holds its thread
    // for about as long as the transfer; planning on a thread of its own keeps
    // the model in step with the application, which a planner held in those
    // calls was not (it fell a step behind, and the moves it skipped as stale
    // left the GPU holding more than the budget).
    Planner(ResidencyPolicy policy, uint64_t chunk_bytes, std::string trace_in, Stats& stats,
            const Registry& registry, FencePool& fences, Executor& mover);

    // Worker thread only, in the order the hooks saw them. Host-homed blocks are
    // never added: launches naming them plan for their other accesses. Every allocation is
    // a block of the managed pool: a removed one's resident bytes stay on the GPU,
    // dead, and a later one placed over them takes them as they are
    // (core/model/reuse_in_place.h); what else of it fits the budget, dead bytes
    // elsewhere given up for it first, is populated. Those dead bytes are evicted
    // behind the next launch's fence: kernels queued before their free may still
    // use them.
    // populate: whether the rest may be populated by a move (UVMP_POPULATE); the
    // model counts it resident either way, as the kernel that first touches it
    // brings it to the GPU.
    void allocation_added(const PlannedAllocation& allocation, uint64_t budget, bool populate = true);
    void allocation_removed(uint32_t id);
    // A live allocation homed on the host in place: it leaves the model with
    // its bytes, which go to the host with it (none stay behind as dead bytes
    // for the next block), and from now on only what launches name of it counts.
    void allocation_homed_on_host(uint32_t id, uint64_t bytes);
    // A block of a host-homed slab: never in the model, its bytes are counted
    // when launches name them (placement/host_traffic.h).
    void host_allocation_added(uint32_t id, uint64_t bytes) { host_traffic_.add(id, bytes); }
    void host_allocation_removed(uint32_t id) { host_traffic_.remove(id); }
    // A slab of the pool made or given back: its memory holds no dead bytes to reuse.
    void slab_changed(CUdevice device, uint64_t base, uint64_t bytes);
    // Planned in the model of the launch's device, over the allocations of that
    // device only: memory of another device that the kernel names (peer access)
    // is left where that device's model has it, so that a launch never evicts
    // another device's memory to make room on its own. The moves go on the
    // launching context's stream, behind the launch's fence. A launch whose
    // device is not known is planned on the device of the first allocation it
    // names that the model holds; one that plans nothing gives its fence back.
    // With `measure_waits` (while the home learner learns), what the launch put
    // on the mover's stream and which earlier launches' moves bring chunks its
    // kernel names (trace/analysis/mover_waits.h); else, or where it planned nothing,
    // nothing.
    std::optional<trace::LaunchBatch> launch(const PlannedLaunch& launch, bool measure_waits = false);

    void set_trace(trace::TraceWriter* trace) { trace_.store(trace, std::memory_order_release); }
    // Called on the worker thread, once a device's model has wanted room past
    // its budget, with where it keeps the device's dead memory: for the pool's
    // placement (before, no dead byte has to move). Set before the first
    // allocation reaches the planner.
    using DeadMemoryKnown = std::function<void(CUdevice, std::shared_ptr<const pool::PlacementHint>)>;
    void on_dead_memory_known(DeadMemoryKnown known) { dead_memory_known_ = std::move(known); }
    // `*bound` is set once a device's model has wanted room past its budget,
    // live or dead bytes: from then on a plan may evict, and launches need
    // fences. Set before the first allocation reaches the planner.
    void count_budget_bound_in(std::atomic<bool>* bound) { budget_bound_ = bound; }
    // Asked before each eviction is issued (HostMemoryGuard: one it refuses is
    // not made). Set before the first allocation reaches the planner; without
    // one, every eviction is made.
    void guard_host_memory_with(HostMemoryGuard* guard) { host_memory_ = guard; }
    // Times the large evictions on the GPU and reports each to `sink` once read
    // back (driver/rates/move_timer.h; why not fetches: Planner::issue). Set
    // before the first allocation reaches the planner; without it nothing is timed.
    void report_move_times_to(MoveTimer::Sink sink);
    double prediction_hit_rate() const;
    // Bytes of new blocks found resident where freed ones had left them: no move
    // made them so. Any thread.
    uint64_t bytes_reused_in_place() const { return bytes_reused_in_place_.load(std::memory_order_relaxed); }

private:
    // A piece of dead memory to evict.
    struct DeadPiece {
        uint64_t address;
        uint64_t bytes;
    };
    struct BatchChunks {
        uint64_t launch;
        std::vector<ChunkRange> prefetched;
        std::vector<ChunkRange> populated;
    };
    // How many of them: a kernel rarely names chunks prefetched further back
    // than the policy's lookahead, and by then they have come.
    static constexpr size_t kRecentBatches = 64;
    struct DeviceModel {
        CUdevice device = 0;
        std::unique_ptr<Residency> residency;
        std::unique_ptr<uvmp::Policy> policy;
        // Shared with the device's pool, which asks it where dead bytes lie.
        std::shared_ptr<ReuseInPlace> reuse = std::make_shared<ReuseInPlace>();
        // The context of the device's latest allocation: the stream of moves of
        // dead memory, which belongs to no allocation, when the launch names none.
        CUcontext context = nullptr;
        // Dead memory given up for new blocks since the last launch, evicted
        // behind that launch's fence.
        std::vector<DeadPiece> dead_pending;
        // The model has wanted room past its budget (note_budget_bound).
        bool budget_bound = false;
        // Chunks populated for blocks made since the device's last launch.
        std::vector<ChunkRange> populating;
        // By chunk id: fresh memory of a live block that nothing has brought to
        // the GPU yet (no room when the block was made). A move there populates.
        std::vector<uint8_t> unpopulated;
        // While waits are measured: what the device's latest launches'
        // batches brought, newest last.
        std::deque<BatchChunks> recent;
    };

    DeviceModel& model_for(CUdevice device, uint64_t budget);
    // What the launch just planned (plan_, dead_scratch_, range_scratch_) put on
    // the stream, and the latest batches bringing chunks its kernel names.
    trace::LaunchBatch batch_of(uint64_t launch, const DeviceModel& model) const;
    // Drops what of `pieces` lies in [base, base + bytes): memory a block or a
    // slab change has taken over.
    static void keep_clear_of(std::vector<DeadPiece>& pieces, uint64_t base, uint64_t bytes);
    // The model's resident bytes into the device's stats.
    void publish(const DeviceModel& model);
    std::unique_ptr<uvmp::Policy> make_policy();
    // The seed holds only while the program allocates as it did when recorded.
    void check_seed(const PlannedAllocation& allocation);
    // The launch's accesses that the model of `device` may plan: all but those of
    // allocations known to be another device's.
    std::span<const trace::Access> accesses_on(CUdevice device, const std::vector<trace::Access>& accesses);
    // Queues the plan's moves on the mover's stream of `context` (nullptr: the
    // first move's allocation's) behind the launch's fence, which it releases;
    // false when the plan moves nothing (the fence is the caller's).
    bool execute(const Plan& plan, std::span<const DeadPiece> dead, CUevent fence, DeviceModel& model, CUcontext context);
    void wait_for_fence(CUevent fence, CUcontext context);
    // Notes the chunks of a new block's fresh memory that place_block left
    // missing (PlannedAllocation::fresh_begin); forgets whatever its ids held.
    void note_unpopulated(DeviceModel& model, const PlannedAllocation& allocation, ChunkRange chunks);
    // Those of `range` are populated or gone from here on.
    static void clear_unpopulated(DeviceModel& model, ChunkRange range);
    // Hands one move to the mover, to be issued on the stream of `context`. The
    // model already counts it done: the move is issued whether or not the block
    // is still live when the mover gets to it (its slab still holds the bytes, or
    // the driver refuses a range given back).
    void move(ChunkSpan span, trace::MoveKind kind, DeviceModel& model, CUcontext context);
    void issue_move(ChunkSpan span, trace::MoveKind kind, DeviceModel& model, CUcontext context);
    void evict_dead(DeadPiece piece, DeviceModel& model, CUcontext context);
    // On the mover. A move to the GPU goes to the model's device.
    struct MoveOrder {
        PlannedAllocation allocation;
        uint64_t offset;
        uint64_t bytes;
        trace::MoveKind kind;
        uint64_t launches_before;
        CUcontext context;
        CUdevice device;
    };
    void issue(const MoveOrder& order, Executor& mover);
    // The allocation id of a MoveOrder for dead memory (ids of allocations count up from 1).
    static constexpr uint32_t kDeadMemory = UINT32_MAX;

    ResidencyPolicy kind_;
    uint64_t chunk_bytes_;
    std::string trace_in_;
    std::optional<LoopSeed> seed_; // read on first use, dropped once contradicted
    bool seed_read_ = false;
    Stats& stats_;
    const Registry& registry_;
    FencePool& fences_;
    Executor& mover_;
    // Set on the planner's thread, read by the mover's tasks queued after it.
    std::atomic<trace::TraceWriter*> trace_{nullptr};
    std::unordered_map<CUdevice, DeviceModel> models_;
    std::unordered_map<uint32_t, PlannedAllocation> allocations_;
    placement::HostTraffic host_traffic_;
    std::vector<placement::HostTrip> trip_scratch_;
    std::vector<ChunkRange> range_scratch_;
    std::vector<trace::Access> access_scratch_;
    std::vector<DeadPiece> dead_scratch_;
    std::vector<ChunkRange> populate_scratch_;
    Plan plan_;
    uint64_t launches_ = 0;
    std::atomic<uint64_t> bytes_reused_in_place_{0};
    DeadMemoryKnown dead_memory_known_;
    std::atomic<bool>* budget_bound_ = nullptr;
    HostMemoryGuard* host_memory_ = nullptr;
    std::unique_ptr<MoveTimer> move_timer_; // used on the mover only
    // Sets *budget_bound_ once the model's budget has bound.
    void note_budget_bound(DeviceModel& model);
};

} // namespace uvmp::driver

// What the hooks do: serve device allocations from the managed pool (slabs of
// managed memory under the physical guard), keep the registry, observe launches
// and their access sets, and hand every blocking call to the worker. One
// instance per process.
#pragma once

#include "core/registry/access_inference.h"
#include "core/accounting/device_budget.h"
#include "core/config/options.h"
#include "core/graph/graph_replay.h"
#include "core/registry/registry.h"
#include "core/accounting/stats.h"
#include "core/trace/format/writer.h"
#include "driver/table/driver_table.h"
#include "driver/worker/executor.h"
#include "driver/intercept/graph_walk.h"
#include "driver/intercept/passthrough_ledger.h"
#include "driver/homes/home_learner.h"
#include "driver/homes/host_home_router.h"
#include "driver/hostmem/host_memory_guard.h"
#include "driver/worker/launch_lane.h"
#include "driver/pool/managed_pool.h"
#include "driver/rates/device_rates.h"
#include "driver/worker/planner.h"
#include "driver/table/stream_capture.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace uvmp::driver {

// The managed pool's key for the stream of a stream-ordered call: the per-thread
// default stream (as either flavour may name it) has a key of its own on each
// thread, the legacy default stream one key, any other stream its handle.
pool::StreamKey stream_key(StreamFlavor flavor, CUstream stream);

struct LaunchSite {
    StreamFlavor flavor;
    CUfunction function;
    void** params;
    void** extra;
    CUstream stream;
    unsigned grid[3];
    unsigned block[3];
};

class Interceptor {
public:
    Interceptor(Config config, bool active);

    bool active() const { return active_; }
    const Config& config() const { return config_; }
    Stats& stats() { return stats_; }
    const Registry& registry() const { return registry_; }

    // dptr gets a block of the managed pool when the library is active and the
    // guard allows; passthrough performs the original call otherwise. `pool`: the
    // CUDA memory pool a stream-ordered call allocates from (nullptr: the device's
    // current one).
    template <typename Passthrough>
    CUresult allocate(CUdeviceptr* dptr, size_t bytes, CUstream stream, bool stream_ordered,
                      StreamFlavor flavor, CUmemoryPool pool, Passthrough&& passthrough);
    CUresult free(CUdeviceptr ptr, const DriverTable& table);
    CUresult free_async(CUdeviceptr ptr, CUstream stream, StreamFlavor flavor,
                        const DriverTable& table);
    // Memory queries under the budget (memory_report.cpp): cuMemGetInfo reports the
    // budget as the device's capacity and what the job's allocations leave of it;
    // cuDeviceTotalMem reports the budget when one is set. The first versions of
    // both (32-bit sizes) report the same, cut to what 32 bits hold.
    CUresult mem_get_info(size_t* free_bytes, size_t* total_bytes, const DriverTable& table);
    CUresult mem_get_info_v1(unsigned int* free_bytes, unsigned int* total_bytes, const DriverTable& table);
    CUresult device_total_mem(size_t* bytes, CUdevice device, const DriverTable& table);
    CUresult device_total_mem_v1(unsigned int* bytes, CUdevice device, const DriverTable& table);
    // Physical memory made with cuMemCreate on a device counts against the free
    // memory reported there until its handle is released.
    void note_vmm_created(CUmemGenericAllocationHandle handle, uint64_t bytes, const CUmemAllocationProp& prop);
    void note_vmm_released(CUmemGenericAllocationHandle handle) { passthrough_.forget_vmm(handle); }

    // Memory-pool queries: a pool the library converted allocations from answers
    // with the library's figures, everything else is the driver's.
    CUresult mem_pool_get_attribute(CUmemoryPool pool, CUmemPool_attribute attribute, void* value,
                                    const DriverTable& table);
    CUresult mem_pool_set_attribute(CUmemoryPool pool, CUmemPool_attribute attribute, void* value,
                                    const DriverTable& table);
    CUresult mem_pool_trim_to(CUmemoryPool pool, size_t keep_bytes, const DriverTable& table);
    void note_default_pool(CUdevice device, CUmemoryPool pool) { pools_.note_default_pool(device, pool); }
    void note_current_pool(CUdevice device, CUmemoryPool pool) { pools_.note_current_pool(device, pool); }
    void note_passthrough_host(uint64_t bytes) { stats_.passed_through(stats_.passthrough_host, bytes); }
    // The application's own managed memory: neither converted nor moved, but it
    // may be on the GPU as much as the library's, so it counts against the free
    // memory reported on its device until it is freed.
    void note_app_managed(CUdeviceptr ptr, uint64_t bytes, const DriverTable& table) {
        note_passthrough_device(ptr, bytes, stats_.passthrough_app_managed, table);
    }
    // Pointer-attribute answers for converted memory, when hiding is on.
    void adjust_pointer_attribute(CUpointer_attribute attribute, void* data, CUdeviceptr ptr) const;
    void note_ipc_failure(CUdeviceptr ptr, CUresult result) const;

    // Called before every launch is forwarded; returns the launch's sequence
    // number, or kNotRun for a launch into a graph being captured.
    static constexpr uint64_t kNotRun = UINT64_MAX;
    uint64_t observe_launch(const LaunchSite& site);

    // CUDA graphs (graphs.cpp). An executable graph's nodes are walked
    // when it is made and whenever it is changed; each launch of it is then
    // observed, planned and recorded as the launches of its nodes that touch
    // device memory (kernels, copies, sets), in the order the driver lists them.
    void graph_instantiated(CUgraphExec exec, CUgraph graph);
    void graph_exec_updated(CUgraphExec exec, CUgraph graph) { graph_instantiated(exec, graph); }
    void graph_exec_destroyed(CUgraphExec exec) { graphs_.forget(exec); }
    // A module or library is being unloaded: its functions' handles may come back
    // as other kernels' (KernelTable::forget_handles).
    void code_unloaded() { kernels_.forget_handles(); }
    // A node given new parameters in an executable graph: its steps are made anew.
    void graph_kernel_node_set(CUgraphExec exec, CUgraphNode node, const KernelNode& kernel);
    void graph_copy_node_set(CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D& copy);
    void graph_set_node_set(CUgraphExec exec, CUgraphNode node, const SetNode& set);
    void graph_child_node_set(CUgraphExec exec, CUgraphNode node, CUgraph child);
    void graph_node_set(CUgraphExec exec, CUgraphNode node, const CUgraphNodeParams& params);
    // Called before a graph launch is forwarded.
    void observe_graph_launch(StreamFlavor flavor, CUgraphExec exec, CUstream stream);
    void mark_iteration();

    // With a policy on, the application's launches can be held up by the
    // driver while the worker moves data: the launch hooks time the real call,
    // for launch `seq` one in kSampleEvery, as the hook's own work is timed.
    bool times_launch_call(uint64_t seq) const {
        return config_.policy != ResidencyPolicy::None && seq % kSampleEvery == 0;
    }
    void launch_call_took(uint64_t nanoseconds) {
        stats_.add(stats_.launch_calls_timed);
        stats_.add(stats_.launch_call_ns, nanoseconds);
    }

    // Exit: summary, stats file, trace close. Idempotent.
    void finish();

    // Around fork() (pthread_atfork; fork.cpp): before_fork takes the
    // library's locks in one fixed order, so that no thread is inside them while
    // the process is copied; both processes release them after. The child then
    // drops everything that describes the parent's CUDA state and starts as a
    // process that has not touched CUDA yet.
    void before_fork();
    void after_fork_in_parent();
    void after_fork_in_child();

private:
    // Launches whose hook and call are timed: one in this many, so that the
    // clock reads add little to what they measure.
    static constexpr uint64_t kSampleEvery = 64;
    // The worker only queues moves behind fences, so it keeps up unless the
    // driver holds it in a call; past this backlog of tasks (several training
    // steps of launches) launches are not planned at all, and the predictor
    // re-synchronises when the worker catches up.
    static constexpr size_t kMaxPlannerBacklog = 1 << 16;
    // The launch lane's records, as many as the backlog of tasks above: 16 MiB,
    // made only in a process that converts memory under a policy.
    static constexpr size_t kLaneCapacity = kMaxPlannerBacklog;
    // observe_launch's work, which it times now and then.
    uint64_t observe_launch_untimed(const LaunchSite& site);
    // The kernel table's entry, its name recorded in the trace on first sight.
    const KernelInfo& kernel_info(const void* handle);
    const KernelInfo& step_kernel(const GraphStep& step);
    // Puts `steps` (nullopt: not known) in place of those of `node`; what `exec`
    // runs is no longer known where that cannot be done.
    void replace_graph_node(CUgraphExec exec, CUgraphNode node, std::optional<std::vector<GraphStep>> steps);
    // What `graph` runs, its steps said to come from `owner` (nullptr: each from its
    // own node); nullopt, said once in the log, where the walk fails.
    std::optional<GraphReplay> walk(CUgraph graph, CUgraphNode owner);
    void record_launch(trace::TraceWriter& trace, uint64_t seq, uint32_t kernel_id, const unsigned (&grid)[3],
                       const unsigned (&block)[3], CUstream stream, std::span<const trace::Access> accesses);
    // Where records go: the trace file, the recording host homes are learned
    // from (learner_), both, or nowhere (nullptr).
    trace::TraceWriter* trace() const { return trace_.load(std::memory_order_acquire); }
    // Whether anything has read the accesses of launches: a trace, or a planner
    // once the budget was reached (plans_launches).
    bool read_accesses() const { return plans_launches_.load(std::memory_order_relaxed) || trace(); }
    // The writers records go to once the recording of learner_ is added or taken away.
    void route_trace_records(trace::TraceWriter* recording);
    // With host homes learned in the run: once `device` is over its budget, the
    // learner starts recording (once in the process).
    void learn_homes_if_over_budget(int device, const DeviceBudget& budget, const DriverTable& table);
    trace::Header trace_header(const DriverTable& table) const;
    // Kernel durations, from the kernel timing, to whoever wants them.
    void kernel_timed(uint64_t seq, uint64_t start_ns, uint64_t duration_ns);
    bool start_kernel_timing(std::string& error);
    enum class ConvertOutcome { Converted, GuardRefused, Failed };
    ConvertOutcome convert(CUdeviceptr* dptr, size_t bytes, bool stream_ordered, pool::StreamKey stream,
                           CUmemoryPool pool, const DriverTable& table);
    DeviceBudget* budget_for_current_device(const DriverTable& table, CUdevice& device,
                                            CUcontext& context);
    // Places the chunks `block` is the first to cover (pool::Block::fresh_begin,
    // fresh_end) on the GPU, for allocation `id` of `bytes`, from the worker.
    void populate(uint32_t id, uint64_t bytes, const pool::Block& block, CUdevice device, CUcontext context);
    // Returns a converted allocation's block to its pool, reusable as `stream` and
    // `fence` allow (the pool owns the fence from here on), and forgets the allocation.
    CUresult give_back(const Allocation& allocation, pool::StreamKey stream, pool::FenceKey fence);
    void release_converted(const Allocation& allocation, uint64_t block_bytes);
    // Allocations made before the learned step on `device`, homed at `home`
    // where they lie (in_place_homes.cpp); from the learner's thread.
    void home_in_place(int device, std::span<const HomeLearner::EarlierHome> allocations, placement::Home home);
    // Every slab the pools made or gave back, with the device: logged, written to
    // the trace, and told to the planner (its dead bytes there are gone).
    void record_slab_events(int device, std::span<const pool::SlabEvent> events);
    // An allocation the driver made: it takes the memory of the device whose
    // context is current, until it is freed.
    void note_passthrough_device(CUdeviceptr ptr, uint64_t bytes, std::atomic<uint64_t>& reason,
                                 const DriverTable& table);
    struct MemoryView {
        uint64_t free = 0;
        uint64_t total = 0;
    };
    // What the budget makes of the current device's memory, or nullopt where the
    // driver's own figures stand (the library inactive, no context, ...).
    std::optional<MemoryView> budget_view(const DriverTable& table);
    // The capacity cuDeviceTotalMem reports for a device of `device_total` bytes
    // under a set budget, or nullopt without one.
    std::optional<uint64_t> budget_total(CUdevice device, uint64_t device_total) const;
    template <typename Size>
    CUresult report_mem_info(CUresult driver_result, Size* free_bytes, Size* total_bytes, const DriverTable& table);
    void open_trace_if_needed(const DriverTable& table);
    void describe_kernel(const void* handle, KernelInfo& info) const;
    CUevent record_fence(StreamFlavor flavor, CUstream stream, CUcontext context);
    // The context current on the launching thread and its device: where the
    // launch runs, and so where the moves planned for it go.
    LaunchOrigin launch_origin() const;
    // True while every device's converted memory fits its budget and no planner
    // has wanted room past it: nothing can need evicting. (Dead bytes count
    // against the budget too: plans evict them while the live bytes fit.)
    bool all_converted_memory_fits() const;
    // Whether launches go to the planner: from the first launch that finds some
    // converted memory past its budget, or after the first allocation homed on
    // the host (convert), for the rest of the run. Before it the allocation hooks
    // alone keep the planner's residency exact (blocks are placed as they are
    // made) and no launch can need a move, so a job that fits its budget pays
    // for the hook what a job without one does.
    bool plans_launches();
    // Where the launch's stream stands, asked only when a planner or the trace needs it.
    CaptureState capture_of(StreamFlavor flavor, CUstream stream, bool planned_accesses) const;
    // With a policy on: hands the launch and the allocations it touches to the planner.
    void post_to_planner(const LaunchSite& site, uint64_t seq, uint32_t kernel_id, std::span<const AccessHit> hits);
    // The same for the steps of a graph launch, in one task.
    void post_to_planner(std::vector<PlannedLaunch> steps);
    void count_unplanned(CUevent fence);
    // On the worker: one launch handed to the planner.
    void plan(const PlannedLaunch& launch);
    // Made with the first allocation the planner is told of: a process that never
    // converts memory needs none. nullptr before.
    void make_launch_lane();
    uint64_t now_ns() const;
    // The planner of the configured policy, or nullptr for none (or inactive).
    std::unique_ptr<Planner> make_planner();
    void unlock_after_fork(bool in_child);

    Config config_;
    bool active_;
    Stats stats_;
    Registry registry_;
    KernelTable kernels_;
    GraphTable graphs_;
    Executor executor_;
    // Issues the planner's moves, so that planning never waits on a transfer.
    Executor mover_;
    std::array<DeviceBudget, ManagedPools::kMaxDevices> budgets_;
    std::atomic<uint32_t> devices_over_budget_{0}; // kept by the budgets themselves
    std::atomic<bool> budget_bound_{false};        // set by the planner (Planner::count_budget_bound_in)
    std::atomic<bool> plans_launches_{false};      // latched by plans_launches() and convert()
    std::mutex budgets_mutex_;
    // Settled with each device's budget (budget_for_current_device).
    DeviceRates rates_{config_};

    PassthroughLedger passthrough_{stats_};

    HostMemoryGuard host_memory_{config_, stats_};
    ManagedPools pools_;
    HostHomeRouter host_homes_;
    // Stream-ordered frees of one stream reach the pool in the order of their
    // events: a lock for a stream, shared by a few.
    std::array<std::mutex, 16> free_order_; // 16: the hash's top four bits pick one
    std::unique_ptr<Planner> planner_; // worker thread only, once made
    std::mutex lane_mutex_; // making the lane
    std::unique_ptr<LaunchLane> lane_owner_;
    std::atomic<LaunchLane*> lane_{nullptr};
    FencePool fences_;
    std::once_flag trace_once_;
    std::unique_ptr<trace::TraceWriter> trace_file_; // UVMP_TRACE_OUT
    std::atomic<trace::TraceWriter*> trace_{nullptr};
    // Feeds the file and the learner's recording while both are wanted; never
    // destroyed, since a hook may still hold it.
    std::unique_ptr<trace::TraceWriter> trace_tee_;
    std::mutex trace_route_mutex_;
    HomeLearner learner_;
    std::once_flag learning_once_;
    // In a forked child, the parents' planners and trace writers: their threads
    // are gone and they may have been caught mid-change, so they are never used
    // or destroyed there, only kept reachable.
    std::vector<std::unique_ptr<Planner>> parent_planners_;
    std::vector<std::unique_ptr<trace::TraceWriter>> parent_traces_;
    std::atomic<uint64_t> launch_seq_{0};
    uint64_t start_ns_;
    std::atomic<bool> finished_{false};
};

Interceptor* interceptor(); // nullptr before the library's constructor ran
void set_interceptor(Interceptor* instance);

} // namespace uvmp::driver

#include "driver/intercept/allocation_inl.h"

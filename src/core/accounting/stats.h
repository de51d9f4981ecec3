// The library's counters: updated with relaxed atomics from any thread, read
// into the public uvmp_stats struct, printed as the exit summary, written as JSON.
#pragma once

#include "core/accounting/device_stats.h"
#include "core/accounting/host_home_figures.h"
#include "uvmprefetch/uvmprefetch.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace uvmp {

// Every uvmp_stats field after struct_size and active, in declaration order.
#define UVMP_STAT_FIELDS(X)                                                                        \
    X(allocs_converted) X(bytes_converted) X(bytes_converted_live) X(bytes_converted_peak)         \
    X(frees_converted) X(allocs_passed_through) X(bytes_passed_through) X(passthrough_vmm)        \
    X(passthrough_host) X(passthrough_capture) X(passthrough_managed_failed)                       \
    X(passthrough_inactive) X(guard_refusals) X(launches_seen) X(launches_with_access)             \
    X(access_entries) X(populate_calls) X(bytes_populated) X(bytes_prefetched) X(bytes_evicted)    \
    X(iterations) X(budget_bytes) X(guard_limit_bytes) X(trace_records_written)                    \
    X(trace_records_dropped) X(launches_unplanned) X(move_calls) X(move_call_ns)                  \
    X(bytes_demand_estimated) X(launches_with_demand) X(launch_calls_timed) X(launch_call_ns)        \
    X(launches_captured) X(launches_fenced) X(hooks_timed) X(hook_ns) X(pool_slabs_created)          \
    X(pool_slabs_released) X(pool_reserved_bytes) X(pool_reserved_peak) X(graph_launches)            \
    X(graph_launches_unknown) X(graph_steps_replayed) X(launches_planned) X(passthrough_app_managed) \
    X(host_allocs) X(host_bytes_allocated) X(host_blocks_live) X(host_bytes_live)                  \
    X(host_slabs_created) X(host_slab_bytes) X(bytes_evicted_dead) X(bytes_dead_resident) X(bytes_held_peak)    \
    X(remote_write_bytes_named) X(remote_read_bytes_named) X(pool_slab_release_ns)

// The host memory the library takes (host-homed slabs, evictions) and what the
// host memory guard (driver/hostmem/host_memory_guard.h) refused: host memory,
// never counted as the device's. For the stats file and the exit summary; not
// in the C API's struct.
struct HostMemoryStats {
    std::atomic<uint64_t> host_slab_bytes_peak{0};
    // Evicted less prefetched back, never below 0: an estimate (the driver may
    // move pages of its own accord, and dead bytes stay evicted until reused).
    std::atomic<uint64_t> evicted_bytes_on_host{0};
    // At the guard's latest reading: what the host had left for the job
    // (kUnknown: nothing could be read) and the reserve kept.
    static constexpr uint64_t kUnknown = ~uint64_t{0};
    std::atomic<uint64_t> available_bytes{kUnknown};
    std::atomic<uint64_t> reserve_bytes{0};
    std::atomic<bool> short_seen{false};
    std::atomic<uint64_t> host_slabs_refused{0};
    std::atomic<uint64_t> host_slab_bytes_refused{0};
    std::atomic<uint64_t> evictions_not_made{0};
    std::atomic<uint64_t> eviction_bytes_not_made{0};
    // Host slabs' pages made by the library's threads ahead of the GPU's first
    // writes (driver/hostmem/host_page_maker.h), and those threads' time.
    std::atomic<uint64_t> host_page_bytes_made{0};
    std::atomic<uint64_t> host_page_make_ns{0};

    void add_json(nlohmann::ordered_json& j, uint64_t host_slab_bytes) const;
    // A line for the exit summary, or nothing when the library put nothing on the host.
    std::optional<std::string> summary_line(uint64_t host_slab_bytes) const;
    void reset();
};

// What a move did, for the counters it adds to.
enum class MoveCount { Populate, Prefetch, Evict, EvictDead };

struct Stats {
    // A cache line each: the launch path counts on the application's threads while
    // the worker and the mover count theirs, and none of them waits on the others' lines.
#define UVMP_DECLARE_COUNTER(name) alignas(64) std::atomic<uint64_t> name{0};
    UVMP_STAT_FIELDS(UVMP_DECLARE_COUNTER)
#undef UVMP_DECLARE_COUNTER

    void add(std::atomic<uint64_t>& counter, uint64_t value = 1) {
        counter.fetch_add(value, std::memory_order_relaxed);
    }
    // The device's figures, from now on reported; a device past kMaxStatDevices
    // (or none, -1) gets figures that are never reported.
    DeviceStats& device(int device);
    // Whether the job used the device, and its figures then.
    const DeviceStats* used_device(int device) const;
    // The device's budget and physical guard, once known. The first device known
    // gives the process-wide budget_bytes and guard_limit_bytes, so that a job of
    // one device reads them there whichever device it runs on.
    void device_configured(int device, uint64_t budget, uint64_t guard_limit);
    void converted_allocated(int device, uint64_t bytes);
    void converted_freed(int device, uint64_t bytes);
    // An allocation left as it was. `device`: the device whose memory it takes
    // until passthrough_freed, or -1 for none (host memory).
    void passed_through(std::atomic<uint64_t>& reason, uint64_t bytes, int device = -1);
    void passthrough_freed(int device, uint64_t bytes);
    void moved(int device, MoveCount what, uint64_t bytes);
    void slab_created(uint64_t bytes);
    void slab_released(uint64_t bytes);
    // Host-homed blocks and their slabs (UVMP_HOST_HOMES): converted too, but
    // none of the GPU's (the pool's reserved figures count GPU slabs only).
    void host_block_allocated(uint64_t bytes);
    void host_block_freed(uint64_t bytes);
    void host_slab_created(uint64_t bytes);
    void host_slab_released(uint64_t bytes);
    // What the host homes came to (JSON and summary only).
    HostHomeFigures host_homes;
    HostMemoryStats host_memory;

    void fill(uvmp_stats& out, bool active) const;
    std::string to_json(bool active, int pid) const;
    // Lines for the exit summary, without the "uvmprefetch: " prefix.
    // A job of several devices also gets a line for each. `accesses_read`:
    // whether the launches' access sets were looked for (a plan or a trace).
    std::vector<std::string> summary_lines(bool accesses_read = true) const;
    void reset();

private:
    std::array<DeviceStats, kMaxStatDevices> devices_;
    DeviceStats unreported_;
    std::atomic<bool> budget_known_{false};
};

} // namespace uvmp

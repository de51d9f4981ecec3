// The library's counters: updated with relaxed atomics from any thread, read
// into the public uvmp_stats struct, printed as the exit summary, written as JSON.
#pragma once

#include "uvmprefetch/uvmprefetch.h"

#include <atomic>
#include <cstdint>
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
    X(graph_launches_unknown) X(graph_steps_replayed) X(launches_planned)

struct Stats {
    // A cache line each: the launch path counts on the application's threads while
    // the worker and the mover count theirs, and none of them waits on the others' lines.
#define UVMP_DECLARE_COUNTER(name) alignas(64) std::atomic<uint64_t> name{0};
    UVMP_STAT_FIELDS(UVMP_DECLARE_COUNTER)
#undef UVMP_DECLARE_COUNTER

    void add(std::atomic<uint64_t>& counter, uint64_t value = 1) {
        counter.fetch_add(value, std::memory_order_relaxed);
    }
    void converted_allocated(uint64_t bytes);
    void converted_freed(uint64_t bytes);
    void passed_through(std::atomic<uint64_t>& reason, uint64_t bytes);
    void slab_created(uint64_t bytes);
    void slab_released(uint64_t bytes);

    void fill(uvmp_stats& out, bool active) const;
    std::string to_json(bool active, int pid) const;
    // Lines for the exit summary, without the "uvmprefetch: " prefix.
    std::vector<std::string> summary_lines() const;
    void reset();
};

} // namespace uvmp

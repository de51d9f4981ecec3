#include "core/accounting/stats.h"

#include "core/util/size_parse.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <string>

namespace uvmp {

namespace {

// Adds to a current figure and keeps its high-water mark.
void add_with_peak(std::atomic<uint64_t>& current, std::atomic<uint64_t>& peak, uint64_t bytes) {
    const uint64_t now = current.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    uint64_t high = peak.load(std::memory_order_relaxed);
    while (now > high && !peak.compare_exchange_weak(high, now, std::memory_order_relaxed)) {
    }
}

// A counter of nanoseconds as milliseconds, for the summary's lines.
std::string milliseconds(const std::atomic<uint64_t>& ns) {
    char text[48];
    std::snprintf(text, sizeof text, "%.1f ms", static_cast<double>(ns.load(std::memory_order_relaxed)) / 1e6);
    return std::string(text);
}

} // namespace

DeviceStats& Stats::device(int device) {
    if (device < 0 || static_cast<size_t>(device) >= devices_.size()) return unreported_;
    DeviceStats& d = devices_[static_cast<size_t>(device)];
    // A load first: the flag is set once, and read on every change of the figures.
    if (!d.used.load(std::memory_order_relaxed)) d.used.store(true, std::memory_order_relaxed);
    return d;
}

const DeviceStats* Stats::used_device(int device) const {
    if (device < 0 || static_cast<size_t>(device) >= devices_.size()) return nullptr;
    const DeviceStats& d = devices_[static_cast<size_t>(device)];
    return d.used.load(std::memory_order_relaxed) ? &d : nullptr;
}

void Stats::device_configured(int device, uint64_t budget, uint64_t guard_limit) {
    DeviceStats& d = this->device(device);
    d.budget_bytes.store(budget, std::memory_order_relaxed);
    d.guard_limit_bytes.store(guard_limit, std::memory_order_relaxed);
    if (budget_known_.exchange(true)) return;
    budget_bytes.store(budget, std::memory_order_relaxed);
    guard_limit_bytes.store(guard_limit, std::memory_order_relaxed);
}

void Stats::converted_allocated(int device, uint64_t bytes) {
    add(allocs_converted);
    add(bytes_converted, bytes);
    add_with_peak(bytes_converted_live, bytes_converted_peak, bytes);
    DeviceStats& d = this->device(device);
    add(d.allocs_converted);
    add(d.bytes_converted, bytes);
    add_with_peak(d.bytes_converted_live, d.bytes_converted_peak, bytes);
}

void Stats::slab_created(uint64_t bytes) {
    add(pool_slabs_created);
    add_with_peak(pool_reserved_bytes, pool_reserved_peak, bytes);
}

void Stats::slab_released(uint64_t bytes) {
    add(pool_slabs_released);
    pool_reserved_bytes.fetch_sub(bytes, std::memory_order_relaxed);
}

void Stats::host_block_allocated(uint64_t bytes) {
    add(host_allocs);
    add(host_bytes_allocated, bytes);
    add(host_blocks_live);
    add(host_bytes_live, bytes);
}

void Stats::host_block_freed(uint64_t bytes) {
    host_blocks_live.fetch_sub(1, std::memory_order_relaxed);
    host_bytes_live.fetch_sub(bytes, std::memory_order_relaxed);
}

void Stats::host_slab_created(uint64_t bytes) {
    add(host_slabs_created);
    add_with_peak(host_slab_bytes, host_memory.host_slab_bytes_peak, bytes);
}

void Stats::host_slab_released(uint64_t bytes) { host_slab_bytes.fetch_sub(bytes, std::memory_order_relaxed); }

void Stats::converted_freed(int device, uint64_t bytes) {
    add(frees_converted);
    bytes_converted_live.fetch_sub(bytes, std::memory_order_relaxed);
    this->device(device).bytes_converted_live.fetch_sub(bytes, std::memory_order_relaxed);
}

void Stats::passed_through(std::atomic<uint64_t>& reason, uint64_t bytes, int device) {
    add(reason);
    add(allocs_passed_through);
    add(bytes_passed_through, bytes);
    if (device < 0) return;
    DeviceStats& d = this->device(device);
    add(d.allocs_passed_through);
    add(d.bytes_passed_through_live, bytes);
}

void Stats::passthrough_freed(int device, uint64_t bytes) {
    this->device(device).bytes_passed_through_live.fetch_sub(bytes, std::memory_order_relaxed);
}

void Stats::moved(int device, MoveCount what, uint64_t bytes) {
    DeviceStats& d = this->device(device);
    switch (what) {
    case MoveCount::Populate:
        add(populate_calls);
        add(bytes_populated, bytes);
        add(d.bytes_populated, bytes);
        break;
    case MoveCount::Prefetch: {
        add(bytes_prefetched, bytes);
        add(d.bytes_prefetched, bytes);
        // What comes back to the GPU no longer takes host memory.
        std::atomic<uint64_t>& on_host = host_memory.evicted_bytes_on_host;
        uint64_t held = on_host.load(std::memory_order_relaxed);
        while (!on_host.compare_exchange_weak(held, held > bytes ? held - bytes : 0, std::memory_order_relaxed)) {
        }
        break;
    }
    case MoveCount::EvictDead:
        add(bytes_evicted_dead, bytes);
        [[fallthrough]]; // and evicted, as any eviction
    case MoveCount::Evict:
        add(bytes_evicted, bytes);
        add(d.bytes_evicted, bytes);
        add(host_memory.evicted_bytes_on_host, bytes);
        break;
    }
}

void Stats::fill(uvmp_stats& out, bool active) const {
    uvmp_stats full{};
    full.struct_size = sizeof(uvmp_stats);
    full.active = active ? 1 : 0;
#define UVMP_COPY_COUNTER(name) full.name = name.load(std::memory_order_relaxed);
    UVMP_STAT_FIELDS(UVMP_COPY_COUNTER)
#undef UVMP_COPY_COUNTER
    const size_t n = out.struct_size < sizeof(uvmp_stats) ? out.struct_size : sizeof(uvmp_stats);
    std::memcpy(&out, &full, n);
    out.struct_size = static_cast<uint32_t>(n);
}

std::string Stats::to_json(bool active, int pid) const {
    nlohmann::ordered_json j;
    j["pid"] = pid;
    j["active"] = active ? 1 : 0;
#define UVMP_JSON_COUNTER(name) j[#name] = name.load(std::memory_order_relaxed);
    UVMP_STAT_FIELDS(UVMP_JSON_COUNTER)
#undef UVMP_JSON_COUNTER
    host_homes.add_json(j);
    host_memory.add_json(j, host_slab_bytes.load(std::memory_order_relaxed));
    // Each device the job used, after the process-wide figures, which keep their names.
    nlohmann::ordered_json devices = nlohmann::ordered_json::array();
    for (size_t i = 0; i < devices_.size(); ++i) {
        const DeviceStats* d = used_device(static_cast<int>(i));
        if (!d) continue;
        nlohmann::ordered_json entry;
        entry["device"] = i;
#define UVMP_JSON_DEVICE_COUNTER(name) entry[#name] = d->name.load(std::memory_order_relaxed);
        UVMP_DEVICE_STAT_FIELDS(UVMP_JSON_DEVICE_COUNTER)
#undef UVMP_JSON_DEVICE_COUNTER
        devices.push_back(std::move(entry));
    }
    j["devices"] = std::move(devices);
    return j.dump(2);
}

std::vector<std::string> Stats::summary_lines(bool accesses_read) const {
    auto v = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
    auto n = [&](const std::atomic<uint64_t>& c) { return std::to_string(v(c)); };
    auto sz = [&](const std::atomic<uint64_t>& c) { return format_size(v(c)); };
    std::vector<std::string> lines;
    lines.push_back("allocations converted: " + n(allocs_converted) + " (" + sz(bytes_converted) +
                    ", peak live " + sz(bytes_converted_peak) + ")");
    lines.push_back("allocations passed through: " + n(allocs_passed_through) + " (" +
                    sz(bytes_passed_through) + "; vmm " + n(passthrough_vmm) + ", host " +
                    n(passthrough_host) + ", graph capture " + n(passthrough_capture) +
                    ", managed refused " + n(passthrough_managed_failed) + ", inactive " +
                    n(passthrough_inactive) +
                    (v(passthrough_app_managed) ? ", the application's managed " + n(passthrough_app_managed) : "") +
                    ")");
    const uint64_t seen = v(launches_seen);
    const double pct = seen ? 100.0 * static_cast<double>(v(launches_with_access)) /
                                  static_cast<double>(seen)
                            : 0.0;
    char pct_text[32];
    std::snprintf(pct_text, sizeof pct_text, "%.1f%%", pct);
    lines.push_back("launches seen: " + n(launches_seen) +
                    (accesses_read ? ", with a known access set: " + n(launches_with_access) + " (" + pct_text + ")"
                                   : std::string(" (access sets not read: no trace, and no budget or one never reached)")));
    lines.push_back("bytes populated at allocation: " + sz(bytes_populated) + " in " +
                    n(populate_calls) + " calls; prefetched " + sz(bytes_prefetched) +
                    ", evicted " + sz(bytes_evicted) + " (" + sz(bytes_evicted_dead) +
                    " of it dead); launches not planned (worker behind): " + n(launches_unplanned));
    if (v(bytes_held_peak))
        lines.push_back("held on the GPU at most " + sz(bytes_held_peak) + " (live and dead bytes), budget " +
                        sz(budget_bytes) + "; dead bytes there at exit " + sz(bytes_dead_resident));
    // Microseconds per event, for counters of nanoseconds over a count.
    auto average_us = [&](const std::atomic<uint64_t>& ns, const std::atomic<uint64_t>& count) {
        char text[48];
        std::snprintf(text, sizeof text, "%.1f us", static_cast<double>(v(ns)) / 1e3 / static_cast<double>(v(count)));
        return std::string(text);
    };
    if (v(move_calls))
        lines.push_back("move calls: " + n(move_calls) + ", worker held " + average_us(move_call_ns, move_calls) +
                        " per call on average");
    if (v(launch_calls_timed))
        lines.push_back("launch calls: " + average_us(launch_call_ns, launch_calls_timed) +
                        " on average in the driver, " + n(launches_fenced) + " fenced; " + n(launches_with_demand) +
                        " launches needed " + sz(bytes_demand_estimated) +
                        " the policy had not made resident ahead (faulted in or fetched late)");
    if (v(hooks_timed)) {
        char text[48];
        std::snprintf(text, sizeof text, "%.0f ns", static_cast<double>(v(hook_ns)) / static_cast<double>(v(hooks_timed)));
        lines.push_back(std::string("launch hook: ") + text + " of the library's own work per launch (" + n(hooks_timed) +
                        " launches timed)");
    }
    if (v(graph_launches) || v(launches_captured))
        lines.push_back("graph launches: " + n(graph_launches) + ", running " + n(graph_steps_replayed) +
                        " kernel, copy and set nodes; " + n(graph_launches_unknown) +
                        " of graphs not known (not planned); launches captured into graphs: " + n(launches_captured));
    if (v(pool_slabs_created))
        lines.push_back("managed pool: " + n(pool_slabs_created) + " slabs made, " + n(pool_slabs_released) +
                        " given back (" + milliseconds(pool_slab_release_ns) +
                        " in cuMemFree, host slabs' included: it waits for the GPU's queued work); " +
                        sz(pool_reserved_bytes) + " held at exit, peak " + sz(pool_reserved_peak));
    if (v(host_allocs))
        lines.push_back("host homes: " + n(host_allocs) + " allocations (" + sz(host_bytes_allocated) +
                        ") from host slabs, never migrated; " + n(host_blocks_live) + " (" + sz(host_bytes_live) +
                        ") live at exit; " + n(host_slabs_created) + " host slabs made, " + sz(host_slab_bytes) +
                        " held at exit; kernels named " + sz(remote_write_bytes_named) + " of them to write and " +
                        sz(remote_read_bytes_named) + " to read (one trip a launch)");
    if (std::optional<std::string> line = host_homes.summary_line()) lines.push_back(std::move(*line));
    if (std::optional<std::string> line = host_memory.summary_line(v(host_slab_bytes))) lines.push_back(std::move(*line));
    lines.push_back("budget " + sz(budget_bytes) + ", physical guard " + sz(guard_limit_bytes) +
                    ", guard refusals: " + n(guard_refusals));
    std::vector<int> used;
    for (size_t i = 0; i < devices_.size(); ++i)
        if (used_device(static_cast<int>(i))) used.push_back(static_cast<int>(i));
    // One device's line would repeat the process-wide figures above.
    if (used.size() > 1)
        for (int device : used) {
            const DeviceStats& d = *used_device(device);
            lines.push_back("device " + std::to_string(device) + ": budget " + sz(d.budget_bytes) +
                            ", physical guard " + sz(d.guard_limit_bytes) + "; converted " + n(d.allocs_converted) +
                            " (" + sz(d.bytes_converted) + ", peak live " + sz(d.bytes_converted_peak) +
                            "), passed through " + n(d.allocs_passed_through) + " (" +
                            sz(d.bytes_passed_through_live) + " live); " + n(d.launches_planned) +
                            " launches planned, resident " + sz(d.bytes_resident) + "; populated " +
                            sz(d.bytes_populated) + ", prefetched " + sz(d.bytes_prefetched) + ", evicted " +
                            sz(d.bytes_evicted) + " in " + n(d.move_calls) + " move calls; guard refusals: " +
                            n(d.guard_refusals));
        }
    if (v(trace_records_written) || v(trace_records_dropped))
        lines.push_back("trace records written: " + n(trace_records_written) + ", dropped: " +
                        n(trace_records_dropped));
    return lines;
}

void Stats::reset() {
#define UVMP_RESET_COUNTER(name) name.store(0, std::memory_order_relaxed);
    UVMP_STAT_FIELDS(UVMP_RESET_COUNTER)
#undef UVMP_RESET_COUNTER
    for (DeviceStats& d : devices_) {
        d.used.store(false, std::memory_order_relaxed);
#define UVMP_RESET_DEVICE_COUNTER(name) d.name.store(0, std::memory_order_relaxed);
        UVMP_DEVICE_STAT_FIELDS(UVMP_RESET_DEVICE_COUNTER)
#undef UVMP_RESET_DEVICE_COUNTER
    }
    budget_known_.store(false, std::memory_order_relaxed);
    host_homes.reset();
    host_memory.reset();
}

void HostMemoryStats::add_json(nlohmann::ordered_json& j, uint64_t host_slab_bytes) const {
    auto v = [](const auto& c) { return c.load(std::memory_order_relaxed); };
    nlohmann::ordered_json h;
    h["host_slab_bytes"] = host_slab_bytes;
    h["host_slab_bytes_peak"] = v(host_slab_bytes_peak);
    h["evicted_bytes_on_host"] = v(evicted_bytes_on_host);
    if (v(available_bytes) == kUnknown) h["available_bytes"] = nullptr;
    else h["available_bytes"] = v(available_bytes);
    h["reserve_bytes"] = v(reserve_bytes);
    h["short"] = v(short_seen);
    h["host_slabs_refused"] = v(host_slabs_refused);
    h["host_slab_bytes_refused"] = v(host_slab_bytes_refused);
    h["evictions_not_made"] = v(evictions_not_made);
    h["eviction_bytes_not_made"] = v(eviction_bytes_not_made);
    h["host_page_bytes_made"] = v(host_page_bytes_made);
    h["host_page_make_ns"] = v(host_page_make_ns);
    j["host_memory"] = std::move(h);
}

std::optional<std::string> HostMemoryStats::summary_line(uint64_t host_slab_bytes) const {
    auto v = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
    const bool short_of_it = short_seen.load(std::memory_order_relaxed);
    if (!v(host_slab_bytes_peak) && !v(evicted_bytes_on_host) && !short_of_it) return std::nullopt;
    std::string line = "host memory (not the GPU's): host slabs hold " + format_size(host_slab_bytes) + " at exit, peak " +
                       format_size(v(host_slab_bytes_peak)) + "; evictions left about " +
                       format_size(v(evicted_bytes_on_host)) + " on the host";
    if (v(host_page_bytes_made))
        line += "; " + format_size(v(host_page_bytes_made)) + " of host slab pages made ahead by host threads (" +
                milliseconds(host_page_make_ns) + " of their time)";
    if (v(available_bytes) != kUnknown)
        line += "; " + format_size(v(available_bytes)) + " available at the latest reading, reserve " +
                format_size(v(reserve_bytes));
    if (short_of_it)
        line += "; short: " + std::to_string(v(host_slabs_refused)) + " host slabs (" +
                format_size(v(host_slab_bytes_refused)) + ") homed on the GPU instead, " +
                std::to_string(v(evictions_not_made)) + " evictions (" + format_size(v(eviction_bytes_not_made)) +
                ") not made";
    return line;
}

void HostMemoryStats::reset() {
    for (std::atomic<uint64_t>* c : {&host_slab_bytes_peak, &evicted_bytes_on_host, &reserve_bytes,
                                     &host_slabs_refused, &host_slab_bytes_refused, &evictions_not_made,
                                     &eviction_bytes_not_made, &host_page_bytes_made, &host_page_make_ns})
        c->store(0, std::memory_order_relaxed);
    available_bytes.store(kUnknown, std::memory_order_relaxed);
    short_seen.store(false, std::memory_order_relaxed);
}

} // namespace uvmp

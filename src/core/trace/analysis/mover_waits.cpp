#include "core/trace/analysis/mover_waits.h"

#include <algorithm>
#include <cmath>

namespace uvmp::trace {

LaunchWaits mover_waits(const MoverRecord& record, const MoverRates& rates) {
    const auto seconds_ns = [](uint64_t bytes, double gbps) {
        return gbps > 0 ? static_cast<double>(bytes) / gbps : 0.0; // bytes per GB/s are ns
    };
    LaunchWaits waits;
    std::unordered_map<uint64_t, double> fetched_at, populated_at; // by launch, ns
    std::optional<double> stream_free; // when the stream has run everything queued so far
    std::optional<double> start;
    for (const auto& [launch, batch] : record.batches) {
        if (const auto it = record.kernel_starts.find(launch); it != record.kernel_starts.end())
            start = static_cast<double>(it->second);
        if (!start) continue;
        // Populates are not held by the fence: they run once the stream reaches them.
        const double populated = stream_free.value_or(*start) + seconds_ns(batch.populate_bytes, rates.populate_gbps);
        populated_at[launch] = populated;
        const double begin = std::max(populated, *start);
        const double demand_done =
            begin + seconds_ns(batch.evict_bytes, rates.evict_gbps) + seconds_ns(batch.demand_bytes, rates.fetch_gbps);
        stream_free = demand_done + seconds_ns(batch.prefetch_bytes, rates.fetch_gbps);
        fetched_at[launch] = *stream_free;
        double until = *start;
        if (batch.demand_bytes) until = std::max(until, demand_done);
        if (batch.needs_prefetch_of)
            if (const auto it = fetched_at.find(*batch.needs_prefetch_of); it != fetched_at.end())
                until = std::max(until, it->second);
        if (batch.needs_populate_of)
            if (const auto it = populated_at.find(*batch.needs_populate_of); it != populated_at.end())
                until = std::max(until, it->second);
        if (const double wait = until - *start; wait >= 1) waits[launch] = static_cast<uint64_t>(std::llround(wait));
    }
    return waits;
}

} // namespace uvmp::trace

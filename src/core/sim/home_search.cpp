#include "core/sim/home_search.h"

#include "core/model/chunk_schedule.h"

#include <algorithm>
#include <optional>

namespace uvmp {

SearchedHomes search_host_homes(const trace::Trace& trace, const std::vector<uint64_t>& bounds,
                                const SimConfig& config, const placement::ToleranceSource& tolerance,
                                const placement::Rates& rates, placement::HomeScope scope) {
    // The order alone, with nothing taken: what the prefixes are cut from.
    const placement::HostHomesOutcome none =
        placement::with_host_homes(trace, bounds, config.budget_bytes, tolerance, rates, size_t{0}, scope);
    const std::vector<placement::HomeOrder::Step>& order = none.order;
    const uint64_t total = order.empty() ? 0 : order.back().host_bytes;
    // The shortest prefix holding at least `bytes` of host homes.
    const auto prefix_of = [&](uint64_t bytes) -> size_t {
        const auto it = std::lower_bound(order.begin(), order.end(), bytes,
                                         [](const placement::HomeOrder::Step& s, uint64_t b) { return s.host_bytes < b; });
        return bytes == 0 ? 0 : static_cast<size_t>(it - order.begin()) + 1;
    };

    SearchedHomes best;
    std::optional<double> best_seconds;
    std::vector<size_t> done;
    const auto try_prefix = [&](size_t taken) {
        taken = std::min(taken, order.size());
        if (std::find(done.begin(), done.end(), taken) != done.end()) return;
        done.push_back(taken);
        placement::HostHomesOutcome homes =
            taken == 0 ? none : placement::with_host_homes(trace, bounds, config.budget_bytes, tolerance, rates, taken, scope);
        const ChunkSchedule schedule(homes.trace, config.chunk_bytes);
        SimResult result = simulate(homes.trace, schedule, bounds, config);
        best.tried.push_back({taken, homes.choice.host_bytes, result.step_seconds});
        if (!best_seconds || result.step_seconds < *best_seconds) {
            best_seconds = result.step_seconds;
            best.homes = std::move(homes);
            best.result = std::move(result);
        }
    };
    constexpr uint64_t kParts = 8;
    for (uint64_t part = 0; part <= kParts; ++part) try_prefix(prefix_of(total * part / kParts));
    // Halfway to either neighbour of the best.
    const uint64_t best_bytes = best.homes.choice.host_bytes;
    const uint64_t half = total / (2 * kParts);
    try_prefix(prefix_of(best_bytes > half ? best_bytes - half : 0));
    try_prefix(prefix_of(std::min(total, best_bytes + half)));
    return best;
}

} // namespace uvmp

#include "core/placement/timing_prior.h"

#include "core/trace/analysis/managed_bytes.h"

#include <algorithm>
#include <vector>

namespace uvmp::placement {

TimingPrior TimingPrior::from_trace(const trace::Trace& trace, const TimingPriorConfig& config) {
    return from_launches(trace, config, [](uint64_t) { return true; });
}

TimingPrior TimingPrior::from_launches(const trace::Trace& trace, const TimingPriorConfig& config,
                                       const std::function<bool(uint64_t)>& counted) {
    TimingPrior prior;
    prior.streaming_gbps_ = config.streaming_gbps;
    prior.to_try_.insert(config.kernels_to_try.begin(), config.kernels_to_try.end());
    const trace::ManagedBytes managed(trace);
    std::unordered_map<uint32_t, std::vector<double>> rates;
    for (uint64_t i = 0; i < trace.launches.size(); ++i) {
        const trace::Launch& launch = trace.launches[i];
        if (launch.duration_ns < config.min_duration_ns || !counted(i)) continue;
        const uint64_t bytes = managed.of(launch);
        if (bytes == 0) continue;
        rates[launch.kernel_id].push_back(static_cast<double>(bytes) / static_cast<double>(launch.duration_ns));
    }
    for (auto& [kernel, values] : rates) {
        const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
        std::nth_element(values.begin(), mid, values.end());
        prior.gbps_.emplace(kernel, *mid); // bytes per ns are GB/s
    }
    return prior;
}

Tolerance TimingPrior::verdict(uint32_t kernel_id, uint32_t) const {
    const auto it = gbps_.find(kernel_id);
    if (it == gbps_.end()) return Tolerance::Unknown;
    if (to_try_.contains(kernel_id)) return Tolerance::Tolerant;
    return it->second >= streaming_gbps_ ? Tolerance::Tolerant : Tolerance::Intolerant;
}

size_t TimingPrior::kernels_streaming() const {
    return static_cast<size_t>(std::count_if(gbps_.begin(), gbps_.end(), [&](const auto& k) {
        return k.second >= streaming_gbps_ && !to_try_.contains(k.first);
    }));
}

size_t TimingPrior::kernels_tried() const {
    return static_cast<size_t>(
        std::count_if(gbps_.begin(), gbps_.end(), [&](const auto& k) { return to_try_.contains(k.first); }));
}

std::optional<double> TimingPrior::kernel_gbps(uint32_t kernel_id) const {
    const auto it = gbps_.find(kernel_id);
    if (it == gbps_.end()) return std::nullopt;
    return it->second;
}

} // namespace uvmp::placement

#include "core/placement/remote_trial.h"

#include "core/trace/analysis/launch_kind.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace uvmp::placement {
namespace {

struct HostShare {
    uint32_t id = 0;
    uint64_t bytes = 0; // named by the launch
};

// The host-homed allocations a launch names, each once with the most bytes any
// of its accesses names.
void host_shares_of(const trace::Trace& recording, const trace::Launch& launch,
                    const std::unordered_map<uint32_t, uint64_t>& sizes,
                    const std::function<bool(uint32_t)>& host_homed, std::vector<HostShare>& out) {
    out.clear();
    if (!recording.has_accesses_of(launch)) return;
    for (const trace::Access& access : recording.accesses_of(launch)) {
        const auto size = sizes.find(access.alloc_id);
        if (size == sizes.end() || !host_homed(access.alloc_id)) continue;
        const uint64_t bytes = trace::named_bytes(access, size->second);
        if (bytes == 0) continue;
        const auto seen =
            std::find_if(out.begin(), out.end(), [&](const HostShare& s) { return s.id == access.alloc_id; });
        if (seen == out.end()) out.push_back({access.alloc_id, bytes});
        else seen->bytes = std::max(seen->bytes, bytes);
    }
}

uint64_t bytes_of(const std::vector<HostShare>& shares) {
    uint64_t bytes = 0;
    for (const HostShare& s : shares) bytes += s.bytes;
    return bytes;
}

} // namespace

double trips_of(double past_local_seconds, uint64_t named_bytes, double read_gbps) {
    if (named_bytes == 0 || read_gbps <= 0 || past_local_seconds <= 0) return 0;
    return past_local_seconds / (static_cast<double>(named_bytes) / (read_gbps * 1e9));
}

std::vector<std::optional<double>> trial_step_gbps(const trace::Trace& recording, uint64_t step_begin,
                                                   uint64_t step_end, const std::function<bool(uint32_t)>& host_homed,
                                                   std::span<const uint32_t> kernels, const TimingPriorConfig& config) {
    const auto names_host = [&](const trace::Launch& launch) {
        if (!recording.has_accesses_of(launch)) return false;
        const auto accesses = recording.accesses_of(launch);
        return std::any_of(accesses.begin(), accesses.end(),
                           [&](const trace::Access& a) { return host_homed(a.alloc_id); });
    };
    const TimingPrior prior = TimingPrior::from_launches(recording, config, [&](uint64_t i) {
        return i >= step_begin && i < step_end && !names_host(recording.launches[i]);
    });
    std::vector<std::optional<double>> out;
    out.reserve(kernels.size());
    for (const uint32_t kernel : kernels) out.push_back(prior.kernel_gbps(kernel));
    return out;
}

TrialVerdict judge_remote_trial(const trace::Trace& recording, uint64_t step_begin, uint64_t step_end,
                                const std::function<bool(uint32_t)>& host_homed, const TrialConfig& config) {
    TrialVerdict verdict;
    const uint64_t launches = recording.launches.size();
    step_end = std::min(step_end, launches);
    if (step_begin >= step_end) return verdict;

    const trace::ManagedBytes managed(recording);
    const std::unordered_map<uint32_t, uint64_t>& sizes = managed.sizes();
    std::vector<HostShare> shares;

    // Local times: the least of each kind over launches naming nothing on the
    // host, but for a kind never timed with its data in place.
    const std::unordered_set<trace::LaunchKind, trace::LaunchKindHash> untimed(config.kinds_untimed.begin(),
                                                                               config.kinds_untimed.end());
    std::unordered_map<trace::LaunchKind, uint64_t, trace::LaunchKindHash> local_ns;
    for (uint64_t i = 0; i < launches; ++i) {
        const trace::Launch& launch = recording.launches[i];
        if (launch.duration_ns == 0) continue;
        // Before the homes, an allocation homed on the host since (one made
        // before the learned step) was still on the GPU.
        if (i >= config.homes_from) {
            host_shares_of(recording, launch, sizes, host_homed, shares);
            if (!shares.empty()) continue;
        }
        const trace::LaunchKind kind = trace::kind_of(launch, managed);
        if (untimed.contains(kind)) continue;
        const auto [it, added] = local_ns.emplace(kind, launch.duration_ns);
        if (!added) it->second = std::min(it->second, launch.duration_ns);
    }
    const auto local_of = [&](const trace::LaunchKind& kind) -> std::optional<uint64_t> {
        if (untimed.contains(kind)) {
            if (config.streaming_gbps <= 0) return std::nullopt;
            // Bytes per GB/s are ns.
            return static_cast<uint64_t>(std::ceil(static_cast<double>(kind.bytes) / config.streaming_gbps));
        }
        const auto it = local_ns.find(kind);
        if (it == local_ns.end()) return std::nullopt;
        return it->second;
    };

    // The judged step's remote launches, by kind, with each one's excess.
    struct Remote {
        std::vector<uint64_t> launch_indices;
        double least_excess_seconds = std::numeric_limits<double>::infinity();
        uint64_t named_bytes = 0;
        double past_local_seconds = 0;
    };
    std::unordered_map<trace::LaunchKind, Remote, trace::LaunchKindHash> remote;
    const double trip_bytes_per_second = config.rates.remote_read_gbps * 1e9;
    for (uint64_t i = step_begin; i < step_end; ++i) {
        const trace::Launch& launch = recording.launches[i];
        host_shares_of(recording, launch, sizes, host_homed, shares);
        if (shares.empty()) continue;
        if (launch.duration_ns == 0) {
            ++verdict.launches_untimed;
            continue;
        }
        const trace::LaunchKind kind = trace::kind_of(launch, managed);
        const std::optional<uint64_t> local = local_of(kind);
        if (!local) {
            ++verdict.launches_without_local;
            continue;
        }
        const uint64_t host_bytes = bytes_of(shares);
        const double allowed = static_cast<double>(*local) * 1e-9 +
                               (trip_bytes_per_second > 0 ? config.trips * static_cast<double>(host_bytes) /
                                                                trip_bytes_per_second
                                                          : 0.0);
        Remote& r = remote[kind];
        r.launch_indices.push_back(i);
        const double excess = static_cast<double>(launch.duration_ns) * 1e-9 - allowed;
        r.least_excess_seconds = std::min(r.least_excess_seconds, excess);
        r.named_bytes += host_bytes;
        r.past_local_seconds += (static_cast<double>(launch.duration_ns) - static_cast<double>(*local)) * 1e-9;
        ++verdict.launches_judged;
    }
    verdict.kinds_judged = remote.size();
    for (const auto& [kind, r] : remote)
        verdict.slowest.push_back(
            {kind.kernel, r.launch_indices.front(), r.launch_indices.size(), r.named_bytes, r.past_local_seconds});
    // Longest first, equals by their first launch (each launch is of one kind): an
    // order, and sums, that do not hang on hashing.
    std::sort(verdict.slowest.begin(), verdict.slowest.end(), [](const auto& a, const auto& b) {
        if (a.past_local_seconds != b.past_local_seconds) return a.past_local_seconds > b.past_local_seconds;
        return a.first_launch < b.first_launch;
    });
    for (const TrialVerdict::KindTime& kind : verdict.slowest) {
        verdict.named_bytes += kind.named_bytes;
        verdict.past_local_seconds += kind.past_local_seconds;
    }
    if (verdict.slowest.size() > TrialVerdict::kSlowestKinds) verdict.slowest.resize(TrialVerdict::kSlowestKinds);

    // Each slowed launch's excess falls on the host-homed allocations it names,
    // by the bytes it names of each.
    std::unordered_map<uint32_t, double> excess_by_id;
    std::vector<uint32_t> order;
    for (const auto& [kind, r] : remote) {
        if (r.least_excess_seconds <= 0) continue;
        ++verdict.kinds_slowed;
        for (const uint64_t i : r.launch_indices) {
            host_shares_of(recording, recording.launches[i], sizes, host_homed, shares);
            const uint64_t host_bytes = bytes_of(shares);
            verdict.excess_seconds += r.least_excess_seconds;
            for (const HostShare& s : shares) {
                const auto [it, added] = excess_by_id.emplace(s.id, 0.0);
                if (added) order.push_back(s.id);
                it->second += r.least_excess_seconds * static_cast<double>(s.bytes) / static_cast<double>(host_bytes);
            }
        }
    }
    // Ids grow with the allocations' order: a verdict that does not hang on hashing.
    std::sort(order.begin(), order.end());
    const double evict = config.rates.evict_gbps * 1e9, fetch = config.rates.fetch_gbps * 1e9;
    for (const uint32_t id : order) {
        const double bytes = static_cast<double>(sizes.at(id));
        const double gpu_home_seconds = (evict > 0 ? bytes / evict : 0.0) + (fetch > 0 ? bytes / fetch : 0.0);
        const double excess = excess_by_id.at(id);
        if (excess <= gpu_home_seconds) continue;
        verdict.gpu_again.push_back(id);
        verdict.gpu_again_bytes += sizes.at(id);
        verdict.gpu_again_excess_seconds += excess;
    }
    return verdict;
}

} // namespace uvmp::placement

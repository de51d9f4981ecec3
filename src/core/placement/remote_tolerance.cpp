#include "core/placement/remote_tolerance.h"

#include <algorithm>

namespace uvmp::placement {

uint64_t RemoteTolerance::Durations::median() const {
    const size_t n = std::min<size_t>(count, kKept);
    if (n == 0) return 0;
    std::array<uint64_t, kKept> sorted = ns;
    std::sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(n));
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

void RemoteTolerance::record(uint32_t kernel_id, uint32_t slot, bool remote, uint64_t duration_ns,
                             uint64_t operand_bytes) {
    Samples& s = samples_[key(kernel_id, slot)];
    (remote ? s.remote : s.local).add(duration_ns);
    s.operand_bytes = operand_bytes;
}

Tolerance RemoteTolerance::verdict(uint32_t kernel_id, uint32_t slot) const {
    const auto it = samples_.find(key(kernel_id, slot));
    if (it == samples_.end()) return Tolerance::Unknown;
    const Samples& s = it->second;
    if (s.local.count < config_.min_samples || s.remote.count < config_.min_samples) return Tolerance::Unknown;
    const double trip_ns = config_.remote_read_gbps > 0
                               ? static_cast<double>(s.operand_bytes) / config_.remote_read_gbps // bytes per ns
                               : 0.0;
    const double allowed = static_cast<double>(s.local.median()) + config_.trips * trip_ns;
    return static_cast<double>(s.remote.median()) <= allowed ? Tolerance::Tolerant : Tolerance::Intolerant;
}

} // namespace uvmp::placement

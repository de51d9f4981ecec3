#include "core/placement/host_traffic.h"

#include <algorithm>

namespace uvmp::placement {

void HostTraffic::add(uint32_t id, uint64_t bytes) { allocations_[id] = Held{bytes, false}; }

void HostTraffic::remove(uint32_t id) { allocations_.erase(id); }

void HostTraffic::new_step() {
    for (auto& [id, held] : allocations_) held.named = false;
}

HostTrafficBytes HostTraffic::launch(std::span<const trace::Access> accesses, std::vector<HostTrip>& out) {
    out.clear();
    HostTrafficBytes total;
    if (allocations_.empty()) return total;
    for (const trace::Access& access : accesses) {
        const auto held = allocations_.find(access.alloc_id);
        if (held == allocations_.end()) continue;
        if (std::any_of(out.begin(), out.end(), [&](const HostTrip& t) { return t.alloc_id == access.alloc_id; }))
            continue;
        const uint64_t bytes = trace::named_bytes(access, held->second.bytes);
        const bool writes = !held->second.named;
        held->second.named = true;
        out.push_back({access.alloc_id, bytes, writes});
        (writes ? total.written : total.read) += bytes;
    }
    return total;
}

} // namespace uvmp::placement

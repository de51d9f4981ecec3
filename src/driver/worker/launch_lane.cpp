#include "driver/worker/launch_lane.h"

namespace uvmp::driver {

LaunchLane::LaunchLane(size_t capacity, Handler handler) : ring_(capacity), handler_(std::move(handler)) {}

bool LaunchLane::put(uint64_t seq, uint32_t kernel_id, std::span<const AccessHit> hits, CUevent fence,
                     const LaunchOrigin& origin) {
    return ring_.try_push([&](LaunchRecord& record) {
        record.seq = seq;
        record.fence = fence;
        record.origin = origin;
        record.kernel_id = kernel_id;
        record.count = static_cast<uint32_t>(hits.size());
        for (size_t i = 0; i < hits.size(); ++i) {
            record.alloc_ids[i] = hits[i].alloc_id;
            record.offsets[i] = hits[i].offset;
        }
    });
}

void LaunchLane::drain_until(uint64_t end) {
    ring_.pop_until(end, [this](const LaunchRecord& record) {
        planned_.seq = record.seq;
        planned_.kernel_id = record.kernel_id;
        planned_.fence = record.fence;
        planned_.origin = record.origin;
        planned_.accesses.clear();
        for (uint32_t i = 0; i < record.count; ++i) planned_.accesses.push_back({record.alloc_ids[i], record.offsets[i], 0});
        handler_(planned_);
    });
}

} // namespace uvmp::driver

// demand-lru: what plain demand paging under a budget does.
#include "core/policy/policy.h"

namespace uvmp {
namespace {

class DemandLruPolicy final : public Policy {
public:
    std::string_view name() const override { return "demand-lru"; }
    // It stands for unified memory on its own, which only faults.
    bool fetches_demand() const override { return false; }

    void plan(const LaunchView& launch, Residency& residency, Plan& out) override {
        uint64_t missing_bytes = 0;
        for (const ChunkRange& r : launch.ranges) missing_bytes += residency.missing_bytes(r);

        residency.room_from_dead(missing_bytes);
        ChunkId victim = residency.lru_front();
        while (residency.over_budget(missing_bytes) && victim != kNoChunk) {
            const ChunkId next = residency.lru_next(victim);
            if (!residency.is_pinned(victim)) {
                residency.evict(victim);
                Plan::add(out.evict, victim, residency);
            }
            victim = next;
        }

        for (const ChunkRange& r : launch.ranges)
            residency.use(r, launch.step, [&](ChunkRange run) { Plan::add(out.demand, run, residency); });
    }
};

} // namespace

std::unique_ptr<Policy> make_demand_lru_policy() { return std::make_unique<DemandLruPolicy>(); }

} // namespace uvmp

// demand-lru: what plain demand paging under a budget does.
#include "core/policy.h"

namespace uvmp {
namespace {

class DemandLruPolicy final : public Policy {
public:
    std::string_view name() const override { return "demand-lru"; }
    // It stands for unified memory on its own, which only faults.
    bool fetches_demand() const override { return false; }

    void plan(const LaunchView& launch, Residency& residency, Plan& out) override {
        uint64_t missing_bytes = 0;
        for (ChunkId c : launch.chunks)
            if (!residency.is_resident(c)) missing_bytes += residency.chunk_size(c);

        ChunkId victim = residency.lru_front();
        while (residency.free_bytes() < missing_bytes && victim != kNoChunk) {
            const ChunkId next = residency.lru_next(victim);
            if (!residency.is_pinned(victim)) {
                residency.evict(victim);
                Plan::add(out.evict, victim, residency);
            }
            victim = next;
        }

        for (ChunkId c : launch.chunks) {
            if (!residency.is_resident(c)) {
                residency.make_resident(c, launch.step);
                Plan::add(out.demand, c, residency);
            }
            residency.touch(c, launch.step);
        }
    }
};

} // namespace

std::unique_ptr<Policy> make_demand_lru_policy() { return std::make_unique<DemandLruPolicy>(); }

} // namespace uvmp

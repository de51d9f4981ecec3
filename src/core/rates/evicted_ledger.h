// Which fetches carry data across the link, so that their timings may refine
// the fetch rate. A prefetch moves only pages that are somewhere else: a block
// placed where a freed one left its pages on the GPU, or one whose pages were
// never written, "fetches" at many times the link's rate while moving nothing.
// The model cannot tell those apart (it knows a new block as not resident), but
// the mover knows what it evicted: a fetch no larger than the bytes evicted from
// its allocation, and not fetched back since, finds them on the host.
//
// Not synchronised: the thread that issues the moves owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace uvmp::rates {

class EvictedLedger {
public:
    // Allocations with evicted bytes outstanding kept at most; past it the
    // ledger starts afresh (a bound on memory: an allocation freed while
    // evicted stays in it otherwise). Ids are never reused, so a forgotten
    // entry costs timings, never a wrong one.
    static constexpr size_t kMaxAllocations = 1u << 16;

    void evicted(uint32_t allocation, uint64_t bytes) {
        if (bytes == 0) return;
        if (outstanding_.size() >= kMaxAllocations && !outstanding_.contains(allocation)) outstanding_.clear();
        outstanding_[allocation] += bytes;
    }

    // A fetch of `bytes` of `allocation` is issued: whether all of them were
    // evicted before (and so cross the link). The bytes count as fetched back
    // either way.
    bool fetched(uint32_t allocation, uint64_t bytes) {
        const auto found = outstanding_.find(allocation);
        if (found == outstanding_.end()) return false;
        const bool all_evicted = found->second >= bytes;
        if (all_evicted && found->second > bytes) found->second -= bytes;
        else outstanding_.erase(found);
        return all_evicted;
    }

    size_t allocations() const { return outstanding_.size(); }

private:
    std::unordered_map<uint32_t, uint64_t> outstanding_;
};

} // namespace uvmp::rates

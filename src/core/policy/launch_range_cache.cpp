#include "core/policy/launch_range_cache.h"

#include <algorithm>

namespace uvmp {

void LaunchRangeCache::start(uint64_t layout_version) {
    if (layout_version == layout_version_) return;
    layout_version_ = layout_version;
    ranges_.clear();
    used_ = 0;
    if (++generation_ != 0) return;
    // Generations wrapped around: the oldest slots would look filled.
    std::fill(slots_.begin(), slots_.end(), Slot{});
    generation_ = 1;
}

LaunchRangeCache::Slot& LaunchRangeCache::probe(uint64_t key) {
    // Keys are hashes already: their low bits pick the slot.
    const size_t mask = slots_.size() - 1;
    for (size_t at = key & mask;; at = (at + 1) & mask) {
        Slot& slot = slots_[at];
        if (slot.generation != generation_ || slot.key == key) return slot;
    }
}

void LaunchRangeCache::grow() {
    std::vector<Slot> old(std::max<size_t>(64, 2 * slots_.size()));
    old.swap(slots_);
    for (const Slot& slot : old)
        if (slot.generation == generation_) probe(slot.key) = slot;
}

std::optional<std::span<const ChunkRange>> LaunchRangeCache::find(uint64_t key, uint64_t layout_version) {
    start(layout_version);
    if (slots_.empty()) return std::nullopt;
    const Slot& slot = probe(key);
    if (slot.generation != generation_) return std::nullopt;
    return std::span<const ChunkRange>(ranges_.data() + slot.first, slot.count);
}

std::span<const ChunkRange> LaunchRangeCache::store(uint64_t key, uint64_t layout_version,
                                                    std::span<const ChunkRange> ranges) {
    start(layout_version);
    // At most half full, so that probes stay short.
    if (2 * (used_ + 1) > slots_.size()) grow();
    Slot& slot = probe(key);
    if (slot.generation != generation_) ++used_;
    slot = {key, generation_, static_cast<uint32_t>(ranges.size()), ranges_.size()};
    ranges_.insert(ranges_.end(), ranges.begin(), ranges.end());
    return {ranges_.data() + slot.first, slot.count};
}

} // namespace uvmp

#include "core/sim/replaced_blocks.h"

#include "core/util/round_up.h"

#include <stdexcept>

namespace uvmp::sim {

std::optional<uint64_t> ReplacedBlocks::Slabs::create(uint64_t bytes) {
    const uint64_t base = next_;
    next_ = round_up(next_ + bytes, alignment_);
    return base;
}

namespace {
pool::PoolConfig config_for(uint64_t slab_bytes, uint64_t chunk_bytes) {
    pool::PoolConfig config;
    config.slab_bytes = slab_bytes;
    config.chunk_bytes = chunk_bytes;
    return config;
}
} // namespace

ReplacedBlocks::ReplacedBlocks(uint64_t slab_bytes, uint64_t chunk_bytes,
                               std::shared_ptr<const pool::PlacementHint> hint)
    : slabs_(chunk_bytes), book_(config_for(slab_bytes, chunk_bytes), slabs_, fences_) {
    book_.set_placement_hint(std::move(hint));
}

uint64_t ReplacedBlocks::allocate(uint32_t alloc_id, uint64_t size, std::vector<pool::SlabEvent>& released) {
    if (size == 0) return 0; // holds no byte: anywhere will do
    const auto block = book_.allocate(size, pool::kNoStream, 0, 0, &released);
    // Slabs of this pool are never refused.
    if (!block) throw std::logic_error("ReplacedBlocks: the simulated pool refused a block");
    address_of_[alloc_id] = block->address;
    return block->address;
}

uint64_t ReplacedBlocks::free(uint32_t alloc_id, std::vector<pool::SlabEvent>& released) {
    const auto it = address_of_.find(alloc_id);
    if (it == address_of_.end()) return 0;
    const uint64_t address = it->second;
    address_of_.erase(it);
    book_.free(address, pool::kNoStream, 0, 0, &released);
    return address;
}

} // namespace uvmp::sim

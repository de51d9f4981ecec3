// The blocks the managed pool has handed out: carved from free pieces, found
// by address, given back on free (ready at once, or pending on the freeing
// stream's fence), and counted per tag (the CUDA memory pool asked) and in all.
#pragma once

#include "core/util/flat_map.h"
#include "core/pool/free_ranges.h"
#include "core/pool/pending_frees.h"
#include "core/pool/pool_pieces.h"
#include "core/pool/slab_set.h"

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace uvmp::pool {

class LiveBlocks {
public:
    LiveBlocks(SlabSet& slabs, FreeRanges& free, PendingFrees& pending)
        : slabs_(slabs), free_(free), pending_(pending) {}

    // The block [start, start + size) of free piece `s` (which holds it there).
    Block carve(Piece* s, uint64_t start, uint64_t size, PoolTag tag);
    // Frees the live block at `address` (see PoolBook::free): its size.
    std::optional<uint64_t> release(uint64_t address, StreamKey stream, FenceKey fence, uint64_t now);
    // The live block containing `address`.
    std::optional<Block> find(uint64_t address) const;

    // Of `tag`; nullptr when it never had a block.
    const TagUsage* usage(PoolTag tag) const {
        auto it = tags_.find(tag);
        return it == tags_.end() ? nullptr : &it->second;
    }
    void reset_used_high(PoolTag tag) {
        if (auto it = tags_.find(tag); it != tags_.end()) it->second.high = it->second.used;
    }
    // Of every tag together.
    uint64_t used() const { return used_; }
    uint64_t used_high() const { return used_high_; }
    uint64_t blocks() const { return blocks_; }

private:
    SlabSet& slabs_;
    FreeRanges& free_;
    PendingFrees& pending_;
    FlatMap<Piece*> live_; // by address
    std::unordered_map<PoolTag, TagUsage> tags_;
    // Most allocations in a row are of one tag: its usage without a lookup.
    PoolTag last_tag_ = 0;
    TagUsage* last_usage_ = nullptr;
    uint64_t used_ = 0, used_high_ = 0, blocks_ = 0;
};

} // namespace uvmp::pool

// The pool's blocks of a recorded trace placed anew, by the pool the library
// uses (core/pool/pool_book.h) with a placement hint: what the library does
// under a budget, where its blocks go over dead bytes still on the GPU. The
// recorded addresses came from a run whose placement knew nothing of them (or
// of the simulated policy's evictions), so replaying them would predict another
// library. The simulated pool has no streams (every free is ready at once); it
// gives a slab back where the library's would once GPU room is short (as soon as
// the slab is wholly free), and says so; its address space lies apart from the
// recorded one.
#pragma once

#include "core/pool/placement_hint.h"
#include "core/pool/pool_book.h"

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace uvmp::sim {

class ReplacedBlocks {
public:
    ReplacedBlocks(uint64_t slab_bytes, uint64_t chunk_bytes, std::shared_ptr<const pool::PlacementHint> hint);
    ReplacedBlocks(const ReplacedBlocks&) = delete;
    ReplacedBlocks& operator=(const ReplacedBlocks&) = delete;

    // Where the block of allocation `alloc_id` (of `size` bytes) goes. Slabs
    // given back meanwhile are added to `released`.
    uint64_t allocate(uint32_t alloc_id, uint64_t size, std::vector<pool::SlabEvent>& released);
    // Frees the allocation's block: its address, or 0 when it has none. Slabs
    // given back by the free are added to `released`.
    uint64_t free(uint32_t alloc_id, std::vector<pool::SlabEvent>& released);

private:
    class Slabs final : public pool::SlabSource {
    public:
        explicit Slabs(uint64_t alignment) : alignment_(alignment) {}
        std::optional<uint64_t> create(uint64_t bytes) override;
        void release(uint64_t, uint64_t) override {}

    private:
        uint64_t alignment_;
        uint64_t next_ = uint64_t{1} << 46;
    };
    class NoFences final : public pool::FenceOracle {
    public:
        bool completed(pool::FenceKey) override { return true; }
        void wait(pool::FenceKey) override {}
        void destroy(pool::FenceKey) override {}
    };

    Slabs slabs_;
    NoFences fences_;
    pool::PoolBook book_;
    std::unordered_map<uint32_t, uint64_t> address_of_;
};

} // namespace uvmp::sim

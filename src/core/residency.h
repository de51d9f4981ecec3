// Where each chunk of every managed allocation lives: on the GPU or not, when it
// was last used, and whether a running kernel holds it. Policies read and update
// it; the executor (online) or the simulator (offline) carries out the moves.
//
// Chunks of all allocations share one index space ("chunk ids"): an allocation
// gets a contiguous run of ids when it is added, so per-chunk state lives in flat
// vectors and adjacent ids of one allocation are adjacent bytes. Ids of removed
// allocations are not reused.
#pragma once

#include "core/large_pages.h"
#include "core/trace_model.h"

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace uvmp {

inline constexpr uint64_t kDefaultChunkBytes = 2ull << 20;

using ChunkId = uint32_t;
inline constexpr ChunkId kNoChunk = UINT32_MAX;

// Chunks first..last, both included.
struct ChunkRange {
    ChunkId first = 0;
    ChunkId last = 0;
};

class Residency {
public:
    // chunk_bytes must be a non-zero power of two (std::invalid_argument otherwise).
    explicit Residency(uint64_t budget_bytes, uint64_t chunk_bytes = kDefaultChunkBytes);

    uint64_t chunk_bytes() const { return chunk_bytes_; }
    uint64_t budget_bytes() const { return budget_bytes_; }
    void set_budget_bytes(uint64_t budget) { budget_bytes_ = budget; }

    // A new allocation starts with no chunk resident. Adding an id that was
    // already added throws std::invalid_argument.
    void add_allocation(uint32_t alloc_id, uint64_t size_bytes);
    // Drops the allocation's chunks from the GPU without moving them (the memory
    // is gone). False when the id is unknown or already removed.
    bool remove_allocation(uint32_t alloc_id);
    bool is_live(uint32_t alloc_id) const;
    // Changes whenever an allocation is added or removed: the chunks of an access
    // may have changed since a caller last looked.
    uint64_t layout_version() const { return layout_version_; }
    // kNoChunk / 0 for unknown ids.
    ChunkId first_chunk(uint32_t alloc_id) const;
    uint32_t chunk_count(uint32_t alloc_id) const;

    // Appends the ids of the chunks an access touches (length 0: to the end of
    // the allocation). Accesses to unknown or removed allocations add nothing.
    void append_chunks(const trace::Access& access, std::vector<ChunkId>& out) const;
    // Appends the chunks that a launch's accesses touch, in ascending order, each once.
    // Each access covers one range of chunks, so the ranges are merged, not the chunks
    // sorted: a launch names a few tensors of many chunks each.
    // `ranges` is the caller's scratch: its contents are replaced.
    void append_launch_chunks(std::span<const trace::Access> accesses, std::vector<ChunkRange>& ranges,
                              std::vector<ChunkId>& out) const;
    // The same chunks as ranges, replacing what `out` held: ascending, none
    // overlapping or adjacent to the next.
    void launch_ranges(std::span<const trace::Access> accesses, std::vector<ChunkRange>& out) const;

    // Room for this many chunk ids in all, so that adding allocations up to it
    // does not copy the per-chunk state (the simulator knows the total ahead).
    void reserve_chunk_slots(uint32_t slots) { chunks_.reserve(slots); }

    // Every chunk id ever handed out is below chunk_slots().
    uint32_t chunk_slots() const { return static_cast<uint32_t>(chunks_.size()); }
    uint32_t alloc_id_of(ChunkId chunk) const { return allocs_[chunks_[chunk].alloc_slot].id; }
    uint64_t chunk_offset(ChunkId chunk) const;
    // The last chunk of an allocation may be shorter than chunk_bytes().
    uint64_t chunk_size(ChunkId chunk) const;
    bool is_chunk_live(ChunkId chunk) const { return chunks_[chunk].live; }

    bool is_resident(ChunkId chunk) const { return chunks_[chunk].resident; }
    // Counts the chunk against the budget; going over it is allowed (a launch
    // that alone exceeds the budget) but shows in peak_resident_bytes().
    void make_resident(ChunkId chunk, uint64_t step);
    void evict(ChunkId chunk);
    // Marks a use at `step` (the launch index) and makes it most recently used.
    void touch(ChunkId chunk, uint64_t step);
    uint64_t last_use(ChunkId chunk) const { return chunks_[chunk].last_use; }

    // A pinned chunk is needed by a kernel that is about to run or running:
    // no policy may evict it.
    void pin(ChunkId chunk) { ++chunks_[chunk].pins; }
    void unpin(ChunkId chunk);
    bool is_pinned(ChunkId chunk) const { return chunks_[chunk].pins != 0; }

    uint64_t resident_bytes() const { return resident_bytes_; }
    uint64_t free_bytes() const { return resident_bytes_ >= budget_bytes_ ? 0 : budget_bytes_ - resident_bytes_; }
    uint64_t peak_resident_bytes() const { return peak_resident_bytes_; }
    uint64_t resident_chunk_count() const { return resident_chunks_; }

    // Resident chunks from least to most recently used.
    ChunkId lru_front() const { return lru_head_; }
    ChunkId lru_next(ChunkId chunk) const { return chunks_[chunk].next; }

private:
    struct AllocSlot {
        uint32_t id = 0;
        ChunkId first = 0;
        uint32_t count = 0;
        uint64_t size = 0;
        bool live = true;
    };
    struct ChunkState {
        uint64_t last_use = 0;
        uint32_t alloc_slot = 0;
        ChunkId prev = kNoChunk;
        ChunkId next = kNoChunk;
        uint16_t pins = 0;
        bool resident = false;
        // The allocation's, kept per chunk: looking ahead asks for every chunk.
        bool live = true;
    };

    void lru_unlink(ChunkId chunk);
    void lru_push_back(ChunkId chunk);
    // Where the allocation's slot is in allocs_; nullopt for an unknown id.
    std::optional<uint32_t> slot_index(uint32_t alloc_id) const;
    const AllocSlot* find(uint32_t alloc_id) const;
    // The chunks one access touches; nullopt for an unknown or removed allocation.
    std::optional<ChunkRange> access_range(const trace::Access& access) const;

    uint64_t budget_bytes_;
    uint64_t chunk_bytes_;
    unsigned chunk_shift_ = 0;
    uint64_t resident_bytes_ = 0;
    uint64_t peak_resident_bytes_ = 0;
    uint64_t resident_chunks_ = 0;
    uint64_t layout_version_ = 0;
    std::vector<AllocSlot> allocs_;
    // Allocation ids are handed out in sequence: a table finds the small ones
    // (slot + 1, 0 for none), a hash map any others.
    static constexpr uint32_t kDenseIds = 1u << 22;
    std::vector<uint32_t> slot_by_id_;
    std::unordered_map<uint32_t, uint32_t> slot_of_sparse_id_;
    LargeVector<ChunkState> chunks_;
    ChunkId lru_head_ = kNoChunk;
    ChunkId lru_tail_ = kNoChunk;
};

} // namespace uvmp

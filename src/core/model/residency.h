// Where each chunk of every managed allocation lives: on the GPU or not, when it
// was last used, and whether a running kernel holds it. Policies read and update
// it; the executor (online) or the simulator (offline) carries out the moves.
//
// Chunks of all allocations share one index space ("chunk ids"): an allocation
// gets a contiguous run of ids when it is added, so per-chunk state lives in flat
// vectors and adjacent ids of one allocation are adjacent bytes.
//
// Ids of removed allocations are reused when asked for (ChunkIds::Reused): a
// job that frees memory and allocates it anew every step would otherwise grow
// the per-chunk state, here and in the policies, with all the memory it ever
// allocated rather than with what is live at once. An allocation then takes the
// smallest run of free ids that holds it (the lowest of equal ones), else new
// ids. The library and the simulator (through its chunk schedule) reuse them.
#pragma once

#include "core/util/bit_words.h"
#include "core/util/large_pages.h"
#include "core/trace/format/model.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <unordered_set>
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

// Room that dead bytes hold (core/model/reuse_in_place.h keeps them): given up
// when something live needs it, each dead byte evicted, before any live one.
class DeadRoom {
public:
    virtual ~DeadRoom() = default;
    // Gives up at least `bytes` of dead memory, as far as there is; returns the
    // bytes given up. Called whenever room is wanted past the budget, dead bytes
    // held or not.
    virtual uint64_t give_up(uint64_t bytes) = 0;
};

// How an allocation gets its chunk ids: new ones every time; a removed
// allocation's where they fit (see above); or ids the caller names, which a
// chunk schedule worked out by replaying the same allocations with Reused.
enum class ChunkIds : uint8_t { NeverReused, Reused, Given };

class Residency {
public:
    // chunk_bytes must be a non-zero power of two (std::invalid_argument otherwise).
    explicit Residency(uint64_t budget_bytes, uint64_t chunk_bytes = kDefaultChunkBytes,
                       ChunkIds ids = ChunkIds::NeverReused);

    uint64_t chunk_bytes() const { return chunk_bytes_; }
    ChunkIds chunk_ids() const { return ids_; }
    uint64_t budget_bytes() const { return budget_bytes_; }
    void set_budget_bytes(uint64_t budget) { budget_bytes_ = budget; }

    // A new allocation starts with no chunk resident, unpinned, never used. Adding
    // an id that was already added (removed since or not) throws
    // std::invalid_argument. Returns its chunks (nullopt when it has none): a
    // policy told of them forgets what it knew of those ids when they are reused
    // (Policy::on_allocation_added).
    // With ChunkIds::Given, `first` names its first chunk id: the ids must not
    // be a live allocation's (std::invalid_argument otherwise, and when `first`
    // is missing or given with another choice of ids).
    std::optional<ChunkRange> add_allocation(uint32_t alloc_id, uint64_t size_bytes, ChunkId first = kNoChunk);
    // Drops the allocation's chunks from the GPU without moving them (the memory
    // is gone). False when the id is unknown or already removed.
    bool remove_allocation(uint32_t alloc_id);
    bool is_live(uint32_t alloc_id) const;
    // Added once and removed since.
    bool was_removed(uint32_t alloc_id) const;
    // Changes whenever an allocation is added or removed: the chunks of an access
    // may have changed since a caller last looked.
    uint64_t layout_version() const { return layout_version_; }
    // kNoChunk / 0 for ids that are not live.
    ChunkId first_chunk(uint32_t alloc_id) const;
    uint32_t chunk_count(uint32_t alloc_id) const;
    // All of a live allocation's chunks; nullopt where it has none.
    std::optional<ChunkRange> chunks_of(uint32_t alloc_id) const;

    // The chunks that a launch's accesses touch (length 0: to the end of the
    // allocation), as ranges replacing what `out` held: ascending, none
    // overlapping or adjacent to the next. Accesses to unknown or removed
    // allocations add nothing. Each access covers one range of chunks, so the
    // ranges are merged, not the chunks sorted: a launch names a few tensors of
    // many chunks each.
    // `not_live`, when given, counts the accesses naming an allocation that is
    // unknown or removed.
    void launch_ranges(std::span<const trace::Access> accesses, std::vector<ChunkRange>& out,
                       uint64_t* not_live = nullptr) const;

    // Room for this many chunk ids in all, so that adding allocations up to it
    // does not copy the per-chunk state (the simulator knows the total ahead).
    void reserve_chunk_slots(uint32_t slots);

    // Every chunk id ever handed out is below chunk_slots().
    uint32_t chunk_slots() const { return static_cast<uint32_t>(live_.size()); }
    // Ids of removed allocations not handed out again (always 0 without reuse).
    uint64_t free_chunk_ids() const { return free_id_count_; }
    // UINT32_MAX for a chunk of a removed allocation.
    uint32_t alloc_id_of(ChunkId chunk) const { return allocs_[alloc_slot_[chunk]].id; }
    bool same_allocation(ChunkId a, ChunkId b) const { return alloc_slot_[a] == alloc_slot_[b]; }
    // The last chunk of the allocation holding `chunk` (the chunk itself when
    // its allocation was removed).
    ChunkId allocation_last_chunk(ChunkId chunk) const {
        const AllocSlot& slot = allocs_[alloc_slot_[chunk]];
        return slot.count ? slot.first + slot.count - 1 : chunk;
    }
    uint64_t chunk_offset(ChunkId chunk) const;
    // The last chunk of an allocation may be shorter than chunk_bytes().
    uint64_t chunk_size(ChunkId chunk) const;
    bool is_chunk_live(ChunkId chunk) const { return live_[chunk] != 0; }

    bool is_resident(ChunkId chunk) const { return (resident_bits_[chunk >> 6] >> (chunk & 63)) & 1; }
    // The first chunk of the range that is not resident or not handed out yet;
    // range.last + 1 when there is none. Looking ahead skips what is resident
    // 64 chunks at a time.
    ChunkId first_missing(ChunkRange range) const;
    // The first resident chunk of the range; range.last + 1 when there is none.
    ChunkId first_resident(ChunkRange range) const;
    // Bytes of the range's chunks, all of them (it may span allocations).
    uint64_t bytes_of(ChunkRange range) const;
    // Counts the chunk against the budget; going over it is allowed (a launch
    // that alone exceeds the budget) but shows in peak_held_bytes().
    void make_resident(ChunkId chunk, uint64_t step);
    void evict(ChunkId chunk);
    // The same for every chunk of the range, in ascending order. A run fetched or
    // evicted together is linked as one in the recency list and moves as one.
    void make_resident(ChunkRange range, uint64_t step);
    void evict(ChunkRange range);
    // Marks a use at `step` (the launch index) and makes it most recently used.
    void touch(ChunkId chunk, uint64_t step);
    uint64_t last_use(ChunkId chunk) const { return last_use_[chunk]; }
    // Bytes of the range's chunks that are not resident.
    uint64_t missing_bytes(ChunkRange range) const;
    // Makes the range's chunks resident, calling `fetched(run)` for the runs of
    // those that were not, and touches them, in ascending order: the same as
    // make_resident and touch chunk by chunk. A tensor used again is mostly still
    // one run of the recency list, which then moves to its end in one step.
    template <class Fetched>
    void use(ChunkRange range, uint64_t step, Fetched&& fetched);

    // A pinned chunk is needed by the launch being planned: no policy may
    // evict it. pin_launch pins the ranges' chunks until unpin_launch. A launch
    // names hundreds of chunks: pinning marks each once, and unpinning
    // touches none of them (the marks of an earlier launch no longer count).
    void pin_launch(std::span<const ChunkRange> ranges);
    void unpin_launch();
    bool is_pinned(ChunkId chunk) const { return pinned_mark_[chunk] == pin_mark_; }

    // Resident bytes of live allocations.
    uint64_t resident_bytes() const { return resident_bytes_; }
    // Bytes on the GPU that no live allocation holds: what freed blocks of the
    // pool left there (core/model/reuse_in_place.h keeps the figure). They take
    // the GPU's memory as much as live ones, so the budget counts them: a budget
    // stands for a GPU of that size only if everything the job leaves on the GPU
    // fits in it.
    uint64_t dead_bytes() const { return dead_bytes_; }
    void set_dead_bytes(uint64_t bytes);
    // What the job holds of the GPU: live resident and dead bytes.
    uint64_t held_bytes() const { return resident_bytes_ + dead_bytes_; }
    // Where dead bytes are given up (nullptr: nowhere; they then stay until reused).
    void set_dead_room(DeadRoom* room) { dead_room_ = room; }
    // Whether `bytes` more fit the budget once dead bytes are given up for them,
    // as far as they go. Policies call it before they evict anything live.
    bool room_from_dead(uint64_t bytes) {
        if (!over_budget(bytes)) return true;
        // Asked even with no dead bytes held: it learns that the budget binds.
        if (dead_room_) dead_room_->give_up(held_bytes() + bytes - budget_bytes_);
        return !over_budget(bytes);
    }
    uint64_t free_bytes() const { return held_bytes() >= budget_bytes_ ? 0 : budget_bytes_ - held_bytes(); }
    // Whether `bytes` more would exceed the budget, counting what already exceeds
    // it (a launch whose own chunks do not fit leaves it exceeded until a later
    // plan makes room).
    bool over_budget(uint64_t bytes) const { return held_bytes() + bytes > budget_bytes_; }
    // The most held at once.
    uint64_t peak_held_bytes() const { return peak_held_bytes_; }
    uint64_t resident_chunk_count() const { return resident_chunks_; }

    // Whether the recency list below is kept (the default). A policy that never
    // reads it turns it off, while nothing is resident: keeping it costs list
    // operations for every chunk touched, fetched or evicted.
    void keep_recency_order(bool keep);
    bool keeps_recency_order() const { return keep_recency_; }
    // Resident chunks from least to most recently used (none when the order is not kept).
    ChunkId lru_front() const { return lru_head_; }
    ChunkId lru_next(ChunkId chunk) const { return links_[chunk].next; }

private:
    struct AllocSlot {
        uint32_t id = 0;
        ChunkId first = 0;
        uint32_t count = 0;
        uint64_t size = 0;
    };
    // Per-chunk state, one array per field: the loops over a launch's ranges
    // read and write one field of many adjacent chunks.
    struct Link {
        ChunkId prev = kNoChunk;
        ChunkId next = kNoChunk;
    };

    void lru_unlink(ChunkId chunk);
    void lru_push_back(ChunkId chunk);
    // Moves first..last, resident and linked in this order, to the end of the recency list.
    void lru_move_run_to_back(ChunkRange range);
    // Takes such a run out of the list.
    void lru_unlink_run(ChunkRange range);
    // Links such a run, not in the list, at its end.
    void lru_append_run(ChunkRange range);
    void set_resident_bit(ChunkId chunk, bool resident) {
        const uint64_t bit = uint64_t{1} << (chunk & 63);
        resident_bits_[chunk >> 6] = resident ? resident_bits_[chunk >> 6] | bit : resident_bits_[chunk >> 6] & ~bit;
    }
    // Makes resident a range none of whose chunks is, with their last use set already.
    void add_missing_run(ChunkRange range);
    void set_resident_bits(ChunkRange range, bool resident) {
        for_bit_words(resident_bits_.data(), range.first, range.last,
                      [resident](uint64_t& word, uint64_t mask) { word = resident ? word | mask : word & ~mask; });
    }
    // The first chunk of the range, among those handed out, whose residency bit
    // differs from the bits of `flip`'s; the end of that when there is none.
    uint64_t scan_bits(ChunkRange range, uint64_t flip) const;
    // The last chunk of the run of the recency list that starts at `first`, linked
    // in ascending order, within range.last.
    ChunkId lru_run_end(ChunkId first, ChunkId last) const;
    // The first of `count` free ids taken for a new allocation, kNoChunk when no
    // free run is long enough; and the ids of a removed one given back.
    ChunkId take_free_ids(uint32_t count);
    void give_back_ids(ChunkId first, uint32_t count);
    void add_free_run(ChunkId first, uint32_t length);
    void drop_free_run(std::map<ChunkId, uint32_t>::iterator run);
    // Where the allocation's slot is in allocs_; nullopt for an id that is not
    // live. Inline for the ids in the table: a launch's accesses look each one up.
    std::optional<uint32_t> slot_index(uint32_t alloc_id) const {
        if (alloc_id < slot_by_id_.size()) {
            const uint32_t slot = slot_by_id_[alloc_id];
            return slot ? std::optional<uint32_t>(slot - 1) : std::nullopt;
        }
        return sparse_slot_index(alloc_id);
    }
    std::optional<uint32_t> sparse_slot_index(uint32_t alloc_id) const;
    void remember_removed(uint32_t alloc_id);
    const AllocSlot* find(uint32_t alloc_id) const {
        const auto index = slot_index(alloc_id);
        return index ? &allocs_[*index] : nullptr;
    }

    uint64_t budget_bytes_;
    uint64_t chunk_bytes_;

    unsigned chunk_shift_ = 0;
    uint64_t resident_bytes_ = 0;
    uint64_t dead_bytes_ = 0;
    DeadRoom* dead_room_ = nullptr;
    uint64_t peak_held_bytes_ = 0;
    uint64_t resident_chunks_ = 0;
    uint64_t layout_version_ = 0;
    // Slots of live allocations. A removed allocation's slot is handed to a later
    // one; its chunks name kRemovedSlot until their ids are reused, a slot of
    // size 0 that keeps reads of them harmless.
    static constexpr uint32_t kRemovedSlot = 0;
    std::vector<AllocSlot> allocs_;
    std::vector<uint32_t> free_slots_;
    // Allocation ids are handed out in sequence: a table finds the small ones
    // (slot + 1, 0 for none), a hash map any others. Removed ids are bits.
    static constexpr uint32_t kDenseIds = 1u << 22;
    static constexpr uint32_t kDenseRemovedIds = 1u << 28;
    std::vector<uint32_t> slot_by_id_;
    std::unordered_map<uint32_t, uint32_t> slot_of_sparse_id_;
    std::vector<uint64_t> removed_bits_;
    std::unordered_set<uint32_t> removed_sparse_ids_;
    LargeVector<uint64_t> last_use_;
    LargeVector<uint32_t> alloc_slot_;
    LargeVector<Link> links_;
    // Per chunk the mark of the launch that pinned it last; pin_mark_ is the
    // current launch's (never 0, the mark of chunks never pinned). Sixteen bits:
    // a launch's marks are written eight at a time, and wrapping around, which
    // clears them all, comes once in 65 535 launches.
    LargeVector<uint16_t> pinned_mark_;
    uint16_t pin_mark_ = 1;
    LargeVector<uint8_t> live_; // the allocation's, kept per chunk: looking ahead asks for every chunk
    std::vector<uint64_t> resident_bits_;
    ChunkId lru_head_ = kNoChunk;
    ChunkId lru_tail_ = kNoChunk;
    bool keep_recency_ = true;
    // Reuse of ids, touched only when allocations come and go: kept apart from
    // the fields every launch reads.
    ChunkIds ids_;
    // Runs of free ids by first id (adjacent runs are joined), and the same by length.
    std::map<ChunkId, uint32_t> free_runs_;
    std::set<std::pair<uint32_t, ChunkId>> free_runs_by_length_;
    // The tree nodes of dropped runs, for the next ones: a job that allocates anew
    // every step adds and drops runs all the time.
    std::vector<std::map<ChunkId, uint32_t>::node_type> spare_run_nodes_;
    std::vector<std::set<std::pair<uint32_t, ChunkId>>::node_type> spare_length_nodes_;
    uint64_t free_id_count_ = 0;
};

template <class Fetched>
void Residency::use(ChunkRange range, uint64_t step, Fetched&& fetched) {
    std::fill(last_use_.begin() + range.first, last_use_.begin() + range.last + 1, step);
    // Without the recency list, resident chunks need nothing: skip them 64 at a time.
    for (ChunkId c = keep_recency_ ? range.first : first_missing(range); c <= range.last;) {
        if (!is_resident(c)) {
            // Linked at the end of the list, where touching each would leave them.
            const ChunkRange missing{c, first_resident({c, range.last}) - 1};
            add_missing_run(missing);
            fetched(missing);
            c = missing.last + 1;
        } else if (keep_recency_) {
            // Chunks linked in ascending order are resident (the list holds no others)
            // and move together: the end of the list is where touching each would leave them.
            const ChunkId end = lru_run_end(c, range.last);
            lru_move_run_to_back({c, end});
            c = end + 1;
        } else {
            c = first_missing({c, range.last});
        }
    }
}

} // namespace uvmp

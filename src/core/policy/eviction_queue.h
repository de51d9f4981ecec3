// The eviction candidates of the look-ahead policies: chunks by eviction key.
// The top is the largest key, among equal keys the largest chunk id.
//
// A launch touches tensors of many adjacent chunks, and all chunks of a tensor
// get the same key at once: the heap holds blocks, runs of chunks set to one
// key by one call, so a tensor of fifty chunks costs one heap entry and not
// fifty. A chunk set again leaves its block, which keeps its range and ranks by
// its highest chunk id as it was; the range is narrowed to the block's highest
// remaining member when the block reaches the top, so the order stays that of
// single chunks.
//
// Keys at or above `ordered_from` (the policy's choice) are kept apart in a
// sorted run, for keys that arrive in bulk or in order: a policy that ranks
// chunks it knows nothing about by recency raises many of them at once and
// pushes the ones just used at the far end. There taking the top is O(1) and
// a batch is merged in once, where the heap would move every entry through
// all of its levels. The blocks live in a 4-ary indexed max-heap.
#pragma once

#include "core/model/residency.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <vector>

namespace uvmp {

class EvictionQueue {
public:
    struct Entry {
        uint64_t key = 0;
        ChunkId chunk = kNoChunk;
    };

    explicit EvictionQueue(uint64_t ordered_from = std::numeric_limits<uint64_t>::max())
        : ordered_from_(ordered_from) {}

    bool empty() const { return size() == 0; }
    // Chunks in the queue.
    size_t size() const { return heap_chunks_ + run_live_; }
    bool contains(ChunkId chunk) const { return chunk < member_of_.size() && member_of_[chunk] != kAbsent; }
    // The top entry. Undefined when empty.
    Entry top();

    // Inserts the chunk, or moves it to its new key.
    void set(ChunkId chunk, uint64_t key) { set_range(chunk, chunk, key); }
    // The same for chunks first..last (first <= last), all to one key.
    void set_range(ChunkId first, ChunkId last, uint64_t key);
    // How many entries, from the top on, are the chunks top.chunk, top.chunk - 1,
    // ... with the top's key, one after another in the queue's order (at least
    // 1, at most `most`; 0 when empty). A victim is mostly the highest chunk of a
    // tensor whose other chunks come right after it. It may count fewer than
    // there are (the run stops at a chunk set apart from its block), never more.
    uint32_t top_run_length(uint32_t most) { return empty() ? 0 : top_run_length(top(), most); }
    // The same, given what top() returned, with no change to the queue since (it
    // is not settled again).
    uint32_t top_run_length(Entry top, uint32_t most);
    // False when the chunk was not in the queue.
    bool erase(ChunkId chunk);
    // Erases those of first..last that are in the queue.
    void erase(ChunkRange range);
    // Erases those of first..last that have keys at or above `ordered_from`
    // (in the run, where leaving costs one mark a chunk).
    void erase_ordered(ChunkRange range);
    void clear();
    // Replaces the contents at once (O(n log n) at worst); a chunk listed twice keeps its last key.
    void assign(const std::vector<Entry>& entries);

private:
    static constexpr uint32_t kAbsent = UINT32_MAX;
    static constexpr uint32_t kInRun = UINT32_MAX - 1;
    // Four children a node: half the depth of a binary heap, so fewer entries
    // move (each move also updates the moved block's slot).
    static constexpr size_t kArity = 4;

    // Chunks first..last set to `key` by one call, of which `live` are still
    // members (member_of_ names the block); `last` is an upper bound of the
    // highest member until the block reaches the top.
    struct Block {
        uint64_t key;
        ChunkId first;
        ChunkId last;
        uint32_t live;
        uint32_t slot; // in the heap
    };
    // The heap orders blocks by their key and highest chunk, copied here so
    // that comparing two reads the heap alone.
    struct HeapEntry {
        uint64_t key;
        ChunkId last;
        uint32_t block;
    };
    static constexpr size_t kLine = kArity * sizeof(HeapEntry);
    // The root sits at slot kFirst, so that the children of every node fill one
    // cache line: a step down reads one line, not two.
    static constexpr size_t kFirst = kArity - 1;
    static_assert(kLine == 64, "a node's children are meant to fill one cache line");

    template <class T>
    struct LineAllocator {
        using value_type = T;
        LineAllocator() = default;
        template <class U>
        LineAllocator(const LineAllocator<U>&) {}
        T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kLine})); }
        void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t{kLine}); }
        bool operator==(const LineAllocator&) const { return true; }
    };

    // An entry of the run. Leaving the run only marks the chunk; its entry is
    // dropped when met, recognised by a stamp that no longer matches.
    struct RunEntry {
        uint64_t key;
        ChunkId chunk;
        uint32_t stamp;
    };

    static size_t parent_of(size_t slot) { return (slot - kFirst - 1) / kArity + kFirst; }
    static size_t first_child_of(size_t slot) { return kArity * (slot - kFirst) + kFirst + 1; }
    // Written without branches on the key order, which is unpredictable.
    static bool before(uint64_t key_a, ChunkId a, uint64_t key_b, ChunkId b) {
        return (key_a > key_b) | ((key_a == key_b) & (a > b));
    }
    static bool before(const HeapEntry& a, const HeapEntry& b) { return before(a.key, a.last, b.key, b.last); }
    static bool before(const RunEntry& a, const RunEntry& b) { return before(a.key, a.chunk, b.key, b.chunk); }

    size_t heap_size() const { return slots_.size() - kFirst; }
    void place(size_t slot, const HeapEntry& entry) {
        slots_[slot] = entry;
        blocks_[entry.block].slot = static_cast<uint32_t>(slot);
    }
    void grow_to(ChunkId chunk);
    // Takes the chunks first..last out of wherever they are.
    void detach(ChunkId first, ChunkId last);
    // Whether every chunk of first..last is a member of `member`.
    bool all_members_of(uint32_t member, ChunkId first, ChunkId last) const;
    // `count` members left the block; the block goes when none is left.
    void leave_block(uint32_t block, uint32_t count);
    uint32_t new_block(uint64_t key, ChunkId first, ChunkId last);
    // Narrows the top block to its highest member until the top's is exact.
    void settle_heap_top();
    // Moves the last entry into `slot`; false when `slot` was the last (nothing moved).
    bool remove_slot(size_t slot);
    void heap_erase(size_t slot);
    // The child that goes first among those from slot `first` on (at most kArity).
    size_t best_child(size_t first) const;
    void sift_up(size_t slot);
    void sift_down(size_t slot);

    // Whether the top is the heap's (else the run's). Both are settled.
    bool top_in_heap() const;
    bool live(const RunEntry& entry) const {
        return member_of_[entry.chunk] == kInRun && run_stamp_[entry.chunk] == entry.stamp;
    }
    void run_erase(ChunkId chunk);
    void sort_best_first(std::vector<RunEntry>& entries);
    // Merges what arrived into the run and drops dead entries from its front.
    void settle_run();

    uint64_t ordered_from_;
    // The heap from slot kFirst on; the slots before it are never read.
    std::vector<HeapEntry, LineAllocator<HeapEntry>> slots_ = std::vector<HeapEntry, LineAllocator<HeapEntry>>(kFirst);
    std::vector<Block> blocks_;
    std::vector<uint32_t> free_blocks_;
    // Building the heap at once (assign): blocks leave without keeping the order.
    bool unordered_ = false;
    std::vector<uint32_t> member_of_; // per chunk id: its block, kInRun or kAbsent
    size_t heap_chunks_ = 0;
    // Best first from run_begin_ on; arrived_ is not merged in yet.
    std::vector<RunEntry> run_;
    size_t run_begin_ = 0;
    std::vector<RunEntry> arrived_;
    std::vector<RunEntry> merged_;
    std::vector<RunEntry> sorted_;
    std::vector<uint32_t> run_stamp_; // per chunk id: the stamp of its live run entry
    std::vector<uint64_t> run_key_;   // per chunk id: its key while in the run
    size_t run_live_ = 0;
};

} // namespace uvmp

// The eviction candidates of the look-ahead policies: a max-heap of chunks by
// eviction key with one entry per chunk, so that a key changes in place
// instead of leaving a stale entry behind. Where a chunk sits in the heap is
// kept per chunk id, which makes updating and removing O(log n).
#pragma once

#include "core/residency.h"

#include <cstdint>
#include <vector>

namespace uvmp {

class EvictionQueue {
public:
    struct Entry {
        uint64_t key = 0;
        ChunkId chunk = kNoChunk;
    };

    bool empty() const { return heap_.empty(); }
    size_t size() const { return heap_.size(); }
    bool contains(ChunkId chunk) const { return chunk < position_.size() && position_[chunk] != kAbsent; }
    // The largest key; among equal keys the largest chunk id. Undefined when empty.
    const Entry& top() const { return heap_.front(); }

    // Inserts the chunk, or moves it to its new key.
    void set(ChunkId chunk, uint64_t key);
    // False when the chunk was not in the queue.
    bool erase(ChunkId chunk);
    void clear();
    // Replaces the contents at once (O(n)); a chunk listed twice keeps its last key.
    void assign(const std::vector<Entry>& entries);

private:
    static constexpr uint32_t kAbsent = UINT32_MAX;
    // Four children a node: half the depth of a binary heap, so fewer entries
    // move (each move also updates the moved chunk's position).
    static constexpr size_t kArity = 4;

    static size_t parent_of(size_t index) { return (index - 1) / kArity; }
    // Written without branches on the key order, which is unpredictable.
    static bool before(const Entry& a, const Entry& b) {
        return (a.key > b.key) | ((a.key == b.key) & (a.chunk > b.chunk));
    }
    void place(size_t index, const Entry& entry) {
        heap_[index] = entry;
        position_[entry.chunk] = static_cast<uint32_t>(index);
    }
    void grow_to(ChunkId chunk);
    void sift_up(size_t index);
    void sift_down(size_t index);

    std::vector<Entry> heap_;
    std::vector<uint32_t> position_; // index in heap_ per chunk id, or kAbsent
};

} // namespace uvmp

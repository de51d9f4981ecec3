// The eviction candidates of the look-ahead policies: a max-heap of chunks by
// eviction key with one entry per chunk, so that a key changes in place
// instead of leaving a stale entry behind. Where a chunk sits in the heap is
// kept per chunk id, which makes updating and removing O(log n).
#pragma once

#include "core/residency.h"

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace uvmp {

class EvictionQueue {
public:
    struct Entry {
        uint64_t key = 0;
        ChunkId chunk = kNoChunk;
    };

    bool empty() const { return size() == 0; }
    size_t size() const { return slots_.size() - kFirst; }
    bool contains(ChunkId chunk) const { return chunk < position_.size() && position_[chunk] != kAbsent; }
    // The largest key; among equal keys the largest chunk id. Undefined when empty.
    const Entry& top() const { return slots_[kFirst]; }

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
    static constexpr size_t kLine = kArity * sizeof(Entry);
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

    static size_t parent_of(size_t slot) { return (slot - kFirst - 1) / kArity + kFirst; }
    static size_t first_child_of(size_t slot) { return kArity * (slot - kFirst) + kFirst + 1; }
    // Written without branches on the key order, which is unpredictable.
    static bool before(const Entry& a, const Entry& b) {
        return (a.key > b.key) | ((a.key == b.key) & (a.chunk > b.chunk));
    }
    void place(size_t slot, const Entry& entry) {
        slots_[slot] = entry;
        position_[entry.chunk] = static_cast<uint32_t>(slot);
    }
    void grow_to(ChunkId chunk);
    // The child that goes first among those from slot `first` on (at most kArity).
    size_t best_child(size_t first) const;
    void sift_up(size_t slot);
    void sift_down(size_t slot);

    // The heap from slot kFirst on; the slots before it are never read.
    std::vector<Entry, LineAllocator<Entry>> slots_ = std::vector<Entry, LineAllocator<Entry>>(kFirst);
    std::vector<uint32_t> position_; // slot per chunk id, or kAbsent
};

} // namespace uvmp

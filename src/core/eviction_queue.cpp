#include "core/eviction_queue.h"

#include <algorithm>

namespace uvmp {

void EvictionQueue::grow_to(ChunkId chunk) {
    // Chunk ids grow by whole allocations: grow geometrically, not one id at a time.
    position_.resize(std::max<size_t>(static_cast<size_t>(chunk) + 1, 2 * position_.size()), kAbsent);
}

void EvictionQueue::set(ChunkId chunk, uint64_t key) {
    if (chunk >= position_.size()) grow_to(chunk);
    const uint32_t at = position_[chunk];
    if (at == kAbsent) {
        heap_.push_back({key, chunk});
        position_[chunk] = static_cast<uint32_t>(heap_.size() - 1);
        sift_up(heap_.size() - 1);
        return;
    }
    const uint64_t old_key = heap_[at].key;
    if (key == old_key) return;
    heap_[at].key = key;
    if (key > old_key) sift_up(at);
    else sift_down(at);
}

bool EvictionQueue::erase(ChunkId chunk) {
    if (!contains(chunk)) return false;
    const size_t at = position_[chunk];
    position_[chunk] = kAbsent;
    const Entry last = heap_.back();
    heap_.pop_back();
    if (at == heap_.size()) return true;
    place(at, last);
    // The moved entry may belong above or below its new place.
    if (at > 0 && before(last, heap_[parent_of(at)])) sift_up(at);
    else sift_down(at);
    return true;
}

void EvictionQueue::clear() {
    for (const Entry& entry : heap_) position_[entry.chunk] = kAbsent;
    heap_.clear();
}

void EvictionQueue::assign(const std::vector<Entry>& entries) {
    clear();
    for (const Entry& entry : entries) {
        if (entry.chunk >= position_.size()) grow_to(entry.chunk);
        if (position_[entry.chunk] != kAbsent) {
            heap_[position_[entry.chunk]].key = entry.key;
            continue;
        }
        position_[entry.chunk] = static_cast<uint32_t>(heap_.size());
        heap_.push_back(entry);
    }
    // Floyd's bottom-up construction: every node that has children, last first.
    if (heap_.size() > 1)
        for (size_t i = parent_of(heap_.size() - 1) + 1; i-- > 0;) sift_down(i);
}

void EvictionQueue::sift_up(size_t index) {
    const Entry moving = heap_[index];
    while (index > 0) {
        const size_t parent = parent_of(index);
        if (!before(moving, heap_[parent])) break;
        place(index, heap_[parent]);
        index = parent;
    }
    place(index, moving);
}

void EvictionQueue::sift_down(size_t index) {
    const Entry moving = heap_[index];
    const size_t n = heap_.size();
    while (true) {
        const size_t first = kArity * index + 1;
        if (first >= n) break;
        size_t best = first;
        const size_t last = std::min(first + kArity, n);
        for (size_t child = first + 1; child < last; ++child)
            if (before(heap_[child], heap_[best])) best = child;
        if (!before(heap_[best], moving)) break;
        place(index, heap_[best]);
        index = best;
    }
    place(index, moving);
}

} // namespace uvmp

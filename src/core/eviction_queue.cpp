#include "core/eviction_queue.h"

namespace uvmp {

void EvictionQueue::set(ChunkId chunk, uint64_t key) {
    if (chunk >= position_.size()) position_.resize(static_cast<size_t>(chunk) + 1, kAbsent);
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
    if (at > 0 && before(last, heap_[(at - 1) / 2])) sift_up(at);
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
        if (entry.chunk >= position_.size()) position_.resize(static_cast<size_t>(entry.chunk) + 1, kAbsent);
        if (position_[entry.chunk] != kAbsent) {
            heap_[position_[entry.chunk]].key = entry.key;
            continue;
        }
        position_[entry.chunk] = static_cast<uint32_t>(heap_.size());
        heap_.push_back(entry);
    }
    // Floyd's bottom-up construction.
    for (size_t i = heap_.size() / 2; i-- > 0;) sift_down(i);
}

void EvictionQueue::sift_up(size_t index) {
    const Entry moving = heap_[index];
    while (index > 0) {
        const size_t parent = (index - 1) / 2;
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
        size_t child = 2 * index + 1;
        if (child >= n) break;
        if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
        if (!before(heap_[child], moving)) break;
        place(index, heap_[child]);
        index = child;
    }
    place(index, moving);
}

} // namespace uvmp

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
        slots_.push_back({key, chunk});
        position_[chunk] = static_cast<uint32_t>(slots_.size() - 1);
        sift_up(slots_.size() - 1);
        return;
    }
    const uint64_t old_key = slots_[at].key;
    if (key == old_key) return;
    slots_[at].key = key;
    if (key > old_key) sift_up(at);
    else sift_down(at);
}

bool EvictionQueue::erase(ChunkId chunk) {
    if (!contains(chunk)) return false;
    const size_t at = position_[chunk];
    position_[chunk] = kAbsent;
    const Entry last = slots_.back();
    slots_.pop_back();
    if (at == slots_.size()) return true;
    place(at, last);
    // The moved entry may belong above or below its new place.
    if (at > kFirst && before(last, slots_[parent_of(at)])) sift_up(at);
    else sift_down(at);
    return true;
}

void EvictionQueue::clear() {
    for (size_t slot = kFirst; slot < slots_.size(); ++slot) position_[slots_[slot].chunk] = kAbsent;
    slots_.resize(kFirst);
}

void EvictionQueue::assign(const std::vector<Entry>& entries) {
    clear();
    for (const Entry& entry : entries) {
        if (entry.chunk >= position_.size()) grow_to(entry.chunk);
        if (position_[entry.chunk] != kAbsent) {
            slots_[position_[entry.chunk]].key = entry.key;
            continue;
        }
        position_[entry.chunk] = static_cast<uint32_t>(slots_.size());
        slots_.push_back(entry);
    }
    // Floyd's bottom-up construction: every node that has children, last first.
    if (size() > 1)
        for (size_t slot = parent_of(slots_.size() - 1) + 1; slot-- > kFirst;) sift_down(slot);
}

void EvictionQueue::sift_up(size_t slot) {
    const Entry moving = slots_[slot];
    while (slot > kFirst) {
        const size_t parent = parent_of(slot);
        if (!before(moving, slots_[parent])) break;
        place(slot, slots_[parent]);
        slot = parent;
    }
    place(slot, moving);
}

size_t EvictionQueue::best_child(size_t first) const {
    const size_t n = slots_.size();
    if (first + kArity <= n) {
        // All four children: a tournament computed without branches, as which
        // child wins is unpredictable.
        const Entry* child = &slots_[first];
        const size_t left = before(child[1], child[0]);
        const size_t right = 2 + static_cast<size_t>(before(child[3], child[2]));
        return first + left + (right - left) * static_cast<size_t>(before(child[right], child[left]));
    }
    size_t best = first;
    for (size_t child = first + 1; child < n; ++child)
        if (before(slots_[child], slots_[best])) best = child;
    return best;
}

void EvictionQueue::sift_down(size_t slot) {
    const Entry moving = slots_[slot];
    const size_t n = slots_.size();
    while (true) {
        const size_t first = first_child_of(slot);
        if (first >= n) break;
        const size_t best = best_child(first);
        if (!before(slots_[best], moving)) break;
        place(slot, slots_[best]);
        slot = best;
    }
    place(slot, moving);
}

} // namespace uvmp

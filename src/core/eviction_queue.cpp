#include "core/eviction_queue.h"

#include <algorithm>

namespace uvmp {

void EvictionQueue::grow_to(ChunkId chunk) {
    // Chunk ids grow by whole allocations: grow geometrically, not one id at a time.
    const size_t n = std::max<size_t>(static_cast<size_t>(chunk) + 1, 2 * position_.size());
    position_.resize(n, kAbsent);
    run_stamp_.resize(n, 0);
    run_key_.resize(n, 0);
}

EvictionQueue::Entry EvictionQueue::top() {
    settle_run();
    if (run_begin_ == run_.size()) return slots_[kFirst];
    const RunEntry& best = run_[run_begin_];
    if (heap_size() > 0 && before(slots_[kFirst].key, slots_[kFirst].chunk, best.key, best.chunk)) return slots_[kFirst];
    return {best.key, best.chunk};
}

void EvictionQueue::set(ChunkId chunk, uint64_t key) {
    if (chunk >= position_.size()) grow_to(chunk);
    const uint32_t at = position_[chunk];
    const bool ordered = key >= ordered_from_;
    if (at == kInRun) {
        if (run_key_[chunk] == key) return;
        run_erase(chunk);
    } else if (at != kAbsent) {
        if (!ordered) {
            const uint64_t old_key = slots_[at].key;
            if (key == old_key) return;
            slots_[at].key = key;
            if (key > old_key) sift_up(at);
            else sift_down(at);
            return;
        }
        heap_erase(at);
    }
    if (ordered) {
        run_insert(chunk, key);
        return;
    }
    slots_.push_back({key, chunk});
    position_[chunk] = static_cast<uint32_t>(slots_.size() - 1);
    sift_up(slots_.size() - 1);
}

bool EvictionQueue::erase(ChunkId chunk) {
    if (!contains(chunk)) return false;
    if (position_[chunk] == kInRun) run_erase(chunk);
    else heap_erase(position_[chunk]);
    return true;
}

bool EvictionQueue::remove_slot(size_t slot) {
    position_[slots_[slot].chunk] = kAbsent;
    const Entry last = slots_.back();
    slots_.pop_back();
    if (slot == slots_.size()) return false;
    place(slot, last);
    return true;
}

void EvictionQueue::heap_erase(size_t slot) {
    if (!remove_slot(slot)) return;
    // The moved entry may belong above or below its new place.
    if (slot > kFirst && before(slots_[slot], slots_[parent_of(slot)])) sift_up(slot);
    else sift_down(slot);
}

void EvictionQueue::clear() {
    for (size_t slot = kFirst; slot < slots_.size(); ++slot) position_[slots_[slot].chunk] = kAbsent;
    slots_.resize(kFirst);
    for (const std::vector<RunEntry>* entries : {&run_, &arrived_})
        for (const RunEntry& entry : *entries)
            if (position_[entry.chunk] == kInRun) position_[entry.chunk] = kAbsent;
    run_.clear();
    arrived_.clear();
    run_begin_ = 0;
    run_live_ = 0;
}

void EvictionQueue::assign(const std::vector<Entry>& entries) {
    clear();
    for (const Entry& entry : entries) {
        if (entry.chunk >= position_.size()) grow_to(entry.chunk);
        const uint32_t at = position_[entry.chunk];
        if (at == kInRun) {
            run_erase(entry.chunk);
        } else if (at != kAbsent) { // listed before: out of the heap, which is not ordered yet
            remove_slot(at);
        }
        if (entry.key >= ordered_from_) {
            run_insert(entry.chunk, entry.key);
        } else {
            position_[entry.chunk] = static_cast<uint32_t>(slots_.size());
            slots_.push_back(entry);
        }
    }
    // Floyd's bottom-up construction: every node that has children, last first.
    if (heap_size() > 1)
        for (size_t slot = parent_of(slots_.size() - 1) + 1; slot-- > kFirst;) sift_down(slot);
}

void EvictionQueue::run_insert(ChunkId chunk, uint64_t key) {
    position_[chunk] = kInRun;
    run_key_[chunk] = key;
    arrived_.push_back({key, chunk, ++run_stamp_[chunk]});
    ++run_live_;
    // Nobody may ask for the top for a long time: merge before arrivals pile up.
    if (arrived_.size() > 2 * run_live_ + 1024) settle_run();
}

void EvictionQueue::run_erase(ChunkId chunk) {
    position_[chunk] = kAbsent;
    --run_live_;
}

void EvictionQueue::settle_run() {
    if (!arrived_.empty()) {
        std::erase_if(arrived_, [&](const RunEntry& entry) { return !live(entry); });
        sort_best_first(arrived_);
        const bool behind = run_begin_ == run_.size() || arrived_.empty() || !before(arrived_.front(), run_.back());
        if (behind && run_.size() <= 2 * run_live_ + 1024) {
            // The common case: the chunks just used, all ranked after the others.
            run_.insert(run_.end(), arrived_.begin(), arrived_.end());
        } else {
            run_.erase(run_.begin(), run_.begin() + static_cast<std::ptrdiff_t>(run_begin_));
            std::erase_if(run_, [&](const RunEntry& entry) { return !live(entry); });
            merged_.clear();
            std::merge(run_.begin(), run_.end(), arrived_.begin(), arrived_.end(), std::back_inserter(merged_),
                       [](const RunEntry& a, const RunEntry& b) { return before(a, b); });
            run_.swap(merged_);
            run_begin_ = 0;
        }
        arrived_.clear();
    }
    while (run_begin_ < run_.size() && !live(run_[run_begin_])) ++run_begin_;
    if (run_begin_ == run_.size()) {
        run_.clear();
        run_begin_ = 0;
    }
}

void EvictionQueue::sort_best_first(std::vector<RunEntry>& entries) {
    if (entries.size() < 64) {
        std::sort(entries.begin(), entries.end(), [](const RunEntry& a, const RunEntry& b) { return before(a, b); });
        return;
    }
    // A batch is a thousand keys that differ in a few low bits (recency), where
    // a comparison sort mispredicts every other branch: sort by bytes instead,
    // chunk then key, least significant first, skipping the bytes all share.
    uint64_t key_bits = 0, chunk_bits = 0;
    for (const RunEntry& entry : entries) {
        key_bits |= entry.key ^ entries.front().key;
        chunk_bits |= entry.chunk ^ entries.front().chunk;
    }
    sorted_.resize(entries.size());
    auto pass = [&](auto byte_of) {
        size_t start[257] = {};
        for (const RunEntry& entry : entries) ++start[byte_of(entry) + 1];
        for (size_t b = 1; b < 257; ++b) start[b] += start[b - 1];
        for (const RunEntry& entry : entries) sorted_[start[byte_of(entry)]++] = entry;
        entries.swap(sorted_);
    };
    // Best first: larger bytes first.
    for (unsigned shift = 0; shift < 32; shift += 8)
        if ((chunk_bits >> shift) & 0xff) pass([shift](const RunEntry& e) { return 0xff - ((e.chunk >> shift) & 0xff); });
    for (unsigned shift = 0; shift < 64; shift += 8)
        if ((key_bits >> shift) & 0xff) pass([shift](const RunEntry& e) { return 0xff - ((e.key >> shift) & 0xff); });
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

#include "core/policy/eviction_queue.h"

#include "core/util/radix_pass.h"

#include <algorithm>

namespace uvmp {

void EvictionQueue::grow_to(ChunkId chunk) {
    // Chunk ids grow by whole allocations: grow geometrically, not one id at a time.
    const size_t n = std::max<size_t>(static_cast<size_t>(chunk) + 1, 2 * member_of_.size());
    member_of_.resize(n, kAbsent);
    run_stamp_.resize(n, 0);
    run_key_.resize(n, 0);
}

void EvictionQueue::settle_heap_top() {
    while (heap_size() > 0) {
        HeapEntry& top = slots_[kFirst];
        const Block& block = blocks_[top.block];
        // A block in the heap has a member, so this stops within its range.
        ChunkId highest = block.last;
        while (member_of_[highest] != top.block) --highest;
        if (highest == block.last) return;
        blocks_[top.block].last = highest;
        top.last = highest;
        sift_down(kFirst);
    }
}

bool EvictionQueue::top_in_heap() const {
    if (heap_size() == 0) return false;
    if (run_begin_ == run_.size()) return true;
    return before(slots_[kFirst], HeapEntry{run_[run_begin_].key, run_[run_begin_].chunk, 0});
}

EvictionQueue::Entry EvictionQueue::top() {
    settle_run();
    settle_heap_top();
    if (top_in_heap()) return {slots_[kFirst].key, slots_[kFirst].last};
    if (run_begin_ == run_.size()) return {};
    return {run_[run_begin_].key, run_[run_begin_].chunk};
}

uint32_t EvictionQueue::top_run_length(Entry first, uint32_t most) {
    if (empty() || most == 0) return 0;
    // The next entry in order is the chunk just below with the same key when
    // there is one: no other entry ranks between them. (A key is in the heap or
    // in the run, never both, so looking in the top's own part is enough.)
    uint32_t length = 1;
    if (top_in_heap()) {
        const uint32_t block = slots_[kFirst].block;
        while (length < most && first.chunk >= length && member_of_[first.chunk - length] == block) ++length;
        return length;
    }
    for (size_t at = run_begin_ + 1; length < most && at < run_.size() && first.chunk >= length; ++at, ++length) {
        const RunEntry& entry = run_[at];
        if (!live(entry) || entry.chunk != first.chunk - length || entry.key != first.key) break;
    }
    return length;
}

uint32_t EvictionQueue::new_block(uint64_t key, ChunkId first, ChunkId last) {
    uint32_t index;
    if (!free_blocks_.empty()) {
        index = free_blocks_.back();
        free_blocks_.pop_back();
    } else {
        index = static_cast<uint32_t>(blocks_.size());
        blocks_.emplace_back();
    }
    blocks_[index] = {key, first, last, last - first + 1, 0};
    std::fill(member_of_.begin() + first, member_of_.begin() + last + 1, index);
    heap_chunks_ += last - first + 1;
    return index;
}

void EvictionQueue::leave_block(uint32_t block, uint32_t count) {
    heap_chunks_ -= count;
    Block& b = blocks_[block];
    b.live -= count;
    if (b.live != 0) return;
    if (unordered_) remove_slot(b.slot);
    else heap_erase(b.slot);
    free_blocks_.push_back(block);
}

bool EvictionQueue::all_members_of(uint32_t member, ChunkId first, ChunkId last) const {
    // No early exit: the loop compiles to vector compares, and the ranges are short.
    uint32_t differ = 0;
    for (size_t c = first, end = size_t{last} + 1; c < end; ++c) differ |= member_of_[c] ^ member;
    return differ == 0;
}

void EvictionQueue::detach(ChunkId first, ChunkId last) {
    // Mostly the chunks of one block leaving together, chunks of the run, or
    // chunks just fetched that are in the queue nowhere yet.
    const uint32_t member = member_of_[first];
    if (all_members_of(member, first, last)) {
        if (member == kAbsent) return;
        std::fill(member_of_.begin() + first, member_of_.begin() + last + 1, kAbsent);
        if (member == kInRun) run_live_ -= last - first + 1;
        else leave_block(member, last - first + 1);
        return;
    }
    // Else mostly a few stretches of adjacent chunks, each of one block: each
    // leaves at once.
    for (size_t c = first, end = size_t{last} + 1; c < end;) {
        const uint32_t member = member_of_[c];
        size_t stretch_end = c + 1;
        while (stretch_end < end && member_of_[stretch_end] == member) ++stretch_end;
        if (member == kInRun) {
            for (size_t k = c; k < stretch_end; ++k) run_erase(static_cast<ChunkId>(k));
        } else if (member != kAbsent) {
            std::fill(member_of_.begin() + static_cast<std::ptrdiff_t>(c),
                      member_of_.begin() + static_cast<std::ptrdiff_t>(stretch_end), kAbsent);
            leave_block(member, static_cast<uint32_t>(stretch_end - c));
        }
        c = stretch_end;
    }
}

void EvictionQueue::set_range(ChunkId first, ChunkId last, uint64_t key) {
    if (last >= member_of_.size()) grow_to(last);
    const bool ordered = key >= ordered_from_;
    const uint32_t member = member_of_[first];
    if (member == kInRun && first == last && run_key_[first] == key) return;
    // A tensor set again whole is a block of its own already: it moves with
    // its new key in one heap step, as a single chunk would.
    if (member < kInRun && !ordered && blocks_[member].live == last - first + 1) {
        if (all_members_of(member, first, last)) {
            Block& block = blocks_[member];
            const HeapEntry old = slots_[block.slot];
            block.key = key;
            block.first = first;
            block.last = last;
            slots_[block.slot] = {key, last, member};
            if (unordered_) return;
            if (before(slots_[block.slot], old)) sift_up(block.slot);
            else sift_down(block.slot);
            return;
        }
    }
    if (ordered) {
        // Mostly chunks of the run set again: a new entry each, the old ones
        // dropped when met (their stamps no longer match).
        for (ChunkId c = first; c <= last; ++c) {
            const uint32_t was = member_of_[c];
            if (was == kInRun && run_key_[c] == key) continue; // its entry stands
            if (was != kInRun) {
                // Chunks of a block mostly leave it together: the rest of the range at once.
                if (was != kAbsent) detach(c, last);
                member_of_[c] = kInRun;
                ++run_live_;
            }
            run_key_[c] = key;
            arrived_.push_back({key, c, ++run_stamp_[c]});
        }
        // Nobody may ask for the top for a long time: merge before arrivals pile up.
        if (arrived_.size() > 2 * run_live_ + 1024) settle_run();
        return;
    }
    detach(first, last);
    const uint32_t block = new_block(key, first, last);
    slots_.push_back({key, last, block});
    blocks_[block].slot = static_cast<uint32_t>(slots_.size() - 1);
    if (!unordered_) sift_up(slots_.size() - 1);
}

void EvictionQueue::erase(ChunkRange range) {
    // Ids past every one set so far have no entry.
    if (range.first >= member_of_.size()) return;
    detach(range.first, std::min<ChunkId>(range.last, static_cast<ChunkId>(member_of_.size() - 1)));
}

void EvictionQueue::erase_ordered(ChunkRange range) {
    const size_t end = std::min<size_t>(size_t{range.last} + 1, member_of_.size());
    for (size_t c = range.first; c < end; ++c)
        if (member_of_[c] == kInRun) run_erase(static_cast<ChunkId>(c));
}

bool EvictionQueue::erase(ChunkId chunk) {
    if (!contains(chunk)) return false;
    detach(chunk, chunk);
    return true;
}

bool EvictionQueue::remove_slot(size_t slot) {
    const HeapEntry last = slots_.back();
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
    for (size_t slot = kFirst; slot < slots_.size(); ++slot) {
        const Block& block = blocks_[slots_[slot].block];
        for (ChunkId c = block.first; c <= block.last; ++c)
            if (member_of_[c] == slots_[slot].block) member_of_[c] = kAbsent;
    }
    slots_.resize(kFirst);
    blocks_.clear();
    free_blocks_.clear();
    heap_chunks_ = 0;
    for (const std::vector<RunEntry>* entries : {&run_, &arrived_})
        for (const RunEntry& entry : *entries)
            if (member_of_[entry.chunk] == kInRun) member_of_[entry.chunk] = kAbsent;
    run_.clear();
    arrived_.clear();
    run_begin_ = 0;
    run_live_ = 0;
}

void EvictionQueue::assign(const std::vector<Entry>& entries) {
    clear();
    unordered_ = true;
    for (const Entry& entry : entries) set(entry.chunk, entry.key);
    unordered_ = false;
    // Floyd's bottom-up construction: every node that has children, last first.
    if (heap_size() > 1)
        for (size_t slot = parent_of(slots_.size() - 1) + 1; slot-- > kFirst;) sift_down(slot);
}

void EvictionQueue::run_erase(ChunkId chunk) {
    member_of_[chunk] = kAbsent;
    --run_live_;
}

void EvictionQueue::settle_run() {
    if (!arrived_.empty()) {
        // Entries that left again since they arrived stay: like the run's own,
        // they are dropped when met.
        const bool room = run_.size() <= 2 * run_live_ + 1024;
        // Whether entries from `best` on can follow the run as they are.
        const auto behind_run = [&](const RunEntry& best) { return run_begin_ == run_.size() || !before(best, run_.back()); };
        const auto worse = [](const RunEntry& a, const RunEntry& b) { return before(b, a); };
        if (room && std::is_sorted(arrived_.begin(), arrived_.end(), worse) && behind_run(arrived_.back())) {
            // The common case: one launch's chunks set to one key, ranges in
            // ascending order (worst first), all ranked after the others.
            run_.insert(run_.end(), arrived_.rbegin(), arrived_.rend());
        } else {
            sort_best_first(arrived_);
            if (room && behind_run(arrived_.front())) {
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
    // The common batch is one launch's chunks set to one key, ranges in
    // ascending order: exactly worst first.
    const auto best_first = [](const RunEntry& a, const RunEntry& b) { return before(a, b); };
    if (std::is_sorted(entries.rbegin(), entries.rend(), best_first)) {
        std::reverse(entries.begin(), entries.end());
        return;
    }
    if (entries.size() < 64) {
        std::sort(entries.begin(), entries.end(), best_first);
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
    auto pass = [&](auto byte_of) { radix_pass(entries, sorted_, byte_of); };
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
        const HeapEntry* child = &slots_[first];
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
    const HeapEntry moving = slots_[slot];
    while (slot > kFirst) {
        const size_t parent = parent_of(slot);
        if (!before(moving, slots_[parent])) break;
        place(slot, slots_[parent]);
        slot = parent;
    }
    place(slot, moving);
}

void EvictionQueue::sift_down(size_t slot) {
    const HeapEntry moving = slots_[slot];
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

#include "core/model/reuse_in_place.h"

#include <algorithm>
#include <iterator>

namespace uvmp {

ReuseInPlace::Ranges::iterator ReuseInPlace::add(uint64_t start, Range range, Ranges::iterator hint) {
    bytes_ += range.end - start;
    by_age_.emplace(range.dead_since, start);
    std::lock_guard lock(ranges_mutex_);
    return ranges_.emplace_hint(hint, start, range);
}

ReuseInPlace::Ranges::iterator ReuseInPlace::erase(Ranges::iterator it) {
    bytes_ -= it->second.end - it->first;
    by_age_.erase({it->second.dead_since, it->first});
    std::lock_guard lock(ranges_mutex_);
    return ranges_.erase(it);
}

size_t ReuseInPlace::resident_dead(uint64_t begin, uint64_t end, std::span<pool::Extent> out) const {
    if (!budget_binds_.load(std::memory_order_relaxed)) return 0;
    std::lock_guard lock(ranges_mutex_);
    size_t n = 0;
    auto known = ranges_.upper_bound(begin);
    if (known != ranges_.begin() && std::prev(known)->second.end > begin) --known;
    auto presumed = presumed_.upper_bound(begin);
    if (presumed != presumed_.begin() && std::prev(presumed)->second > begin) --presumed;
    // Both in address order, as one list; where they touch or overlap, one extent.
    while (n < out.size()) {
        const bool has_known = known != ranges_.end() && known->first < end;
        const bool has_presumed = presumed != presumed_.end() && presumed->first < end;
        if (!has_known && !has_presumed) break;
        pool::Extent next;
        if (has_known && (!has_presumed || known->first <= presumed->first)) {
            next = {std::max(known->first, begin), std::min(known->second.end, end)};
            ++known;
        } else {
            next = {std::max(presumed->first, begin), std::min(presumed->second, end)};
            ++presumed;
        }
        if (n > 0 && next.begin <= out[n - 1].end) out[n - 1].end = std::max(out[n - 1].end, next.end);
        else out[n++] = next;
    }
    return n;
}

void ReuseInPlace::block_freed(uint64_t begin, uint64_t end) const {
    if (begin >= end || !budget_binds_.load(std::memory_order_relaxed)) return;
    std::lock_guard lock(ranges_mutex_);
    drop_presumed_locked(begin, end);
    presumed_.emplace(begin, end);
}

size_t ReuseInPlace::presumed() const {
    std::lock_guard lock(ranges_mutex_);
    return presumed_.size();
}

void ReuseInPlace::drop_presumed_locked(uint64_t begin, uint64_t end) const {
    if (presumed_.empty() || begin >= end) return;
    auto it = presumed_.upper_bound(begin);
    if (it != presumed_.begin() && std::prev(it)->second > begin) --it;
    while (it != presumed_.end() && it->first < end) {
        const uint64_t first = it->first, last = it->second;
        it = presumed_.erase(it);
        if (first < begin) presumed_.emplace(first, begin);
        if (last > end) {
            presumed_.emplace(end, last);
            break;
        }
    }
}

void ReuseInPlace::give_up_through(Residency& residency, std::function<void(uint64_t, uint64_t)> evict) {
    room_of_ = &residency;
    evict_ = std::move(evict);
    residency.set_dead_room(this);
}

uint64_t ReuseInPlace::give_up(uint64_t bytes) {
    budget_binds_.store(true, std::memory_order_relaxed);
    if (!room_of_ || !evict_) return 0;
    return shed(*room_of_, bytes, evict_);
}

void ReuseInPlace::note_removal(Residency& residency, uint32_t alloc_id, uint64_t address, uint64_t step) {
    const std::optional<ChunkRange> chunks = residency.chunks_of(alloc_id);
    // The truth replaces what was presumed of the block.
    if (!chunks) {
        std::lock_guard lock(ranges_mutex_);
        if (const auto it = presumed_.find(address); it != presumed_.end()) presumed_.erase(it);
        return;
    }
    const ChunkRange all = *chunks;
    drop_presumed(address, address + residency.bytes_of(all));
    for (ChunkId c = residency.first_resident(all); c <= all.last; c = residency.first_resident({c, all.last})) {
        const ChunkRange run{c, residency.first_missing({c, all.last}) - 1};
        uint64_t start = address + residency.chunk_offset(run.first);
        Range range{start + residency.bytes_of(run), step};
        // Joined with the ranges it touches: a block placed later over two freed
        // neighbours finds one range.
        auto next = ranges_.upper_bound(start);
        if (next != ranges_.begin()) {
            const auto before = std::prev(next);
            if (before->second.end >= start) {
                start = before->first;
                range.end = std::max(range.end, before->second.end);
                range.dead_since = std::max(range.dead_since, before->second.dead_since);
                next = erase(before);
            }
        }
        while (next != ranges_.end() && next->first <= range.end) {
            range.end = std::max(range.end, next->second.end);
            range.dead_since = std::max(range.dead_since, next->second.dead_since);
            next = erase(next);
        }
        add(start, range, next);
        c = run.last + 1;
    }
    // The allocation's resident bytes leave the live count as they join this
    // one (remove_allocation comes next): what is held does not change.
    publish(residency);
}

uint64_t ReuseInPlace::place(Residency& residency, ChunkRange chunks, uint64_t address, uint64_t step) {
    const uint64_t size = residency.bytes_of(chunks);
    // Whatever was presumed there is this block's now (forget, below, drops it otherwise).
    if (ranges_.empty()) {
        drop_presumed(address, address + size);
        return 0;
    }
    const uint64_t end = address + size;
    const uint64_t chunk_bytes = residency.chunk_bytes();
    const uint64_t count = uint64_t{chunks.last} - chunks.first + 1;
    taken_.clear();
    auto it = ranges_.upper_bound(address);
    if (it != ranges_.begin() && std::prev(it)->second.end > address) --it;
    for (; it != ranges_.end() && it->first < end; ++it) {
        const uint64_t from = std::max(it->first, address) - address;
        const uint64_t to = std::min(it->second.end, end) - address;
        // The chunks that start at or after `from` and end by `to`; only the
        // allocation's last chunk ends short of a chunk boundary.
        const uint64_t first = (from + chunk_bytes - 1) / chunk_bytes;
        const uint64_t past = to == size ? count : to / chunk_bytes;
        if (first < past)
            taken_.push_back({chunks.first + static_cast<ChunkId>(first), chunks.first + static_cast<ChunkId>(past - 1)});
    }
    // Dead bytes out before live ones in, so that nothing is held twice.
    forget(residency, address, size);
    uint64_t reused = 0;
    for (const ChunkRange& run : taken_) {
        residency.make_resident(run, step);
        reused += residency.bytes_of(run);
    }
    return reused;
}

void ReuseInPlace::forget(Residency& residency, uint64_t address, uint64_t size) {
    if (size == 0) return;
    drop_presumed(address, address + size);
    if (ranges_.empty()) return;
    const uint64_t end = address + size;
    auto it = ranges_.upper_bound(address);
    if (it != ranges_.begin() && std::prev(it)->second.end > address) --it;
    while (it != ranges_.end() && it->first < end) {
        const uint64_t first = it->first;
        const Range range = it->second;
        it = erase(it);
        // What lies outside the forgotten bytes stays dead and resident.
        if (first < address) add(first, {address, range.dead_since}, it);
        if (range.end > end) {
            add(end, range, it);
            break;
        }
    }
    publish(residency);
}

} // namespace uvmp

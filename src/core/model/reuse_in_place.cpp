#include "core/model/reuse_in_place.h"

#include <algorithm>
#include <iterator>

namespace uvmp {

void ReuseInPlace::note_removal(const Residency& residency, uint32_t alloc_id, uint64_t address) {
    const uint32_t count = residency.chunk_count(alloc_id);
    if (count == 0) return;
    const ChunkRange all{residency.first_chunk(alloc_id), residency.first_chunk(alloc_id) + count - 1};
    for (ChunkId c = residency.first_resident(all); c <= all.last; c = residency.first_resident({c, all.last})) {
        const ChunkRange run{c, residency.first_missing({c, all.last}) - 1};
        uint64_t start = address + residency.chunk_offset(run.first);
        uint64_t end = start + residency.bytes_of(run);
        // Joined with the ranges it touches: a block placed later over two freed
        // neighbours finds one range.
        auto next = ranges_.upper_bound(start);
        if (next != ranges_.begin()) {
            const auto before = std::prev(next);
            if (before->second >= start) {
                start = before->first;
                end = std::max(end, before->second);
                bytes_ -= before->second - before->first;
                next = ranges_.erase(before);
            }
        }
        while (next != ranges_.end() && next->first <= end) {
            end = std::max(end, next->second);
            bytes_ -= next->second - next->first;
            next = ranges_.erase(next);
        }
        ranges_.emplace_hint(next, start, end);
        bytes_ += end - start;
        c = run.last + 1;
    }
}

uint64_t ReuseInPlace::place(Residency& residency, ChunkRange chunks, uint64_t address, uint64_t step) {
    if (ranges_.empty()) return 0;
    const uint64_t size = residency.bytes_of(chunks);
    const uint64_t end = address + size;
    const uint64_t chunk_bytes = residency.chunk_bytes();
    const uint64_t count = uint64_t{chunks.last} - chunks.first + 1;
    uint64_t reused = 0;
    auto it = ranges_.upper_bound(address);
    if (it != ranges_.begin() && std::prev(it)->second > address) --it;
    for (; it != ranges_.end() && it->first < end; ++it) {
        const uint64_t from = std::max(it->first, address) - address;
        const uint64_t to = std::min(it->second, end) - address;
        // The chunks that start at or after `from` and end by `to`; only the
        // allocation's last chunk ends short of a chunk boundary.
        const uint64_t first = (from + chunk_bytes - 1) / chunk_bytes;
        const uint64_t past = to == size ? count : to / chunk_bytes;
        if (first >= past) continue;
        ChunkRange run{chunks.first + static_cast<ChunkId>(first), chunks.first + static_cast<ChunkId>(past - 1)};
        residency.make_resident(run, step);
        reused += residency.bytes_of(run);
    }
    forget(address, size);
    return reused;
}

void ReuseInPlace::forget(uint64_t address, uint64_t size) {
    if (ranges_.empty() || size == 0) return;
    const uint64_t end = address + size;
    auto it = ranges_.upper_bound(address);
    if (it != ranges_.begin() && std::prev(it)->second > address) --it;
    while (it != ranges_.end() && it->first < end) {
        const auto [first, last] = *it;
        bytes_ -= last - first;
        it = ranges_.erase(it);
        // What lies outside the forgotten bytes stays dead and resident.
        if (first < address) {
            ranges_.emplace_hint(it, first, address);
            bytes_ += address - first;
        }
        if (last > end) {
            ranges_.emplace_hint(it, end, last);
            bytes_ += last - end;
            break;
        }
    }
}

} // namespace uvmp

#include "core/model/reuse_in_place.h"

#include <algorithm>
#include <iterator>

namespace uvmp {

void ReuseInPlace::RangeSet::add(uint64_t start, uint64_t end) {
    if (start >= end) return;
    auto next = ranges.upper_bound(start);
    if (next != ranges.begin()) {
        const auto before = std::prev(next);
        if (before->second >= start) {
            start = before->first;
            end = std::max(end, before->second);
            bytes -= before->second - before->first;
            next = ranges.erase(before);
        }
    }
    while (next != ranges.end() && next->first <= end) {
        end = std::max(end, next->second);
        bytes -= next->second - next->first;
        next = ranges.erase(next);
    }
    ranges.emplace_hint(next, start, end);
    bytes += end - start;
}

void ReuseInPlace::RangeSet::remove(uint64_t address, uint64_t size) {
    if (ranges.empty() || size == 0) return;
    const uint64_t end = address + size;
    auto it = ranges.upper_bound(address);
    if (it != ranges.begin() && std::prev(it)->second > address) --it;
    while (it != ranges.end() && it->first < end) {
        const auto [first, last] = *it;
        bytes -= last - first;
        it = ranges.erase(it);
        // What lies outside the forgotten bytes stays remembered.
        if (first < address) {
            ranges.emplace_hint(it, first, address);
            bytes += address - first;
        }
        if (last > end) {
            ranges.emplace_hint(it, end, last);
            bytes += last - end;
            break;
        }
    }
}

uint64_t ReuseInPlace::RangeSet::take(Residency& residency, ChunkRange chunks, uint64_t address, uint64_t size,
                                      uint64_t step) const {
    if (ranges.empty()) return 0;
    const uint64_t end = address + size;
    const uint64_t chunk_bytes = residency.chunk_bytes();
    const uint64_t count = uint64_t{chunks.last} - chunks.first + 1;
    uint64_t taken = 0;
    auto it = ranges.upper_bound(address);
    if (it != ranges.begin() && std::prev(it)->second > address) --it;
    for (; it != ranges.end() && it->first < end; ++it) {
        const uint64_t from = std::max(it->first, address) - address;
        const uint64_t to = std::min(it->second, end) - address;
        // The chunks that start at or after `from` and end by `to`; only the
        // allocation's last chunk ends short of a chunk boundary.
        const uint64_t first = (from + chunk_bytes - 1) / chunk_bytes;
        const uint64_t past = to == size ? count : to / chunk_bytes;
        if (first >= past) continue;
        const ChunkRange run{chunks.first + static_cast<ChunkId>(first), chunks.first + static_cast<ChunkId>(past - 1)};
        // (A chunk already resident, taken from the other set, is not counted twice.)
        taken += residency.missing_bytes(run);
        residency.make_resident(run, step);
    }
    return taken;
}

void ReuseInPlace::note_resident_runs(const Residency& residency, uint32_t alloc_id, uint64_t address,
                                      uint64_t skip_begin, uint64_t skip_end) {
    const uint32_t count = residency.chunk_count(alloc_id);
    if (count == 0) return;
    const ChunkRange all{residency.first_chunk(alloc_id), residency.first_chunk(alloc_id) + count - 1};
    for (ChunkId c = residency.first_resident(all); c <= all.last; c = residency.first_resident({c, all.last})) {
        const ChunkRange run{c, residency.first_missing({c, all.last}) - 1};
        const uint64_t start = address + residency.chunk_offset(run.first);
        const uint64_t end = start + residency.bytes_of(run);
        // The parts outside [skip_begin, skip_end).
        dead_.add(start, std::min(end, std::max(start, skip_begin)));
        dead_.add(std::max(start, std::min(end, skip_end)), end);
        c = run.last + 1;
    }
}

void ReuseInPlace::note_removal(const Residency& residency, uint32_t alloc_id, uint64_t address) {
    note_resident_runs(residency, alloc_id, address, 0, 0);
}

void ReuseInPlace::note_discarded_removal(const Residency& residency, uint32_t alloc_id, uint64_t address,
                                          uint64_t begin, uint64_t end) {
    note_resident_runs(residency, alloc_id, address, begin, end);
    discarded_.add(begin, end);
}

ReuseInPlace::Placed ReuseInPlace::place(Residency& residency, ChunkRange chunks, uint64_t address, uint64_t step) {
    if (dead_.ranges.empty() && discarded_.ranges.empty()) return {};
    const uint64_t size = residency.bytes_of(chunks);
    Placed placed;
    placed.reused = dead_.take(residency, chunks, address, size, step);
    placed.refilled = discarded_.take(residency, chunks, address, size, step);
    forget(address, size);
    return placed;
}

void ReuseInPlace::forget(uint64_t address, uint64_t size) {
    dead_.remove(address, size);
    discarded_.remove(address, size);
}

} // namespace uvmp

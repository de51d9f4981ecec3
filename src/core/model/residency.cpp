#include "core/model/residency.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <stdexcept>
#include <string>

namespace uvmp {

Residency::Residency(uint64_t budget_bytes, uint64_t chunk_bytes, ChunkIds ids)
    : budget_bytes_(budget_bytes), chunk_bytes_(chunk_bytes), ids_(ids) {
    if (chunk_bytes == 0 || !std::has_single_bit(chunk_bytes))
        throw std::invalid_argument("chunk size must be a power of two, got " + std::to_string(chunk_bytes));
    chunk_shift_ = static_cast<unsigned>(std::countr_zero(chunk_bytes));
    AllocSlot removed;
    removed.id = UINT32_MAX;
    allocs_.push_back(removed); // kRemovedSlot
}

std::optional<ChunkRange> Residency::add_allocation(uint32_t alloc_id, uint64_t size_bytes, ChunkId first) {
    if (find(alloc_id) || was_removed(alloc_id))
        throw std::invalid_argument("allocation " + std::to_string(alloc_id) + " was added twice");
    const uint64_t count = (size_bytes + chunk_bytes_ - 1) >> chunk_shift_;
    if ((first != kNoChunk) != (ids_ == ChunkIds::Given && count > 0))
        throw std::invalid_argument("allocation " + std::to_string(alloc_id) +
                                    (first == kNoChunk ? ": its first chunk id is needed" : ": chunk ids are not given"));
    ChunkId placed = first; // kNoChunk: new ids
    if (ids_ == ChunkIds::Reused && count > 0 && count < kNoChunk) placed = take_free_ids(static_cast<uint32_t>(count));
    const uint64_t end = placed != kNoChunk ? uint64_t{placed} + count : live_.size() + count;
    if (end >= kNoChunk) throw std::length_error("too many chunks: use a larger chunk size");
    if (ids_ == ChunkIds::Given && count > 0 && placed < live_.size() &&
        std::any_of(live_.begin() + placed, live_.begin() + std::min<uint64_t>(end, live_.size()), [](uint8_t l) { return l; }))
        throw std::invalid_argument("allocation " + std::to_string(alloc_id) + ": its chunk ids are in use");
    AllocSlot slot;
    slot.id = alloc_id;
    slot.first = placed != kNoChunk ? placed : static_cast<ChunkId>(live_.size());
    slot.count = static_cast<uint32_t>(count);
    slot.size = size_bytes;
    uint32_t slot_index;
    if (free_slots_.empty()) {
        slot_index = static_cast<uint32_t>(allocs_.size());
        allocs_.push_back(slot);
    } else {
        slot_index = free_slots_.back();
        free_slots_.pop_back();
        allocs_[slot_index] = slot;
    }
    if (alloc_id < kDenseIds) {
        if (alloc_id >= slot_by_id_.size()) slot_by_id_.resize(std::max<size_t>(alloc_id + 1, 2 * slot_by_id_.size()), 0);
        slot_by_id_[alloc_id] = slot_index + 1;
    } else {
        slot_of_sparse_id_.emplace(alloc_id, slot_index);
    }
    ++layout_version_;
    const ChunkRange range{slot.first, slot.first + slot.count - 1};
    if (count == 0) return std::nullopt;
    if (end > live_.size()) {
        // Ids past every one handed out so far: their state starts as a removed chunk's.
        last_use_.resize(end, 0);
        alloc_slot_.resize(end, kRemovedSlot);
        links_.resize(end);
        pinned_mark_.resize(end, 0);
        live_.resize(end, 0);
        resident_bits_.resize((end + 63) / 64, 0);
    }
    // Ids a removed allocation had: nothing of it carries over (not resident,
    // unlinked and unpinned since its removal).
    std::fill(last_use_.begin() + range.first, last_use_.begin() + range.last + 1, 0);
    std::fill(alloc_slot_.begin() + range.first, alloc_slot_.begin() + range.last + 1, slot_index);
    std::fill(live_.begin() + range.first, live_.begin() + range.last + 1, 1);
    return range;
}

ChunkId Residency::take_free_ids(uint32_t count) {
    const auto fit = free_runs_by_length_.lower_bound({count, 0});
    if (fit == free_runs_by_length_.end()) return kNoChunk;
    const auto [length, first] = *fit;
    drop_free_run(free_runs_.find(first));
    if (length > count) add_free_run(first + count, length - count);
    free_id_count_ -= count;
    return first;
}

void Residency::give_back_ids(ChunkId first, uint32_t count) {
    free_id_count_ += count;
    // Joined with the free runs right before and after, so that a larger
    // allocation fits where several small ones were.
    if (const auto after = free_runs_.find(first + count); after != free_runs_.end()) {
        count += after->second;
        drop_free_run(after);
    }
    if (auto before = free_runs_.lower_bound(first); before != free_runs_.begin()) {
        --before;
        if (before->first + before->second == first) {
            first = before->first;
            count += before->second;
            drop_free_run(before);
        }
    }
    add_free_run(first, count);
}

void Residency::add_free_run(ChunkId first, uint32_t length) {
    if (spare_run_nodes_.empty()) {
        free_runs_.emplace(first, length);
        free_runs_by_length_.emplace(length, first);
        return;
    }
    auto run = std::move(spare_run_nodes_.back());
    spare_run_nodes_.pop_back();
    run.key() = first;
    run.mapped() = length;
    free_runs_.insert(std::move(run));
    auto by_length = std::move(spare_length_nodes_.back());
    spare_length_nodes_.pop_back();
    by_length.value() = {length, first};
    free_runs_by_length_.insert(std::move(by_length));
}

void Residency::drop_free_run(std::map<ChunkId, uint32_t>::iterator run) {
    spare_length_nodes_.push_back(free_runs_by_length_.extract({run->second, run->first}));
    spare_run_nodes_.push_back(free_runs_.extract(run));
}

void Residency::reserve_chunk_slots(uint32_t slots) {
    last_use_.reserve(slots);
    alloc_slot_.reserve(slots);
    links_.reserve(slots);
    pinned_mark_.reserve(slots);
    live_.reserve(slots);
    resident_bits_.reserve((size_t{slots} + 63) / 64);
}

bool Residency::remove_allocation(uint32_t alloc_id) {
    const auto index = slot_index(alloc_id);
    if (!index) return false;
    AllocSlot& slot = allocs_[*index];
    for (ChunkId c = slot.first; c < slot.first + slot.count; ++c) {
        if (is_resident(c)) evict(c);
        pinned_mark_[c] = 0;
        live_[c] = 0;
        alloc_slot_[c] = kRemovedSlot;
    }
    if (ids_ == ChunkIds::Reused && slot.count > 0) give_back_ids(slot.first, slot.count);
    // The slot goes to the next allocation and the id is only remembered as
    // removed: a job that allocates anew every step keeps a bit per allocation
    // it ever made, not a slot.
    if (alloc_id < slot_by_id_.size()) slot_by_id_[alloc_id] = 0;
    else slot_of_sparse_id_.erase(alloc_id);
    remember_removed(alloc_id);
    free_slots_.push_back(*index);
    ++layout_version_;
    return true;
}

void Residency::remember_removed(uint32_t alloc_id) {
    if (alloc_id < kDenseRemovedIds) {
        const size_t word = alloc_id >> 6;
        if (word >= removed_bits_.size()) removed_bits_.resize(std::max(word + 1, 2 * removed_bits_.size()), 0);
        removed_bits_[word] |= uint64_t{1} << (alloc_id & 63);
    } else {
        removed_sparse_ids_.insert(alloc_id);
    }
}

std::optional<uint32_t> Residency::sparse_slot_index(uint32_t alloc_id) const {
    // Below kDenseIds an id has a place in the table, or has never been live.
    if (alloc_id < kDenseIds) return std::nullopt;
    const auto it = slot_of_sparse_id_.find(alloc_id);
    return it == slot_of_sparse_id_.end() ? std::nullopt : std::optional<uint32_t>(it->second);
}

bool Residency::is_live(uint32_t alloc_id) const {
    const AllocSlot* slot = find(alloc_id);
    return slot != nullptr;
}

bool Residency::was_removed(uint32_t alloc_id) const {
    if (alloc_id < kDenseRemovedIds) {
        const size_t word = alloc_id >> 6;
        return word < removed_bits_.size() && ((removed_bits_[word] >> (alloc_id & 63)) & 1);
    }
    return removed_sparse_ids_.contains(alloc_id);
}

ChunkId Residency::first_chunk(uint32_t alloc_id) const {
    const AllocSlot* slot = find(alloc_id);
    return slot ? slot->first : kNoChunk;
}

uint32_t Residency::chunk_count(uint32_t alloc_id) const {
    const AllocSlot* slot = find(alloc_id);
    return slot ? slot->count : 0;
}

std::optional<ChunkRange> Residency::chunks_of(uint32_t alloc_id) const {
    const AllocSlot* slot = find(alloc_id);
    if (!slot || slot->count == 0) return std::nullopt;
    return ChunkRange{slot->first, slot->first + slot->count - 1};
}

void Residency::launch_ranges(std::span<const trace::Access> accesses, std::vector<ChunkRange>& out,
                              uint64_t* not_live) const {
    out.clear();
    for (const trace::Access& access : accesses) {
        const AllocSlot* slot = find(access.alloc_id);
        if (!slot) {
            if (not_live) ++*not_live;
            continue;
        }
        if (access.offset >= slot->size) continue; // starts past its end: touches none of it
        // Computed in place rather than returned as an optional: that went
        // through the stack, and reading it back stalled on the two halves
        // just stored (a fifth of building the schedule).
        const uint64_t end = access.length == 0 ? slot->size : std::min(slot->size, access.offset + access.length);
        out.push_back({slot->first + static_cast<ChunkId>(access.offset >> chunk_shift_),
                       slot->first + static_cast<ChunkId>((end - 1) >> chunk_shift_)});
    }
    // A launch names a handful of buffers, often in address order already: a
    // plain insertion sort beats a general one there.
    const auto by_first = [](const ChunkRange& a, const ChunkRange& b) { return a.first < b.first; };
    if (out.size() <= 32) {
        for (size_t i = 1; i < out.size(); ++i) {
            const ChunkRange moving = out[i];
            size_t j = i;
            for (; j > 0 && moving.first < out[j - 1].first; --j) out[j] = out[j - 1];
            out[j] = moving;
        }
    } else {
        std::sort(out.begin(), out.end(), by_first);
    }
    // Overlapping or adjacent ranges become one.
    size_t merged = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        if (merged > 0 && out[i].first <= out[merged - 1].last + 1) out[merged - 1].last = std::max(out[merged - 1].last, out[i].last);
        else out[merged++] = out[i];
    }
    out.resize(merged);
}

uint64_t Residency::bytes_of(ChunkRange range) const {
    uint64_t bytes = 0;
    for (ChunkId c = range.first; c <= range.last;) {
        const ChunkId last = std::min(range.last, allocation_last_chunk(c));
        // Only an allocation's last chunk can be short.
        bytes += static_cast<uint64_t>(last - c) * chunk_bytes_ + chunk_size(last);
        c = last + 1;
    }
    return bytes;
}

uint64_t Residency::chunk_offset(ChunkId chunk) const {
    return static_cast<uint64_t>(chunk - allocs_[alloc_slot_[chunk]].first) << chunk_shift_;
}

uint64_t Residency::chunk_size(ChunkId chunk) const {
    const AllocSlot& slot = allocs_[alloc_slot_[chunk]];
    const uint64_t offset = static_cast<uint64_t>(chunk - slot.first) << chunk_shift_;
    return std::min(chunk_bytes_, slot.size - offset);
}

void Residency::make_resident(ChunkId chunk, uint64_t step) {
    if (is_resident(chunk)) return;
    set_resident_bit(chunk, true);
    last_use_[chunk] = step;
    resident_bytes_ += chunk_size(chunk);
    ++resident_chunks_;
    peak_held_bytes_ = std::max(peak_held_bytes_, held_bytes());
    if (keep_recency_) lru_push_back(chunk);
}

void Residency::set_dead_bytes(uint64_t bytes) {
    // Dead bytes never add to what is held: they were live ones, and they go
    // when reused, shed or given back. The peak moves with resident bytes.
    dead_bytes_ = bytes;
}

void Residency::evict(ChunkId chunk) {
    if (!is_resident(chunk)) return;
    set_resident_bit(chunk, false);
    resident_bytes_ -= chunk_size(chunk);
    --resident_chunks_;
    if (keep_recency_) lru_unlink(chunk);
}

void Residency::make_resident(ChunkRange range, uint64_t step) {
    if (first_resident(range) <= range.last) {
        for (ChunkId c = range.first; c <= range.last; ++c) make_resident(c, step);
        return;
    }
    std::fill(last_use_.begin() + range.first, last_use_.begin() + range.last + 1, step);
    add_missing_run(range);
}

void Residency::add_missing_run(ChunkRange range) {
    set_resident_bits(range, true);
    if (keep_recency_) {
        for (ChunkId c = range.first; c <= range.last; ++c) links_[c] = {c - 1, c + 1};
        lru_append_run(range);
    }
    resident_bytes_ += bytes_of(range);
    resident_chunks_ += range.last - range.first + 1;
    peak_held_bytes_ = std::max(peak_held_bytes_, held_bytes());
}

void Residency::evict(ChunkRange range) {
    for (ChunkId c = first_resident(range); c <= range.last; c = first_resident({c, range.last})) {
        // Runs of resident chunks; with the recency list, runs linked in order within them.
        const ChunkId end = keep_recency_ ? lru_run_end(c, range.last) : first_missing({c, range.last}) - 1;
        if (keep_recency_) lru_unlink_run({c, end});
        set_resident_bits({c, end}, false);
        resident_bytes_ -= bytes_of({c, end});
        resident_chunks_ -= end - c + 1;
        c = end + 1;
    }
}

ChunkId Residency::lru_run_end(ChunkId first, ChunkId last) const {
    ChunkId end = first;
    while (end < last && links_[end].next == end + 1) ++end;
    return end;
}

void Residency::lru_unlink_run(ChunkRange range) {
    const ChunkId before = links_[range.first].prev;
    const ChunkId after = links_[range.last].next;
    if (before != kNoChunk) links_[before].next = after;
    else lru_head_ = after;
    if (after != kNoChunk) links_[after].prev = before;
    else lru_tail_ = before;
    links_[range.first].prev = kNoChunk;
    links_[range.last].next = kNoChunk;
}

void Residency::keep_recency_order(bool keep) {
    if (keep == keep_recency_) return;
    if (resident_chunks_ != 0)
        throw std::logic_error("Residency::keep_recency_order: the order can change only while nothing is resident");
    keep_recency_ = keep;
}

void Residency::touch(ChunkId chunk, uint64_t step) {
    last_use_[chunk] = step;
    if (!keep_recency_ || !is_resident(chunk) || lru_tail_ == chunk) return;
    lru_unlink(chunk);
    lru_push_back(chunk);
}

uint64_t Residency::missing_bytes(ChunkRange range) const {
    // Mostly none is missing.
    ChunkId c = first_missing(range);
    uint64_t bytes = 0;
    while (c <= range.last && c < chunk_slots()) {
        bytes += chunk_size(c);
        c = first_missing({c + 1, range.last});
    }
    return bytes;
}

uint64_t Residency::scan_bits(ChunkRange range, uint64_t flip) const {
    const uint64_t end = std::min<uint64_t>(uint64_t{range.last} + 1, chunk_slots());
    for (uint64_t c = range.first; c < end;) {
        const unsigned bit = c & 63;
        // c's word from c on, flipped first: the bits shifted in at the top are zero.
        const uint64_t word = (resident_bits_[c >> 6] ^ flip) >> bit;
        if (word != 0) return std::min<uint64_t>(c + std::countr_zero(word), end);
        c += 64 - bit;
    }
    return end;
}

ChunkId Residency::first_resident(ChunkRange range) const {
    const uint64_t c = scan_bits(range, 0);
    return c <= range.last && c < chunk_slots() ? static_cast<ChunkId>(c) : range.last + 1;
}

ChunkId Residency::first_missing(ChunkRange range) const {
    // Past the chunks handed out, the first of the range is the first missing one.
    return static_cast<ChunkId>(std::max<uint64_t>(scan_bits(range, ~uint64_t{0}), range.first));
}

void Residency::pin_launch(std::span<const ChunkRange> ranges) {
    for (const ChunkRange& r : ranges)
        std::fill(pinned_mark_.begin() + r.first, pinned_mark_.begin() + r.last + 1, pin_mark_);
}

void Residency::unpin_launch() {
    if (++pin_mark_ != 0) return;
    // Marks wrapped around: the oldest ones would count again.
    std::fill(pinned_mark_.begin(), pinned_mark_.end(), 0);
    pin_mark_ = 1;
}

void Residency::lru_move_run_to_back(ChunkRange range) {
    if (lru_tail_ == range.last) return;
    lru_unlink_run(range);
    lru_append_run(range);
}

void Residency::lru_append_run(ChunkRange range) {
    links_[range.first].prev = lru_tail_;
    links_[range.last].next = kNoChunk;
    if (lru_tail_ != kNoChunk) links_[lru_tail_].next = range.first;
    else lru_head_ = range.first;
    lru_tail_ = range.last;
}

void Residency::lru_unlink(ChunkId chunk) {
    Link& link = links_[chunk];
    if (link.prev != kNoChunk) links_[link.prev].next = link.next;
    else lru_head_ = link.next;
    if (link.next != kNoChunk) links_[link.next].prev = link.prev;
    else lru_tail_ = link.prev;
    link.prev = link.next = kNoChunk;
}

void Residency::lru_push_back(ChunkId chunk) { lru_append_run({chunk, chunk}); }

} // namespace uvmp

#include "core/policy/lookahead.h"

#include <algorithm>

namespace uvmp {

void LookaheadPolicy::push_key(ChunkId chunk, const Residency& residency) {
    queue_.set(chunk, eviction_key(chunk, residency));
}

void LookaheadPolicy::note_keys_by_chunk(ChunkRange range, const Residency& residency) {
    for (ChunkId c = range.first; c <= range.last; ++c) note_key(c, eviction_key(c, residency));
}

void LookaheadPolicy::note_launch_keys(ChunkRange range, const Residency& residency) {
    note_keys_by_chunk(range, residency);
}

void LookaheadPolicy::note_fetched_keys(ChunkRange range, const Residency& residency) {
    note_keys_by_chunk(range, residency);
}

EvictionQueue::Entry LookaheadPolicy::find_victim(const Residency& residency, uint64_t above) {
    bool rebuilt = false;
    while (true) {
        if (queue_.empty()) {
            // A chunk made resident outside the policy (placed at allocation)
            // has no entry yet: look at all resident chunks once more.
            if (rebuilt || residency.resident_chunk_count() == 0) return {};
            rebuild_queue(residency);
            rebuilt = true;
            if (queue_.empty()) return {};
        }
        const EvictionQueue::Entry top = queue_.top();
        const ChunkId c = top.chunk;
        if (c >= residency.chunk_slots() || !residency.is_resident(c)) { // dropped by a free
            queue_.erase(c);
            continue;
        }
        if (top.key <= above) return {};
        if (residency.is_pinned(c) && !launch_ordered_out_) {
            // The launch's own chunks; their keys are set anew at its end. Those
            // with no predicted use rank first and come to the top one tensor
            // after another: the first met takes them all out of the queue.
            // (Taking out the rest as well, in every launch, costs more than it
            // saves: a tensor set again whole keeps its heap entry.)
            for (const ChunkRange& r : launch_ranges_) queue_.erase_ordered(r);
            launch_ordered_out_ = true;
            continue;
        }
        // A key can change without a touch (a predicted use that passed): the
        // entry is out of date, and the chunk competes again at its real key.
        // The entries right after it are mostly the rest of its tensor, out of
        // date alike: they are corrected with it.
        const uint64_t key = eviction_key(c, residency);
        if (key != top.key) {
            const ChunkId lowest = lowest_of_top_run(top, [&](ChunkId k) {
                return residency.is_resident(k) && eviction_key(k, residency) == key;
            });
            queue_.set_range(lowest, c, key);
            continue;
        }
        if (residency.is_pinned(c)) {
            set_aside_pinned_run(top, residency);
            continue;
        }
        return top;
    }
}

void LookaheadPolicy::set_aside_pinned_run(EvictionQueue::Entry top, const Residency& residency) {
    // The entries right after a pinned chunk are mostly the rest of its tensor,
    // pinned by the same launch: met at the top one by one, each would cost a
    // look for the top. Taken out together, the victims after them are the same.
    const ChunkId lowest = lowest_of_top_run(top, [&](ChunkId c) {
        return residency.is_resident(c) && residency.is_pinned(c) && eviction_key(c, residency) == top.key;
    });
    queue_.erase({lowest, top.chunk});
    for (ChunkId c = lowest; c <= top.chunk; ++c) pinned_aside_.push_back(c);
}

void LookaheadPolicy::note_evicted(uint64_t next_use) {
    if (horizon_valid_ && next_use < horizon_step_) {
        horizon_step_ = next_use;
        horizon_range_ = 0;
        horizon_offset_ = 0;
    }
}

void LookaheadPolicy::rebuild_queue(const Residency& residency) {
    rebuild_entries_.clear();
    const ChunkId slots = residency.chunk_slots();
    for (ChunkId c = 0; slots > 0 && (c = residency.first_resident({c, slots - 1})) < slots; ++c)
        rebuild_entries_.push_back({eviction_key(c, residency), c});
    queue_.assign(rebuild_entries_);
}

void LookaheadPolicy::plan(const LaunchView& launch, Residency& residency, Plan& out) {
    if (!begin_launch(launch, residency)) {
        forget_future();
        horizon_valid_ = false;
        // Only the keys that came from the forgotten future changed.
        for (ChunkId c : changed_keys_) {
            if (c < residency.chunk_slots() && residency.is_resident(c)) push_key(c, residency);
            else queue_.erase(c);
        }
    }
    changed_keys_.clear();
    // Chunks made resident outside the policy (placed at allocation) have no
    // entry: the queue holds fewer chunks than are resident.
    if (rebuild_pending_ || queue_.size() < residency.resident_chunk_count()) rebuild_queue(residency);
    rebuild_pending_ = false;
    launch_ranges_ = launch.ranges;
    launch_ordered_out_ = false;

    // The launch's own chunks first: whatever is missing faults in on demand,
    // displacing the chunks needed farthest ahead.
    uint64_t missing_bytes = 0;
    for (const ChunkRange& r : launch.ranges) missing_bytes += residency.missing_bytes(r);
    make_room(missing_bytes, 0, residency, out); // failing: the launch alone exceeds the budget
    for (const ChunkRange& r : launch.ranges) {
        residency.use(r, launch.step, [&](ChunkRange run) { Plan::add(out.demand, run, residency); });
        on_touch(r, launch.step);
    }
    // The launch's chunks are pinned until it is planned, so their new keys
    // (needed later now) can wait until the end: looking for victims then
    // does not keep meeting them at the top of the queue.

    fetch_ahead(launch.step, residency, out);

    // The chunks of one tensor mostly share their key: one queue entry for them all.
    for (const ChunkRange& r : launch.ranges) note_launch_keys(r, residency);
    flush_keys();
    // The launch's own chunks among them are back with their keys already.
    for (ChunkId c : pinned_aside_)
        if (residency.is_resident(c) && !queue_.contains(c)) push_key(c, residency);
    pinned_aside_.clear();
    launch_ranges_ = {}; // the view's, valid while planning
    // Entries of freed chunks leave the queue only when they reach its top;
    // start afresh when they dominate.
    if (queue_.size() > 2 * residency.resident_chunk_count() + 1024) rebuild_queue(residency);
}

void LookaheadPolicy::on_allocation_added(ChunkRange chunks) {
    queue_.erase(chunks);
    forget_chunks(chunks);
}

void LookaheadPolicy::note_key(ChunkRange range, uint64_t key) {
    const uint32_t count = range.last - range.first + 1;
    if (pending_.count > 0 && range.first == pending_.first + pending_.count && key == pending_.key) {
        pending_.count += count;
        return;
    }
    flush_keys();
    pending_ = {range.first, count, key};
}

void LookaheadPolicy::flush_keys() {
    if (pending_.count > 0) queue_.set_range(pending_.first, pending_.first + pending_.count - 1, pending_.key);
    pending_.count = 0;
}

void LookaheadPolicy::fetch_ahead(uint64_t step, Residency& residency, Plan& out) {
    fetch_ahead_until_full(step, residency, out);
    flush_keys();
}

void LookaheadPolicy::fetch_ahead_until_full(uint64_t step, Residency& residency, Plan& out) {
    if (!horizon_valid_ || horizon_step_ <= step) {
        horizon_step_ = step + 1;
        horizon_range_ = 0;
        horizon_offset_ = 0;
        horizon_valid_ = true;
    }
    const uint64_t last_step = step + config_.max_lookahead_launches;
    const ChunkId slots = residency.chunk_slots(); // no allocation comes or goes while planning
    for (; horizon_step_ <= last_step; ++horizon_step_, horizon_range_ = 0, horizon_offset_ = 0) {
        const auto future = future_ranges(horizon_step_, residency);
        if (!future) return;
        while (horizon_range_ < future->size()) {
            const ChunkRange range = (*future)[horizon_range_];
            const ChunkId from = range.first + horizon_offset_;
            // Most chunks are resident already: they are only noted as used then.
            // A future use only brings a key down (needed sooner); an entry left
            // too high is corrected when it reaches the top of the queue. (A
            // resident chunk exists: memory allocated later, or freed by then, has
            // nothing to fetch yet.)
            const ChunkId missing = residency.first_missing({from, range.last});
            if (missing > from) on_future_uses({from, missing - 1}, horizon_step_);
            if (missing > range.last) {
                ++horizon_range_;
                horizon_offset_ = 0;
                continue;
            }
            horizon_offset_ = missing - range.first;
            if (missing >= slots || !residency.is_chunk_live(missing)) {
                ++horizon_offset_;
                continue;
            }
            const ChunkRange run = missing_run(residency, missing, range.last);
            const uint32_t fetched = fetch_run(run, step, residency, out);
            horizon_offset_ += fetched;
            if (fetched < run.last - run.first + 1) return; // the budget holds only chunks needed sooner
        }
    }
}

ChunkRange LookaheadPolicy::missing_run(const Residency& residency, ChunkId first, ChunkId last) {
    // A few dozen at a time: when room runs out, the rest are looked at again later.
    constexpr ChunkId kMostAtOnce = 32;
    last = std::min({last, residency.chunk_slots() - 1, first + kMostAtOnce - 1});
    ChunkId run_last = residency.first_resident({first, last}) - 1;
    // The chunks of `first`'s allocation are live with it: only past its end
    // can a chunk of one that is not live come.
    for (ChunkId c = std::max(first, residency.allocation_last_chunk(first)) + 1; c <= run_last; ++c)
        if (!residency.is_chunk_live(c)) run_last = c - 1;
    return {first, run_last};
}

uint32_t LookaheadPolicy::fetch_run(ChunkRange run, uint64_t step, Residency& residency, Plan& out) {
    // The run makes room for itself at once: the same victims, in the same order,
    // as chunk by chunk. Only chunks needed after these may make room for them;
    // the chunks fetched so far are needed no later, so they can wait outside
    // the queue, and their run of keys grows as long as they come adjacent.
    ChunkId last = run.last;
    const bool room = swaps_to_fetch_ahead() ? make_room(residency.bytes_of(run), horizon_step_, residency, out)
                                             : residency.room_from_dead(residency.bytes_of(run));
    if (!room) {
        // As many as fit, in order.
        uint64_t free = residency.free_bytes();
        for (last = run.first; last <= run.last && free >= residency.chunk_size(last); ++last)
            free -= residency.chunk_size(last);
        if (last == run.first) return 0;
        --last;
    }
    residency.make_resident({run.first, last}, step);
    Plan::add(out.prefetch, {run.first, last}, residency);
    on_future_uses({run.first, last}, horizon_step_);
    note_fetched_keys({run.first, last}, residency);
    return last - run.first + 1;
}

bool LookaheadPolicy::make_room(uint64_t bytes, uint64_t above, Residency& residency, Plan& out) {
    residency.room_from_dead(bytes);
    while (residency.over_budget(bytes)) {
        const EvictionQueue::Entry victim = find_victim(residency, above);
        if (victim.chunk == kNoChunk) return false;
        evict_run(victim, bytes, residency, out);
    }
    return true;
}

void LookaheadPolicy::evict_run(EvictionQueue::Entry victim, uint64_t bytes, Residency& residency, Plan& out) {
    // The victims after one are mostly the chunks right below it in the same
    // tensor: take those the queue says come next, while they are evictable as
    // find_victim would find them, without going through the top for each.
    // Fewer than `bytes` are free, so this many must go (budget exceeded or not).
    const uint64_t excess = residency.held_bytes() + bytes - residency.budget_bytes();
    // Enough whole chunks for it; short ones leave the rest to the next round.
    const uint64_t wanted = (excess + residency.chunk_bytes() - 1) / residency.chunk_bytes();
    const uint32_t length = queue_.top_run_length(victim, static_cast<uint32_t>(std::min<uint64_t>(wanted, UINT32_MAX)));
    ChunkId lowest = victim.chunk; // taken: lowest..victim.chunk
    uint64_t taken = residency.chunk_size(victim.chunk);
    for (uint32_t k = 1; k < length && taken < excess; ++k) {
        const ChunkId c = victim.chunk - k;
        if (!residency.is_resident(c) || residency.is_pinned(c) || eviction_key(c, residency) != victim.key) break;
        taken += residency.chunk_size(c);
        lowest = c;
    }
    queue_.erase({lowest, victim.chunk});
    note_evicted(victim.key);
    residency.evict(ChunkRange{lowest, victim.chunk});
    Plan::add(out.evict, {lowest, victim.chunk}, residency);
}

} // namespace uvmp

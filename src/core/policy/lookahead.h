// The machinery shared by the policies that look ahead (belady, learned): fetch
// the chunks of upcoming launches in the order they will be needed, making room
// by evicting chunks needed later than the one fetched, and on a miss evict the
// chunk needed farthest in the future. Subclasses say what the future is.
#pragma once

#include "core/policy/eviction_queue.h"
#include "core/policy/policy.h"

#include <optional>
#include <span>
#include <vector>

namespace uvmp {

class LookaheadPolicy : public Policy {
public:
    // Keys at or above `ordered_keys_from` come in bulk or in order (see EvictionQueue).
    LookaheadPolicy(LookaheadConfig config, uint64_t ordered_keys_from) : config_(config), queue_(ordered_keys_from) {}
    void plan(const LaunchView& launch, Residency& residency, Plan& out) final;
    // Drops the chunks' queue entries, then tells the subclass (forget_chunks).
    void on_allocation_added(ChunkRange chunks) final;
    // Victims come from the queue of keys, never from the recency list.
    bool reads_recency_order() const final { return false; }

protected:
    // First thing for every launch. False when what was known of the future no
    // longer holds: fetching ahead restarts from the next launch.
    virtual bool begin_launch(const LaunchView& launch, const Residency& residency) = 0;
    // The chunks that launch `step` (after the current one) will touch, as
    // ascending ranges, none overlapping; nullopt when unknown. Valid until the next call.
    virtual std::optional<std::span<const ChunkRange>> future_ranges(uint64_t step, const Residency& residency) = 0;
    // Larger means needed later, so evicted sooner.
    virtual uint64_t eviction_key(ChunkId chunk, const Residency& residency) const = 0;
    // The current launch touches these chunks (its ranges come in ascending order).
    virtual void on_touch(ChunkRange range, uint64_t step) {}
    // Sets the keys of the current launch's chunks in `range` once it is planned,
    // through note_key: by default chunk by chunk from eviction_key().
    virtual void note_launch_keys(ChunkRange range, const Residency& residency);
    // The same for chunks just fetched ahead.
    virtual void note_fetched_keys(ChunkRange range, const Residency& residency);
    // Looking ahead found these chunks used at `step`, in ascending order. A key
    // may only go down (the chunk is needed sooner than thought).
    virtual void on_future_uses(ChunkRange chunks, uint64_t step) {}
    // Forget everything learned about the future (after begin_launch returned
    // false), reporting every chunk whose key that changes through key_changed().
    virtual void forget_future() {}
    // The chunks belong to a new allocation: nothing known of them holds.
    virtual void forget_chunks(ChunkRange chunks) {}
    // Whether a chunk fetched ahead may displace chunks needed after it (a swap),
    // or only fill room that is free.
    virtual bool swaps_to_fetch_ahead() const { return true; }
    // Every key may have changed (the subclass ranks chunks another way now):
    // the queue is built anew before the next victim is looked for.
    void keys_changed_all() { rebuild_pending_ = true; }
    // A chunk's key changed outside on_touch and on_future_uses.
    void key_changed(ChunkId chunk) { changed_keys_.push_back(chunk); }
    // Keys of chunks met in ascending order, set in the queue as runs: extends
    // the pending run or flushes it and starts another. Flushed before any look
    // for a victim that the pending run's keys could rank above.
    void note_key(ChunkId chunk, uint64_t key) { note_key({chunk, chunk}, key); }
    void note_key(ChunkRange range, uint64_t key);

private:
    void push_key(ChunkId chunk, const Residency& residency);
    void note_keys_by_chunk(ChunkRange range, const Residency& residency);
    // The queue's top once it is an unpinned resident chunk with its current key,
    // above `above`; its entry stays. Chunk kNoChunk when there is none.
    EvictionQueue::Entry find_victim(const Residency& residency, uint64_t above);
    // Takes the pinned chunk at the top out of the queue until the end of the
    // launch, with the pinned chunks that come right after it.
    void set_aside_pinned_run(EvictionQueue::Entry top, const Residency& residency);
    // The lowest chunk of the queue's top run (top.chunk, top.chunk - 1, ... with
    // the top's key) down to which every chunk below the top satisfies `fits`.
    template <class Fits>
    ChunkId lowest_of_top_run(EvictionQueue::Entry top, Fits&& fits) {
        const uint32_t length = queue_.top_run_length(top, UINT32_MAX);
        ChunkId lowest = top.chunk;
        for (uint32_t k = 1; k < length && fits(top.chunk - k); ++k) lowest = top.chunk - k;
        return lowest;
    }
    // Looking ahead may already have passed an evicted chunk's next use (it was
    // resident then): look again from there, or it would only come back by faulting.
    void note_evicted(uint64_t next_use);
    // Evicts victims with keys above `above` until `bytes` are free; false when
    // there are not enough of them.
    bool make_room(uint64_t bytes, uint64_t above, Residency& residency, Plan& out);
    // Evicts the victim and, while fewer than `bytes` would be free, the chunks
    // that come next in the queue as one run with it.
    void evict_run(EvictionQueue::Entry victim, uint64_t bytes, Residency& residency, Plan& out);
    void fetch_ahead(uint64_t step, Residency& residency, Plan& out);
    void fetch_ahead_until_full(uint64_t step, Residency& residency, Plan& out);
    // The chunks from `first` (missing, live) on that are missing and live too, within `last`.
    static ChunkRange missing_run(const Residency& residency, ChunkId first, ChunkId last);
    // Fetches such a run for the launch at the horizon, making room first; how many
    // chunks it fetched, fewer than the run when the room ran out.
    uint32_t fetch_run(ChunkRange run, uint64_t step, Residency& residency, Plan& out);
    void flush_keys();
    void rebuild_queue(const Residency& residency);

    LookaheadConfig config_;
    bool rebuild_pending_ = false;
    // Every resident chunk the policy knows of, by its current key.
    EvictionQueue queue_;
    // Pinned chunks taken out of the queue while looking for a victim; they go
    // back at the end of the launch.
    std::vector<ChunkId> pinned_aside_;
    // The launch being planned, and whether its chunks with ordered keys are
    // out of the queue.
    std::span<const ChunkRange> launch_ranges_;
    bool launch_ordered_out_ = false;
    std::vector<EvictionQueue::Entry> rebuild_entries_;
    std::vector<ChunkId> changed_keys_;
    struct KeyRun {
        ChunkId first = 0;
        uint32_t count = 0;
        uint64_t key = 0;
    };
    KeyRun pending_;
    uint64_t horizon_step_ = 0; // next launch to fetch for
    size_t horizon_range_ = 0;  // next range of that launch
    uint32_t horizon_offset_ = 0; // next chunk of that range, counted from its first
    bool horizon_valid_ = false;
};

} // namespace uvmp

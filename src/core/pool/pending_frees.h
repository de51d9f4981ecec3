// Stream-ordered reuse, as CUDA's stream-ordered allocator has it: a block
// freed on stream S with fence F (an event recorded on S at the free) stays
// pending on S, usable at once by allocations on S, until F completes; then it
// is ready for every stream. This keeps the fences handed to free(), each
// stream's list of those not known complete (in the order they were recorded,
// which is the order they complete in), the pieces waiting on each, and which
// fences to ask about, wait for or destroy.
#pragma once

#include "core/pool/block_placement.h"
#include "core/util/flat_map.h"
#include "core/pool/free_index.h"
#include "core/pool/node_recycler.h"
#include "core/pool/pool_pieces.h"

#include <cstdint>
#include <vector>

namespace uvmp::pool {

struct StreamFrees;

// A fence handed to free(), held while pieces wait on it (refs) or while a
// thread waits on it outside the book's lock (pins).
struct HeldFence {
    FenceKey key = 0;
    StreamKey stream = 0;
    uint64_t seq = 0;            // the free sequence number: later frees, larger numbers
    uint32_t refs = 0;           // pending pieces waiting on it
    uint32_t pins = 0;
    bool listed = false;         // in its stream's list of fences not known complete
    bool completed = false;
    StreamFrees* owner = nullptr; // while listed
    HeldFence* prev = nullptr;   // the stream's list, in seq order
    HeldFence* next = nullptr;
    Piece* pieces = nullptr;     // those waiting on it
};

// One stream's pending frees, and its fences not known complete.
struct StreamFrees {
    StreamKey key = 0;
    FreeIndex pending;
    HeldFence* oldest = nullptr;
    HeldFence* newest = nullptr;
};

// The fences asked about in one call: at most kMax, none twice.
class FenceQueries {
public:
    static constexpr int kMax = 32;
    bool full() const { return count_ == kMax; }
    // True when the key may be asked now (and records it).
    bool take(FenceKey key) {
        for (int i = 0; i < count_; ++i)
            if (keys_[i] == key) return false;
        if (full()) return false;
        keys_[count_++] = key;
        return true;
    }

private:
    FenceKey keys_[kMax];
    int count_ = 0;
};

// Told of each piece whose fence has completed: it is ready for every stream.
class ReadyPieceSink {
public:
    // The piece is still in its pending index, no longer on its fence.
    virtual void piece_ready(Piece* piece) = 0;

protected:
    ~ReadyPieceSink() = default;
};

class PendingFrees {
public:
    // `unit_shift`: the alignment's log2, for the streams' pending indexes.
    PendingFrees(FenceOracle& oracle, unsigned unit_shift, ReadyPieceSink& sink)
        : oracle_(oracle), sink_(sink), unit_shift_(unit_shift) {}

    StreamFrees* stream_of(StreamKey key) {
        StreamFrees** found = streams_.find(key);
        return found ? *found : nullptr;
    }
    StreamFrees& stream_for(StreamKey key);
    // The record of a fence handed to free() on `stream`.
    HeldFence* fence_for(FenceKey key, StreamKey stream);
    HeldFence* held(FenceKey key) {
        HeldFence** found = fences_.find(key);
        return found ? *found : nullptr;
    }
    // A fence handed with a free that changed nothing, or that nothing waits
    // on: destroyed once the lock is left.
    void disown(FenceKey fence) {
        if (fence != 0 && !fences_.find(fence)) doomed_.push_back(fence);
    }

    static void attach(Piece* s, HeldFence* f) {
        s->fence = f;
        s->stream = f->stream;
        s->fence_prev = nullptr;
        s->fence_next = f->pieces;
        if (f->pieces) f->pieces->fence_prev = s;
        f->pieces = s;
        ++f->refs;
    }
    // Leaves the fence's count one lower; the caller settles the fence.
    static void detach(Piece* s) {
        HeldFence* f = s->fence;
        if (s->fence_prev) s->fence_prev->fence_next = s->fence_next;
        else f->pieces = s->fence_next;
        if (s->fence_next) s->fence_next->fence_prev = s->fence_prev;
        s->fence = nullptr;
        s->fence_prev = s->fence_next = nullptr;
        --f->refs;
    }
    // Lets go of `f` once no piece waits on it.
    void settle(HeldFence* f) {
        if (f->refs == 0) retire(f);
    }

    // Every fence of the stream up to `seq` has completed (events on one stream
    // complete in order): their pieces go to the sink.
    void complete_through(StreamFrees& st, uint64_t seq);
    // Whether `f`, not known complete, has completed by now (asked at once).
    bool completed_now(const HeldFence* f) { return f->listed && oracle_.completed(f->key); }
    // Asks about `f` within `asked` and completes it (and those before it) if done.
    void complete_if_done(HeldFence* f, FenceQueries& asked);

    // Asks (boundedly) which pending frees have completed, and completes them,
    // before the pool makes a slab for a request of `size`.
    void poll(uint64_t size, uint64_t now, FenceQueries& asked, const BlockPlacement& placement);

    // Pinned fences stay held while a thread waits on them without the lock.
    static void pin(HeldFence* f) { ++f->pins; }
    // Pins the fence of the pending piece (of a stream other than `stream`) that
    // would best hold `size`.
    HeldFence* pin_fitting(uint64_t size, StreamKey stream, const BlockPlacement& placement);
    // Pins every stream's newest pending fence.
    std::vector<HeldFence*> pin_newest();
    // `f` (pinned) has been waited for.
    void finish_wait(HeldFence* f);

    // Forgets streams with nothing pending.
    void forget_idle_streams();

    FenceOracle& oracle() { return oracle_; }
    // Fences to destroy once the lock is left.
    std::vector<FenceKey>& doomed() { return doomed_; }
    template <class F>
    void for_each_held(F&& f) const {
        fences_.for_each([&](uint64_t key, HeldFence*) { f(key); });
    }

private:
    static void list_insert(StreamFrees& st, HeldFence* f);
    static void list_erase(HeldFence* f);
    void drop(HeldFence* f);
    // No piece waits on `f` any more.
    void retire(HeldFence* f) {
        if (f->listed) list_erase(f);
        if (f->pins == 0) drop(f);
    }
    void unpin(HeldFence* f) {
        if (--f->pins == 0 && f->refs == 0 && !f->listed) drop(f);
    }

    FenceOracle& oracle_;
    ReadyPieceSink& sink_;
    const unsigned unit_shift_;
    FlatMap<StreamFrees*> streams_; // streams with pending pieces or fences
    FlatMap<HeldFence*> fences_;    // every fence held
    NodeRecycler<HeldFence> fence_nodes_;
    NodeRecycler<StreamFrees> stream_nodes_;
    uint64_t next_seq_ = 1;
    uint64_t last_sweep_ = kNever; // of poll()
    std::vector<FenceKey> doomed_;
};

} // namespace uvmp::pool

#include "core/pool/pending_frees.h"

namespace uvmp::pool {
namespace {

// The fences of one stream searched (oldest first) for the newest completed one.
constexpr size_t kSearchedFences = 1024;
// The sweep of every stream's fences runs at most this often (of now_ns).
constexpr uint64_t kSweepNs = 1'000'000;

} // namespace

StreamFrees& PendingFrees::stream_for(StreamKey key) {
    if (StreamFrees* st = stream_of(key)) return *st;
    StreamFrees* st = stream_nodes_.make(key, FreeIndex(unit_shift_));
    streams_.insert(key, st);
    return *st;
}

HeldFence* PendingFrees::fence_for(FenceKey key, StreamKey stream) {
    if (HeldFence** held = fences_.find(key)) {
        // A fence the pool still holds, handed again: the same fence.
        HeldFence* f = *held;
        if (!f->listed) list_insert(stream_for(f->stream), f);
        return f;
    }
    HeldFence* f = fence_nodes_.make();
    f->key = key;
    f->stream = stream;
    f->seq = next_seq_++;
    fences_.insert(key, f);
    list_insert(stream_for(stream), f);
    return f;
}

void PendingFrees::list_insert(StreamFrees& st, HeldFence* f) {
    // Fences arrive in seq order, so this is the newest but for a fence handed twice.
    HeldFence* after = st.newest;
    while (after && after->seq > f->seq) after = after->prev;
    f->prev = after;
    f->next = after ? after->next : st.oldest;
    if (f->next) f->next->prev = f;
    else st.newest = f;
    if (after) after->next = f;
    else st.oldest = f;
    f->owner = &st;
    f->listed = true;
}

void PendingFrees::list_erase(HeldFence* f) {
    StreamFrees& st = *f->owner;
    if (f->prev) f->prev->next = f->next;
    else st.oldest = f->next;
    if (f->next) f->next->prev = f->prev;
    else st.newest = f->prev;
    f->prev = f->next = nullptr;
    f->owner = nullptr;
    f->listed = false;
}

void PendingFrees::drop(HeldFence* f) {
    fences_.erase(f->key);
    doomed_.push_back(f->key);
    fence_nodes_.recycle(f);
}

void PendingFrees::complete_through(StreamFrees& st, uint64_t seq) {
    while (st.oldest && st.oldest->seq <= seq) {
        HeldFence* f = st.oldest;
        f->completed = true;
        while (Piece* s = f->pieces) {
            detach(s);
            sink_.piece_ready(s);
        }
        retire(f);
    }
}

void PendingFrees::complete_if_done(HeldFence* f, FenceQueries& asked) {
    if (asked.take(f->key) && oracle_.completed(f->key)) complete_through(*f->owner, f->seq);
}

void PendingFrees::finish_wait(HeldFence* f) {
    if (!f->completed) {
        f->completed = true;
        if (f->listed) complete_through(*f->owner, f->seq);
        else if (StreamFrees* st = stream_of(f->stream)) complete_through(*st, f->seq);
    }
    unpin(f);
}

// First, of each stream, the fence of its pending piece that would best hold
// the request (the fences before it on the stream complete with it); then each
// stream's newest fence (all of the stream with it: pieces may coalesce); then,
// at most once a millisecond of now, a binary search of each stream's fences
// for the newest completed one, so that streams whose newest frees are always
// in flight give back the rest.
void PendingFrees::poll(uint64_t size, uint64_t now, FenceQueries& asked, const BlockPlacement& placement) {
    auto ask = [&](HeldFence* f) { return asked.take(f->key) && oracle_.completed(f->key); };
    std::vector<StreamFrees*> order;
    streams_.for_each([&](uint64_t, StreamFrees* st) {
        if (st->newest) order.push_back(st);
    });
    bool completed = false;
    for (StreamFrees* st : order) {
        uint64_t start = 0;
        Piece* fit = placement.best_in(st->pending, size, start);
        if (fit && ask(fit->fence)) {
            complete_through(*st, fit->fence->seq);
            completed = true;
        }
    }
    for (StreamFrees* st : order)
        if (st->newest && ask(st->newest)) {
            complete_through(*st, st->newest->seq);
            completed = true;
        }
    if (completed || asked.full() || (now >= last_sweep_ && now - last_sweep_ < kSweepNs)) return;
    last_sweep_ = now;
    std::vector<HeldFence*> list;
    for (StreamFrees* st : order) {
        if (asked.full()) break;
        list.clear();
        for (HeldFence* f = st->oldest; f && f != st->newest && list.size() < kSearchedFences; f = f->next)
            list.push_back(f);
        // list[0, lo) completed, list[hi, ...) not (as far as asked).
        size_t lo = 0, hi = list.size();
        while (lo < hi && !asked.full()) {
            const size_t mid = lo + (hi - lo) / 2;
            if (!asked.take(list[mid]->key)) break;
            if (oracle_.completed(list[mid]->key)) lo = mid + 1;
            else hi = mid;
        }
        if (lo > 0) complete_through(*st, list[lo - 1]->seq);
    }
}

HeldFence* PendingFrees::pin_fitting(uint64_t size, StreamKey stream, const BlockPlacement& placement) {
    Piece* best = nullptr;
    streams_.for_each([&](uint64_t key, StreamFrees* st) {
        if (key == stream || st->pending.empty()) return;
        uint64_t start = 0;
        Piece* fit = placement.best_in(st->pending, size, start);
        if (fit && (!best || fit->size < best->size)) best = fit;
    });
    if (!best) return nullptr;
    pin(best->fence);
    return best->fence;
}

std::vector<HeldFence*> PendingFrees::pin_newest() {
    std::vector<HeldFence*> pinned;
    streams_.for_each([&](uint64_t, StreamFrees* st) {
        if (st->newest) {
            pin(st->newest);
            pinned.push_back(st->newest);
        }
    });
    return pinned;
}

void PendingFrees::forget_idle_streams() {
    std::vector<StreamFrees*> idle;
    streams_.for_each([&](uint64_t, StreamFrees* st) {
        if (st->pending.empty() && !st->oldest) idle.push_back(st);
    });
    for (StreamFrees* st : idle) {
        streams_.erase(st->key);
        stream_nodes_.recycle(st);
    }
}

} // namespace uvmp::pool

#include "core/pool/pool_book.h"

#include "core/pool/placement_hint.h"

#include "core/util/round_up.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

namespace uvmp::pool {
namespace {

constexpr uint64_t kNever = ~uint64_t{0};
// Larger requests are refused outright (rounding them would overflow).
constexpr uint64_t kMaxRequest = uint64_t{1} << 62;
// Free blocks looked at in one search before it jumps to the sizes that always
// fit: bounded work for a request that must start on a chunk boundary.
constexpr int kScan = 16;
// Pieces of each index weighed by a placement over dead memory.
constexpr int kHintCandidates = 16;
// Dead extents of one piece weighed, at most.
constexpr size_t kHintExtents = 16;
// Pieces of one size bin walked to keep it in ascending size.
constexpr int kInsertWalk = 64;
// Fences asked about in one call, at most.
constexpr int kMaxQueries = 32;
// The fences of one stream searched (oldest first) for the newest completed one.
constexpr size_t kSearchedFences = 1024;
// Waits for single pending frees in one allocation that found no slab.
constexpr int kMaxWaits = 64;
// The sweep of every stream's fences runs at most this often (of now_ns).
constexpr uint64_t kSweepNs = 1'000'000;

uint64_t saturating_add(uint64_t a, uint64_t b) { return a > kNever - b ? kNever : a + b; }

struct Slab;
struct Fence;

struct Tag {
    uint64_t used = 0, high = 0, blocks = 0;
};

enum class Kind : uint8_t { Live, Ready, Pending };

class FreeIndex;

// A piece of a slab: a live block, or a free block ready for every stream, or a
// free block pending on its fence's stream. The pieces of a slab form a list in
// address order that covers it; no two adjacent free pieces could be merged.
struct Seg {
    uint64_t addr = 0, size = 0;
    Slab* slab = nullptr;
    Seg* prev = nullptr; // address order within the slab
    Seg* next = nullptr;
    Kind kind = Kind::Ready;
    FreeIndex* index = nullptr; // free: the ready index, or its stream's pending index
    Seg* bprev = nullptr;       // the index's size bin
    Seg* bnext = nullptr;
    uint32_t bin = 0;
    Fence* fence = nullptr;     // pending
    StreamKey stream = 0;       // pending: the fence's stream
    Seg* fprev = nullptr;       // the fence's blocks
    Seg* fnext = nullptr;
    Tag* tag = nullptr;         // live
};

struct Stream;

// A fence handed to free(), held while blocks wait on it (refs) or while a
// thread waits on it outside the mutex (pins).
struct Fence {
    FenceKey key = 0;
    StreamKey stream = 0;
    uint64_t seq = 0;         // the free sequence number: later frees, larger numbers
    uint32_t refs = 0;        // pending blocks waiting on it
    uint32_t pins = 0;
    bool listed = false;      // in its stream's list of fences not known complete
    bool completed = false;
    Stream* owner = nullptr;  // while listed
    Fence* prev = nullptr;    // the stream's list, in seq order
    Fence* next = nullptr;
    Seg* blocks = nullptr;
};

struct Slab {
    uint32_t id = 0;
    uint64_t base = 0, bytes = 0;
    uint32_t live = 0;        // live blocks
    uint32_t pending = 0;     // free blocks pending on a fence
    uint64_t empty_since = 0; // when its last live block was freed
    bool wholly_free = false; // no live block and every free block ready: one ready piece
    bool arena = false;       // PoolBook::make_arena's: placed in by allocate_at only
    Seg* first = nullptr;
    // The piece holding each chunk's first byte, for find().
    std::vector<Seg*> chunk_piece;
    // Chunks some block has covered: a managed slab holds memory only where its
    // pages were populated, and a block's pages stay when it is freed.
    std::vector<bool> backed;
    uint64_t backed_bytes = 0;
};

// Free pieces by size: bins exact below 128 units of the alignment, then 64
// to each power of two; each bin's list in ascending size (equal sizes: the
// most recently freed first). A bitmap finds the next bin that holds any.
class FreeIndex {
public:
    static constexpr unsigned kBins = 128 + 56 * 64;
    static constexpr unsigned kWords = (kBins + 63) / 64;
    static_assert(kWords <= 64);

    explicit FreeIndex(unsigned unit_shift = 0) : shift_(unit_shift) {}

    bool empty() const { return count_ == 0; }

    void insert(Seg* s) {
        const uint32_t b = bin_of(s->size);
        s->index = this;
        s->bin = b;
        Seg*& head = heads_[b];
        if (!head || head->size >= s->size) {
            s->bprev = nullptr;
            s->bnext = head;
            if (head) head->bprev = s;
            head = s;
            words_[b >> 6] |= uint64_t{1} << (b & 63);
            summary_ |= uint64_t{1} << (b >> 6);
        } else {
            // Bounded: past kInsertWalk pieces the list is left out of order
            // there (searches check every size; the fit may be a little worse).
            Seg* p = head;
            for (int n = 0; p->bnext && p->bnext->size < s->size && n < kInsertWalk; ++n) p = p->bnext;
            s->bprev = p;
            s->bnext = p->bnext;
            if (p->bnext) p->bnext->bprev = s;
            p->bnext = s;
        }
        ++count_;
    }

    void erase(Seg* s) {
        const uint32_t b = s->bin;
        if (s->bprev) s->bprev->bnext = s->bnext;
        else heads_[b] = s->bnext;
        if (s->bnext) s->bnext->bprev = s->bprev;
        if (!heads_[b]) {
            words_[b >> 6] &= ~(uint64_t{1} << (b & 63));
            if (!words_[b >> 6]) summary_ &= ~(uint64_t{1} << (b >> 6));
        }
        s->bprev = s->bnext = nullptr;
        s->index = nullptr;
        --count_;
    }

    // The smallest piece that holds `size` where `place` puts it; pieces of at
    // least `sure` bytes hold it wherever they lie. Bounded: past kScan pieces
    // the search takes the first piece of a bin above sure's.
    template <class Place>
    Seg* best(uint64_t size, uint64_t sure, Place&& place, uint64_t& start) const {
        if (count_ == 0) return nullptr;
        int looked = 0;
        const uint32_t first = bin_of(size);
        for (uint32_t b = first; b < kBins; b = next_bin(b + 1)) {
            for (Seg* p = heads_[b]; p; p = p->bnext) {
                if (++looked > kScan) goto jump;
                if (p->size >= size && place(p, size, start)) return p;
            }
        }
        return nullptr;
    jump:
        for (uint32_t b = next_bin(bin_of(sure) + 1); b < kBins; b = next_bin(b + 1))
            for (Seg* p = heads_[b]; p; p = p->bnext)
                if (place(p, size, start)) return p;
        return nullptr;
    }

    // Each piece of at least `size` bytes, smallest first, until `visit` returns
    // false or `limit` pieces have been visited.
    template <class Visit>
    void each_holding(uint64_t size, int limit, Visit&& visit) const {
        if (count_ == 0) return;
        int visited = 0;
        for (uint32_t b = next_bin(bin_of(size)); b < kBins; b = next_bin(b + 1))
            for (Seg* p = heads_[b]; p; p = p->bnext) {
                if (p->size < size) continue;
                if (++visited > limit || !visit(p)) return;
            }
    }

private:
    uint32_t bin_of(uint64_t size) const {
        const uint64_t u = size >> shift_;
        if (u < 128) return static_cast<uint32_t>(u);
        const unsigned top = 63u - static_cast<unsigned>(std::countl_zero(u));
        const uint32_t b = 128 + (top - 7) * 64 + static_cast<uint32_t>((u >> (top - 6)) & 63);
        return std::min(b, kBins - 1);
    }
    // The first bin at or after b that holds a piece; kBins if none.
    uint32_t next_bin(uint32_t b) const {
        if (b >= kBins) return kBins;
        unsigned w = b >> 6;
        uint64_t bits = words_[w] & (~uint64_t{0} << (b & 63));
        if (!bits) {
            const uint64_t rest = w + 1 < 64 ? summary_ & (~uint64_t{0} << (w + 1)) : 0;
            if (!rest) return kBins;
            w = static_cast<unsigned>(std::countr_zero(rest));
            bits = words_[w];
        }
        return w * 64 + static_cast<uint32_t>(std::countr_zero(bits));
    }

    std::array<Seg*, kBins> heads_{};
    std::array<uint64_t, kWords> words_{};
    uint64_t summary_ = 0;
    size_t count_ = 0;
    unsigned shift_ = 0;
};

struct Stream {
    StreamKey key = 0;
    FreeIndex pending;        // free blocks pending on this stream
    Fence* head = nullptr;    // the oldest fence not known complete
    Fence* tail = nullptr;    // the newest
};

// Open addressing with linear probing and backward-shift deletion; keys are
// anything but kEmpty (no block starts at, and no handle is, 2^64 - 1).
template <class V>
class Table {
public:
    static constexpr uint64_t kEmpty = ~uint64_t{0};

    Table() { rehash(64); }

    V* find(uint64_t key) {
        for (size_t i = home(key);; i = (i + 1) & mask_) {
            if (slots_[i].key == key) return &slots_[i].value;
            if (slots_[i].key == kEmpty) return nullptr;
        }
    }
    const V* find(uint64_t key) const { return const_cast<Table*>(this)->find(key); }

    // `key` must be absent.
    void insert(uint64_t key, V value) {
        if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
        size_t i = home(key);
        while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
        slots_[i] = {key, value};
        ++size_;
    }

    bool erase(uint64_t key) { return take(key, nullptr); }

    // Erases `key`, its value to *out; false when absent.
    bool take(uint64_t key, V* out) {
        size_t i = home(key);
        while (slots_[i].key != key) {
            if (slots_[i].key == kEmpty) return false;
            i = (i + 1) & mask_;
        }
        if (out) *out = slots_[i].value;
        for (size_t j = (i + 1) & mask_; slots_[j].key != kEmpty; j = (j + 1) & mask_) {
            const size_t k = home(slots_[j].key);
            // The entry at j may fill the hole at i if i lies on its probe path.
            if (((i - k) & mask_) < ((j - k) & mask_)) {
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i].key = kEmpty;
        --size_;
        return true;
    }

    size_t size() const { return size_; }

    template <class F>
    void for_each(F&& f) const {
        for (const Entry& e : slots_)
            if (e.key != kEmpty) f(e.key, e.value);
    }

private:
    struct Entry {
        uint64_t key = kEmpty;
        V value{};
    };
    size_t home(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }
    void rehash(size_t slots) {
        std::vector<Entry> old = std::move(slots_);
        slots_.assign(slots, Entry{});
        mask_ = slots - 1;
        shift_ = 64 - static_cast<unsigned>(std::countr_zero(slots));
        size_ = 0;
        for (const Entry& e : old)
            if (e.key != kEmpty) insert(e.key, e.value);
    }

    std::vector<Entry> slots_;
    size_t mask_ = 0;
    unsigned shift_ = 0;
    size_t size_ = 0;
};

// Nodes kept for reuse: no allocation per call in the steady state.
template <class T>
class Nodes {
public:
    template <class... Args>
    T* make(Args&&... args) {
        if (spare_.empty()) return &store_.emplace_back(std::forward<Args>(args)...);
        T* node = spare_.back();
        spare_.pop_back();
        *node = T{std::forward<Args>(args)...};
        return node;
    }
    void recycle(T* node) { spare_.push_back(node); }

private:
    std::deque<T> store_;
    std::vector<T*> spare_;
};

struct Gone {
    uint32_t id;
    uint64_t base, bytes;
};

// The keys asked about in one call.
struct Asked {
    FenceKey keys[kMaxQueries];
    int count = 0;
    bool full() const { return count == kMaxQueries; }
    // True when the key may be asked now (and records it).
    bool take(FenceKey key) {
        for (int i = 0; i < count; ++i)
            if (keys[i] == key) return false;
        if (full()) return false;
        keys[count++] = key;
        return true;
    }
};

} // namespace

struct PoolBook::State {
    State(const PoolConfig& c, SlabSource& s, FenceOracle& o)
        : cfg(c), source(s), oracle(o), unit_shift(static_cast<unsigned>(std::countr_zero(c.alignment))),
          chunk_shift(static_cast<unsigned>(std::countr_zero(c.chunk_bytes))), ready(unit_shift),
          arena_free(unit_shift) {}

    const PoolConfig& cfg;
    SlabSource& source;
    FenceOracle& oracle;
    const unsigned unit_shift, chunk_shift;

    FreeIndex ready;
    // The arena's free pieces, ready or pending alike: never searched (allocate_at
    // finds its piece by address), kept only so that a free piece has an index.
    FreeIndex arena_free;
    Slab* arena = nullptr;
    Table<Seg*> live;               // live blocks by address
    Table<Stream*> streams;         // streams with pending blocks or fences
    Table<Fence*> fences;           // every fence held
    std::unordered_map<PoolTag, Tag> tags;
    std::map<uint64_t, Slab*> slab_at; // by base
    std::vector<std::unique_ptr<Slab>> slabs;
    Nodes<Seg> seg_nodes;
    Nodes<Fence> fence_nodes;
    Nodes<Stream> stream_nodes;
    PoolTag last_tag = 0;
    Tag* last_tag_figures = nullptr;
    uint32_t next_slab_id = cfg.first_slab_id;
    uint64_t next_seq = 1;
    uint64_t reserved = 0, reserved_high = 0; // backed bytes of the slabs
    uint64_t slab_bytes = 0;
    uint64_t used = 0, used_high = 0, blocks = 0;
    // release_idle runs from allocate/free only once now_ns reaches this.
    uint64_t next_idle_check = kNever;
    uint64_t last_sweep = kNever; // of poll()
    // The last pass kept slabs for retain_bytes: a slab that becomes wholly free
    // may push the oldest of them out.
    bool retaining = false;
    // Fences to destroy once the mutex is released.
    std::vector<FenceKey> doomed;
    std::shared_ptr<const PlacementHint> hint;

    // --- placement -----------------------------------------------------------

    FreeIndex& ready_index(const Slab* slab) { return slab->arena ? arena_free : ready; }
    FreeIndex& pending_index(Stream& st, const Slab* slab) { return slab->arena ? arena_free : st.pending; }

    // Where a block of `size` would start in free piece `s`, if it fits.
    bool place(const Seg* s, uint64_t size, uint64_t& start) const {
        if (s->size < size) return false;
        if (size < cfg.chunk_bytes) {
            start = s->addr;
            return true;
        }
        const uint64_t base = s->slab->base;
        const uint64_t at = base + round_up(s->addr - base, cfg.chunk_bytes);
        if (at - s->addr > s->size - size) return false;
        start = at;
        return true;
    }

    uint64_t sure_size(uint64_t size) const {
        return size < cfg.chunk_bytes ? size : size + cfg.chunk_bytes - cfg.alignment;
    }

    Seg* best_in(const FreeIndex& index, uint64_t size, uint64_t& start) const {
        return index.best(size, sure_size(size),
                          [this](const Seg* s, uint64_t n, uint64_t& at) { return place(s, n, at); }, start);
    }

    Stream* stream_of(StreamKey key) {
        Stream** found = streams.find(key);
        return found ? *found : nullptr;
    }
    Stream& stream_for(StreamKey key) {
        if (Stream* st = stream_of(key)) return *st;
        Stream* st = stream_nodes.make(key, FreeIndex(unit_shift));
        streams.insert(key, st);
        return *st;
    }

    // Best fit over the blocks usable on `stream`: ready ones and those pending
    // on `stream` (preferred when as small: ready memory stays for everyone).
    // With a hint, a block of a chunk or more goes where it covers the most dead
    // bytes still on the GPU, if any (find_fit_over_dead).
    Seg* find_fit(uint64_t size, StreamKey stream, uint64_t& start) {
        if (hint && size >= cfg.chunk_bytes)
            if (Seg* over_dead = find_fit_over_dead(size, stream, start)) return over_dead;
        Seg* fit = best_in(ready, size, start);
        if (stream != kNoStream) {
            Stream* st = stream_of(stream);
            if (st && !st->pending.empty()) {
                uint64_t own_start = 0;
                Seg* own = best_in(st->pending, size, own_start);
                if (own && (!fit || own->size <= fit->size)) {
                    fit = own;
                    start = own_start;
                }
            }
        }
        return fit;
    }

    // A block placed over dead bytes resident on the GPU takes their pages as
    // they are; placed beside them, it has pages made and leaves them to be
    // evicted. Among the first pieces of each index that hold the block (smallest
    // first), and within each at its start or flush with a dead extent's either
    // end, the placement covering the most dead bytes; ties go to the smaller
    // piece, then to the stream's own pending one. nullptr when none covers any.
    Seg* find_fit_over_dead(uint64_t size, StreamKey stream, uint64_t& start) {
        Seg* best = nullptr;
        uint64_t best_start = 0, best_cover = 0;
        std::array<Extent, kHintExtents> extents;
        auto weigh = [&](Seg* p) {
            uint64_t at = 0;
            if (!place(p, size, at)) return true;
            const uint64_t piece_end = p->addr + p->size;
            const size_t n = hint->resident_dead(p->addr, piece_end, extents);
            if (n == 0) return true;
            const std::span<const Extent> dead(extents.data(), n);
            const uint64_t base = p->slab->base;
            auto cover = [&](uint64_t from) {
                uint64_t bytes = 0;
                for (const Extent& e : dead) {
                    const uint64_t lo = std::max(e.begin, from), hi = std::min(e.end, from + size);
                    if (lo < hi) bytes += hi - lo;
                }
                return bytes;
            };
            // The chunk-aligned start at or below `want`, moved up into the piece
            // and down to where the block still ends within it.
            auto aligned = [&](uint64_t want) -> std::optional<uint64_t> {
                uint64_t from = base + (std::max(want, at) - base) / cfg.chunk_bytes * cfg.chunk_bytes;
                if (from < at) from = at;
                if (from + size > piece_end) {
                    if (piece_end - size < at) return std::nullopt;
                    from = base + (piece_end - size - base) / cfg.chunk_bytes * cfg.chunk_bytes;
                    if (from < at) return std::nullopt;
                }
                return from;
            };
            auto consider = [&](uint64_t from) {
                const uint64_t bytes = cover(from);
                const bool better = bytes > best_cover ||
                                    (bytes == best_cover && bytes > 0 && best && p->size < best->size);
                if (better) {
                    best = p;
                    best_start = from;
                    best_cover = bytes;
                }
            };
            consider(at);
            for (const Extent& e : dead) {
                if (const auto from = aligned(e.begin)) consider(*from);
                if (e.end >= size)
                    if (const auto from = aligned(e.end - size)) consider(*from);
            }
            // Nothing covers more than the whole block, and later pieces are no smaller.
            return best_cover < size;
        };
        if (stream != kNoStream)
            if (Stream* st = stream_of(stream)) st->pending.each_holding(size, kHintCandidates, weigh);
        if (best_cover < size) ready.each_holding(size, kHintCandidates, weigh);
        if (!best) return nullptr;
        start = best_start;
        return best;
    }

    // --- the chunk directory ---------------------------------------------------

    // The chunks whose first byte lies in [lo, hi) now belong to `s`.
    void claim(Seg* s, uint64_t lo, uint64_t hi) {
        Slab* slab = s->slab;
        const uint64_t first = (lo - slab->base + cfg.chunk_bytes - 1) >> chunk_shift;
        for (uint64_t c = first; slab->base + (c << chunk_shift) < hi; ++c) slab->chunk_piece[c] = s;
    }

    // --- fences --------------------------------------------------------------

    static void attach(Seg* s, Fence* f) {
        s->fence = f;
        s->stream = f->stream;
        s->fprev = nullptr;
        s->fnext = f->blocks;
        if (f->blocks) f->blocks->fprev = s;
        f->blocks = s;
        ++f->refs;
    }
    // Leaves the fence's count one lower; the caller settles the fence.
    static void detach(Seg* s) {
        Fence* f = s->fence;
        if (s->fprev) s->fprev->fnext = s->fnext;
        else f->blocks = s->fnext;
        if (s->fnext) s->fnext->fprev = s->fprev;
        s->fence = nullptr;
        s->fprev = s->fnext = nullptr;
        --f->refs;
    }

    static void list_insert(Stream& st, Fence* f) {
        // Fences arrive in seq order, so this is the tail but for a fence handed twice.
        Fence* after = st.tail;
        while (after && after->seq > f->seq) after = after->prev;
        f->prev = after;
        f->next = after ? after->next : st.head;
        if (f->next) f->next->prev = f;
        else st.tail = f;
        if (after) after->next = f;
        else st.head = f;
        f->owner = &st;
        f->listed = true;
    }
    static void list_erase(Fence* f) {
        Stream& st = *f->owner;
        if (f->prev) f->prev->next = f->next;
        else st.head = f->next;
        if (f->next) f->next->prev = f->prev;
        else st.tail = f->prev;
        f->prev = f->next = nullptr;
        f->owner = nullptr;
        f->listed = false;
    }

    void drop(Fence* f) {
        fences.erase(f->key);
        doomed.push_back(f->key);
        fence_nodes.recycle(f);
    }
    // No block waits on `f` any more.
    void retire(Fence* f) {
        if (f->listed) list_erase(f);
        if (f->pins == 0) drop(f);
    }
    void settle(Fence* f) {
        if (f->refs == 0) retire(f);
    }
    void unpin(Fence* f) {
        if (--f->pins == 0 && f->refs == 0 && !f->listed) drop(f);
    }

    // The record of a fence handed to free() on `stream`.
    Fence* fence_for(FenceKey key, StreamKey stream) {
        if (Fence** held = fences.find(key)) {
            // A fence the pool still holds, handed again: the same fence.
            Fence* f = *held;
            if (!f->listed) list_insert(stream_for(f->stream), f);
            return f;
        }
        Fence* f = fence_nodes.make();
        f->key = key;
        f->stream = stream;
        f->seq = next_seq++;
        fences.insert(key, f);
        list_insert(stream_for(stream), f);
        return f;
    }

    // Fence `f` has completed: its blocks become ready and coalesce.
    void promote(Fence* f) {
        f->completed = true;
        while (Seg* s = f->blocks) {
            detach(s);
            s->index->erase(s);
            s->kind = Kind::Ready;
            Slab* slab = s->slab;
            --slab->pending;
            s = coalesce(s);
            ready_index(slab).insert(s);
            if (slab->live == 0 && slab->pending == 0) became_wholly_free(slab, slab->empty_since);
        }
        retire(f);
    }
    // Every fence of the stream up to `seq` has completed (events on one stream
    // complete in order).
    void complete_through(Stream& st, uint64_t seq) {
        while (st.head && st.head->seq <= seq) promote(st.head);
    }
    // `f` (pinned) has been waited for.
    void finish_wait(Fence* f) {
        if (!f->completed) {
            f->completed = true;
            if (f->listed) complete_through(*f->owner, f->seq);
            else if (Stream* st = stream_of(f->stream)) complete_through(*st, f->seq);
        }
        unpin(f);
    }

    // Asks (boundedly) which pending frees have completed, and promotes them,
    // before the pool makes a slab for a request of `size`. First, of each
    // stream, the fence of its pending block that would best hold the request
    // (the fences before it on the stream complete with it); then each stream's
    // newest fence (all of the stream with it: blocks may coalesce); then, at
    // most once a millisecond of now_ns, a binary search of each stream's
    // fences for the newest completed one, so that streams whose newest frees
    // are always in flight give back the rest.
    void poll(uint64_t size, uint64_t now, Asked& asked) {
        auto ask = [&](Fence* f) { return asked.take(f->key) && oracle.completed(f->key); };
        std::vector<Stream*> order;
        streams.for_each([&](uint64_t, Stream* st) {
            if (st->tail) order.push_back(st);
        });
        bool promoted = false;
        for (Stream* st : order) {
            uint64_t start = 0;
            Seg* fit = best_in(st->pending, size, start);
            if (fit && ask(fit->fence)) {
                complete_through(*st, fit->fence->seq);
                promoted = true;
            }
        }
        for (Stream* st : order)
            if (st->tail && ask(st->tail)) {
                complete_through(*st, st->tail->seq);
                promoted = true;
            }
        if (promoted || asked.full() || (now >= last_sweep && now - last_sweep < kSweepNs)) return;
        last_sweep = now;
        std::vector<Fence*> list;
        for (Stream* st : order) {
            if (asked.full()) break;
            list.clear();
            for (Fence* f = st->head; f && f != st->tail && list.size() < kSearchedFences; f = f->next)
                list.push_back(f);
            // list[0, lo) completed, list[hi, ...) not (as far as asked).
            size_t lo = 0, hi = list.size();
            while (lo < hi && !asked.full()) {
                const size_t mid = lo + (hi - lo) / 2;
                if (!asked.take(list[mid]->key)) break;
                if (oracle.completed(list[mid]->key)) lo = mid + 1;
                else hi = mid;
            }
            if (lo > 0) complete_through(*st, list[lo - 1]->seq);
        }
    }

    // --- pieces ----------------------------------------------------------------

    static bool mergeable(const Seg* a, const Seg* b) {
        if (a->kind != b->kind || a->kind == Kind::Live) return false;
        return a->kind == Kind::Ready || a->stream == b->stream;
    }

    // Merges the adjacent free pieces `s` (in no index) and `nb` (in one) and
    // returns the piece kept: the larger node stays, so the chunk directory
    // changes for the smaller's chunks only.
    Seg* absorb(Seg* s, Seg* nb) {
        nb->index->erase(nb);
        Seg* keep = nb->size > s->size ? nb : s;
        Seg* gone = keep == s ? nb : s;
        if (s->kind == Kind::Pending) {
            // Pending on one stream: one block pending on the later fence.
            Fence* a = keep->fence;
            Fence* b = gone->fence;
            detach(gone);
            --s->slab->pending;
            if (a != b) {
                if (b->seq > a->seq) {
                    detach(keep);
                    attach(keep, b);
                }
                settle(a);
                settle(b);
            }
        }
        return join(keep, gone);
    }

    // A block just freed on a stream (pending, in no index) takes in the ready
    // pieces beside it. The stream may use both at once either way, and one
    // piece holds what two halves cannot: with the GPU a step behind, most
    // frees are pending when their memory is asked for again, and blocks kept
    // apart from their ready neighbours went to fresh memory instead (resnet50
    // covered all of its 12 GiB of slabs for 11.1 GiB live). Other streams wait
    // for the fence for the whole, which costs a program of one stream nothing.
    Seg* take_in_ready(Seg* s) {
        if (s->prev && s->prev->kind == Kind::Ready) s = absorb_ready(s, s->prev);
        if (s->next && s->next->kind == Kind::Ready) s = absorb_ready(s, s->next);
        return s;
    }

    Seg* absorb_ready(Seg* s, Seg* nb) {
        nb->index->erase(nb);
        Seg* keep = nb->size > s->size ? nb : s;
        Seg* gone = keep == s ? nb : s;
        if (keep == nb) {
            // The ready node stays: it waits on the block's fence from now on.
            Fence* f = s->fence;
            detach(s);
            attach(nb, f);
            nb->kind = Kind::Pending;
        }
        return join(keep, gone);
    }

    // `keep` takes over the adjacent `gone`'s range; `gone`'s node is recycled.
    Seg* join(Seg* keep, Seg* gone) {
        if (gone->addr < keep->addr) keep->addr = gone->addr;
        keep->size += gone->size;
        if (gone->prev) gone->prev->next = gone->next;
        else gone->slab->first = gone->next;
        if (gone->next) gone->next->prev = gone->prev;
        claim(keep, gone->addr, gone->addr + gone->size);
        seg_nodes.recycle(gone);
        return keep;
    }
    Seg* coalesce(Seg* s) {
        if (s->prev && mergeable(s->prev, s)) s = absorb(s, s->prev);
        if (s->next && mergeable(s->next, s)) s = absorb(s, s->next);
        return s;
    }

    // A new piece [addr, addr + size), linked in before or after `s`.
    Seg* new_piece(Seg* s, uint64_t addr, uint64_t size, bool before) {
        Seg* n = seg_nodes.make();
        n->addr = addr;
        n->size = size;
        n->slab = s->slab;
        if (before) {
            n->prev = s->prev;
            n->next = s;
            if (s->prev) s->prev->next = n;
            else s->slab->first = n;
            s->prev = n;
        } else {
            n->prev = s;
            n->next = s->next;
            if (s->next) s->next->prev = n;
            s->next = n;
        }
        claim(n, addr, addr + size);
        return n;
    }

    // A free piece [addr, addr + size) like `s` (its kind, its fence), linked in
    // before or after it.
    void free_piece(Seg* s, uint64_t addr, uint64_t size, bool before, FreeIndex& index) {
        Seg* n = new_piece(s, addr, size, before);
        n->kind = s->kind;
        if (s->kind == Kind::Pending) {
            attach(n, s->fence);
            ++s->slab->pending;
        }
        index.insert(n);
    }

    Block carve(Seg* s, uint64_t start, uint64_t size, PoolTag tag) {
        FreeIndex& index = *s->index;
        index.erase(s);
        Slab* slab = s->slab;
        slab->wholly_free = false;
        const uint64_t lo = s->addr, end = s->addr + s->size;
        const uint64_t front = start - lo, back = end - start - size;
        // The block or the rest after it keeps the node, so the chunk directory
        // changes for the others only: for a best fit, the gap in front is less
        // than a chunk; a block placed over dead memory may leave more there.
        if (front) free_piece(s, lo, front, true, index);
        Seg* block = s;
        if (back > size) {
            block = new_piece(s, start, size, true);
            s->addr = start + size;
            s->size = back;
            index.insert(s);
        } else {
            if (back) free_piece(s, start + size, back, false, index);
            s->addr = start;
            s->size = size;
            if (s->kind == Kind::Pending) {
                Fence* f = s->fence;
                detach(s);
                --slab->pending;
                settle(f);
            }
        }
        block->kind = Kind::Live;
        const auto [fresh_begin, fresh_end] = note_backed(*slab, block->addr, size);
        Tag* t = tag == last_tag && last_tag_figures ? last_tag_figures : &tags[tag];
        last_tag = tag;
        last_tag_figures = t;
        block->tag = t;
        ++slab->live;
        live.insert(block->addr, block);
        t->used += size;
        t->high = std::max(t->high, t->used);
        ++t->blocks;
        used += size;
        used_high = std::max(used_high, used);
        ++blocks;
        return Block{block->addr, size, slab->id, slab->base, fresh_begin, fresh_end};
    }

    // Marks the chunks of [addr, addr + size) covered; returns the span from the
    // first to the last of them that no block had covered before (empty: none).
    std::pair<uint64_t, uint64_t> note_backed(Slab& slab, uint64_t addr, uint64_t size) {
        if (slab.backed_bytes == slab.bytes) return {0, 0}; // the common case once a slab has been used throughout
        const uint64_t first = (addr - slab.base) >> chunk_shift, last = (addr + size - 1 - slab.base) >> chunk_shift;
        uint64_t fresh_first = last + 1, fresh_last = 0;
        for (uint64_t c = first; c <= last; ++c) {
            if (slab.backed[c]) continue;
            slab.backed[c] = true;
            slab.backed_bytes += cfg.chunk_bytes; // slabs hold whole chunks
            reserved += cfg.chunk_bytes;
            fresh_first = std::min(fresh_first, c);
            fresh_last = c;
        }
        reserved_high = std::max(reserved_high, reserved);
        if (fresh_first > last) return {0, 0};
        return {slab.base + (fresh_first << chunk_shift), slab.base + ((fresh_last + 1) << chunk_shift)};
    }

    std::optional<Block> take(uint64_t size, StreamKey stream, PoolTag tag) {
        uint64_t start = 0;
        Seg* fit = find_fit(size, stream, start);
        if (!fit) return std::nullopt;
        return carve(fit, start, size, tag);
    }

    // --- slabs ---------------------------------------------------------------

    Slab* add_slab(uint64_t base, uint64_t bytes, bool is_arena = false) {
        auto& slab = slabs.emplace_back(std::make_unique<Slab>());
        slab->id = next_slab_id++;
        slab->base = base;
        slab->bytes = bytes;
        slab->arena = is_arena;
        Seg* s = seg_nodes.make();
        s->addr = base;
        s->size = bytes;
        s->slab = slab.get();
        s->kind = Kind::Ready;
        slab->first = s;
        slab->chunk_piece.assign(bytes >> chunk_shift, s);
        slab->backed.assign(bytes >> chunk_shift, false);
        ready_index(slab.get()).insert(s);
        slab_at[base] = slab.get();
        slab_bytes += bytes;
        return slab.get();
    }

    void became_wholly_free(Slab* slab, uint64_t since) {
        slab->wholly_free = true;
        slab->empty_since = since;
        next_idle_check = retaining ? 0 : std::min(next_idle_check, saturating_add(since, cfg.release_after_ns));
    }

    // Takes a wholly free slab out of the book; it is given back after the mutex.
    void remove_slab(Slab* slab, std::vector<Gone>& gone) {
        Seg* s = slab->first;
        s->index->erase(s);
        seg_nodes.recycle(s);
        reserved -= slab->backed_bytes;
        slab_bytes -= slab->bytes;
        gone.push_back({slab->id, slab->base, slab->bytes});
        slab_at.erase(slab->base);
        auto it = std::find_if(slabs.begin(), slabs.end(), [&](const auto& p) { return p.get() == slab; });
        *it = std::move(slabs.back());
        slabs.pop_back();
    }

    // Wholly free slabs, the most recently used first.
    std::vector<Slab*> wholly_free_newest_first() const {
        std::vector<Slab*> idle;
        for (const auto& slab : slabs)
            if (slab->wholly_free && !slab->arena) idle.push_back(slab.get());
        std::sort(idle.begin(), idle.end(), [](const Slab* a, const Slab* b) {
            return a->empty_since != b->empty_since ? a->empty_since > b->empty_since : a->id > b->id;
        });
        return idle;
    }

    void release_wholly_free(std::vector<Gone>& gone) {
        for (Slab* slab : wholly_free_newest_first()) remove_slab(slab, gone);
    }

    // Forgets streams with nothing pending.
    void gc_streams() {
        std::vector<Stream*> idle;
        streams.for_each([&](uint64_t, Stream* st) {
            if (st->pending.empty() && !st->head) idle.push_back(st);
        });
        for (Stream* st : idle) {
            streams.erase(st->key);
            stream_nodes.recycle(st);
        }
    }

    void idle_pass(uint64_t now, std::vector<Gone>& gone) {
        const uint64_t after = cfg.release_after_ns;
        auto due = [&](uint64_t since) { return now >= since && now - since >= after; };
        // A recheck for slabs whose last frees are still pending on the GPU.
        const uint64_t recheck = std::clamp<uint64_t>(after / 4, 1'000'000, 100'000'000);
        uint64_t next = kNever;

        // Slabs without live blocks, due but for pending frees: ask their fences.
        Asked asked;
        std::vector<FenceKey> keys;
        for (const auto& slab : slabs) {
            if (slab->live != 0 || slab->pending == 0 || slab->arena) continue;
            if (!due(slab->empty_since)) {
                next = std::min(next, saturating_add(slab->empty_since, after));
                continue;
            }
            for (Seg* s = slab->first; s; s = s->next)
                if (s->kind == Kind::Pending && std::find(keys.begin(), keys.end(), s->fence->key) == keys.end())
                    keys.push_back(s->fence->key);
        }
        for (FenceKey key : keys) {
            Fence** held = fences.find(key);
            if (!held || !(*held)->listed) continue; // promoted meanwhile
            Fence* f = *held;
            if (asked.take(key) && oracle.completed(key)) complete_through(*f->owner, f->seq);
        }
        for (const auto& slab : slabs)
            if (slab->live == 0 && slab->pending != 0 && !slab->arena && due(slab->empty_since))
                next = std::min(next, saturating_add(now, recheck));

        // Wholly free slabs: the newest retain_bytes are kept; older ones unused
        // for release_after_ns go.
        retaining = false;
        uint64_t kept = 0;
        for (Slab* slab : wholly_free_newest_first()) {
            if (kept + slab->bytes <= cfg.retain_bytes) {
                kept += slab->bytes;
                retaining = true;
                continue;
            }
            if (due(slab->empty_since)) remove_slab(slab, gone);
            else next = std::min(next, saturating_add(slab->empty_since, after));
        }
        next_idle_check = next;
        gc_streams();
    }

    void maybe_idle_pass(uint64_t now, std::vector<Gone>& gone) {
        if (now >= next_idle_check) idle_pass(now, gone);
    }

    // --- leaving the mutex ------------------------------------------------------

    // Waits for pinned fences with the lock released (a wait can last as long as
    // the GPU's work before the free), then unpins them under it again.
    void wait_unlocked(std::unique_lock<Lock>& lock, const std::vector<Fence*>& pinned) {
        std::vector<FenceKey> keys;
        keys.reserve(pinned.size());
        for (Fence* f : pinned) keys.push_back(f->key);
        lock.unlock();
        for (FenceKey key : keys) oracle.wait(key);
        lock.lock();
        for (Fence* f : pinned) finish_wait(f);
    }

    // Releases the lock, then destroys the fences no block waits on any more and
    // gives back the slabs taken out of the book.
    void leave(std::unique_lock<Lock>& lock, std::vector<Gone>& gone, std::vector<SlabEvent>* events) {
        if (doomed.empty() && gone.empty()) {
            lock.unlock();
            return;
        }
        thread_local std::vector<FenceKey> destroy;
        destroy.swap(doomed);
        lock.unlock();
        for (FenceKey key : destroy) oracle.destroy(key);
        destroy.clear();
        for (const Gone& g : gone) {
            source.release(g.base, g.bytes);
            if (events) events->push_back({g.id, g.base, g.bytes, true});
        }
        gone.clear();
    }

    // --- free ------------------------------------------------------------------

    void disown(FenceKey fence) {
        if (fence != 0 && !fences.find(fence)) doomed.push_back(fence);
    }

    std::optional<uint64_t> free_block(uint64_t address, StreamKey stream, FenceKey fence, uint64_t now) {
        Seg* s = nullptr;
        if (!live.take(address, &s)) {
            disown(fence);
            return std::nullopt;
        }
        const uint64_t size = s->size;
        Tag& t = *s->tag;
        t.used -= size;
        --t.blocks;
        used -= size;
        --blocks;
        s->tag = nullptr;
        Slab* slab = s->slab;
        --slab->live;
        if (stream == kNoStream || fence == 0) {
            disown(fence);
            s->kind = Kind::Ready;
            s = coalesce(s);
            ready_index(slab).insert(s);
        } else {
            Fence* f = fence_for(fence, stream);
            s->kind = Kind::Pending;
            attach(s, f);
            ++slab->pending;
            s = take_in_ready(coalesce(s));
            // The merged block waits on the later of the fences: f's, unless f
            // was handed before (then f may be gone).
            pending_index(*s->fence->owner, slab).insert(s);
        }
        if (slab->live == 0) {
            slab->empty_since = now;
            if (slab->pending == 0) became_wholly_free(slab, now);
            else next_idle_check = std::min(next_idle_check, saturating_add(now, cfg.release_after_ns));
        }
        return size;
    }

    // Pins the fence of the pending block (of a stream other than `stream`) that
    // would best hold `size`.
    Fence* pin_fitting(uint64_t size, StreamKey stream) {
        Seg* best = nullptr;
        streams.for_each([&](uint64_t key, Stream* st) {
            if (key == stream || st->pending.empty()) return;
            uint64_t start = 0;
            Seg* fit = best_in(st->pending, size, start);
            if (fit && (!best || fit->size < best->size)) best = fit;
        });
        if (!best) return nullptr;
        ++best->fence->pins;
        return best->fence;
    }

    // Pins every stream's newest pending fence.
    std::vector<Fence*> pin_newest() {
        std::vector<Fence*> pinned;
        streams.for_each([&](uint64_t, Stream* st) {
            if (st->tail) {
                ++st->tail->pins;
                pinned.push_back(st->tail);
            }
        });
        return pinned;
    }

    // The piece of `slab` holding `address` (within it).
    Seg* piece_at(const Slab& slab, uint64_t address) const {
        Seg* s = slab.chunk_piece[(address - slab.base) >> chunk_shift];
        while (s && address - s->addr >= s->size) s = s->next;
        return s;
    }

    std::optional<Block> find(uint64_t address) const {
        auto it = slab_at.upper_bound(address);
        if (it == slab_at.begin()) return std::nullopt;
        const Slab* slab = std::prev(it)->second;
        if (address - slab->base >= slab->bytes) return std::nullopt;
        const Seg* s = piece_at(*slab, address);
        if (!s || s->kind != Kind::Live) return std::nullopt;
        return Block{s->addr, s->size, slab->id, slab->base};
    }

    // The free memory [address, address + size) of `slab` as one piece usable on
    // `stream`, or nullptr where any of it is live or waits on a fence not yet
    // completed. Pieces pending on other streams are promoted once their fences
    // have completed; then, the range being ready pieces and pieces pending on
    // `stream` by turns (alike ones would have merged), a pending one takes in
    // the others, as a free on the stream takes in the ready memory beside it.
    Seg* gather(const Slab& slab, uint64_t address, uint64_t size, StreamKey stream) {
        const uint64_t end = address + size;
        for (bool promoted = true; promoted;) {
            promoted = false;
            for (Seg* p = piece_at(slab, address); p && p->addr < end; p = p->next) {
                if (p->kind == Kind::Live) return nullptr;
                if (p->kind == Kind::Ready || (stream != kNoStream && p->stream == stream)) continue;
                Fence* f = p->fence;
                if (!f->listed || !oracle.completed(f->key)) return nullptr;
                // Promoting merges pieces: the range is walked again.
                complete_through(*f->owner, f->seq);
                promoted = true;
                break;
            }
        }
        Seg* s = piece_at(slab, address);
        if (s->addr + s->size >= end) return s;
        if (stream == kNoStream) return nullptr; // not one piece: some of it is pending
        while (s->kind != Kind::Pending) s = s->next;
        s->index->erase(s);
        while (s->addr > address || s->addr + s->size < end) {
            Seg* nb = s->addr > address ? s->prev : s->next;
            s = nb->kind == Kind::Ready ? absorb_ready(s, nb) : absorb(s, nb);
        }
        pending_index(*s->fence->owner, s->slab).insert(s);
        return s;
    }
};

// -----------------------------------------------------------------------------

namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}
} // namespace

void PoolBook::Lock::lock() {
    uint32_t expected = 0;
    if (state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed)) return;
    // Spin for up to 20 microseconds: the holder is most likely about to leave
    // (a section takes well under a microsecond on one core, a few when the
    // book's lines move between cores), and a sleep and a wake-up cost more.
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
    do {
        for (int i = 0; i < 16; ++i) {
            cpu_relax();
            if (state_.load(std::memory_order_relaxed) == 0) {
                expected = 0;
                if (state_.compare_exchange_weak(expected, 1, std::memory_order_acquire, std::memory_order_relaxed))
                    return;
            }
        }
    } while (std::chrono::steady_clock::now() < until);
    // Then sleep; 2 tells the holder that someone may be asleep.
    while (state_.exchange(2, std::memory_order_acquire) != 0) state_.wait(2, std::memory_order_relaxed);
}

void PoolBook::Lock::unlock() {
    if (state_.exchange(0, std::memory_order_release) == 2) state_.notify_one();
}

PoolBook::PoolBook(PoolConfig config, SlabSource& slabs, FenceOracle& fences)
    : config_(config), slabs_(slabs), fences_(fences) {
    if (!std::has_single_bit(config_.chunk_bytes))
        throw std::invalid_argument("pool: chunk_bytes (" + std::to_string(config_.chunk_bytes) +
                                    ") must be a power of two");
    if (!std::has_single_bit(config_.alignment) || config_.alignment > config_.chunk_bytes)
        throw std::invalid_argument("pool: alignment (" + std::to_string(config_.alignment) +
                                    ") must be a power of two no larger than chunk_bytes (" +
                                    std::to_string(config_.chunk_bytes) + ")");
    if (config_.slab_bytes == 0 || config_.slab_bytes % config_.chunk_bytes != 0)
        throw std::invalid_argument("pool: slab_bytes (" + std::to_string(config_.slab_bytes) +
                                    ") must be a positive multiple of chunk_bytes (" +
                                    std::to_string(config_.chunk_bytes) + ")");
    if (config_.first_slab_id == 0) throw std::invalid_argument("pool: first_slab_id must not be 0 (no slab)");
    state_ = std::make_unique<State>(config_, slabs_, fences_);
}

PoolBook::~PoolBook() {
    State& st = *state_;
    st.fences.for_each([&](uint64_t key, Fence*) { fences_.destroy(key); });
    for (FenceKey key : st.doomed) fences_.destroy(key);
    for (const auto& slab : st.slabs) slabs_.release(slab->base, slab->bytes);
}

std::optional<Block> PoolBook::allocate(uint64_t bytes, StreamKey stream, PoolTag tag, uint64_t now_ns,
                                        std::vector<SlabEvent>* events) {
    if (bytes == 0 || bytes > kMaxRequest) return std::nullopt;
    State& st = *state_;
    const uint64_t size = round_up(bytes, config_.alignment);
    std::vector<Gone> gone;
    std::unique_lock lock(mutex_);
    std::optional<Block> got = st.take(size, stream, tag);
    if (!got) {
        Asked asked;
        st.poll(size, now_ns, asked);
        got = st.take(size, stream, tag);
    }
    st.maybe_idle_pass(now_ns, gone);
    st.leave(lock, gone, events);
    if (got) return got;

    // A new slab, made outside the mutex.
    const uint64_t own = round_up(size, config_.chunk_bytes);
    const uint64_t slab_bytes = size > config_.slab_bytes ? own : config_.slab_bytes;
    auto make = [&](uint64_t slab_size) -> std::optional<Block> {
        const std::optional<uint64_t> base = slabs_.create(slab_size);
        if (!base) return std::nullopt;
        lock.lock();
        Slab* slab = st.add_slab(*base, slab_size);
        Block block = st.carve(slab->first, slab->base, size, tag);
        st.gc_streams();
        if (events) events->push_back({slab->id, *base, slab_size, false});
        st.leave(lock, gone, events);
        return block;
    };
    if ((got = make(slab_bytes))) return got;

    // Refused: wait for pending frees whose blocks would do, best fit first.
    lock.lock();
    for (int i = 0; i < kMaxWaits && !(got = st.take(size, stream, tag)); ++i) {
        Fence* f = st.pin_fitting(size, stream);
        if (!f) break;
        const FenceKey key = f->key;
        lock.unlock();
        fences_.wait(key);
        lock.lock();
        st.finish_wait(f);
    }
    if (!got) {
        // No single pending block would do: wait for every stream's pending frees,
        // since blocks may coalesce into one that does.
        std::vector<Fence*> pinned = st.pin_newest();
        if (!pinned.empty()) {
            st.wait_unlocked(lock, pinned);
            got = st.take(size, stream, tag);
        }
    }
    if (got) {
        st.leave(lock, gone, events);
        return got;
    }
    // Wholly free slabs cannot serve this request (a fit would have used them):
    // give them back, and try again; then a slab of just this request's size.
    st.release_wholly_free(gone);
    st.leave(lock, gone, events);
    if ((got = make(slab_bytes))) return got;
    if (own < slab_bytes && (got = make(own))) return got;
    // Another thread may have freed meanwhile.
    lock.lock();
    got = st.take(size, stream, tag);
    st.leave(lock, gone, events);
    return got;
}

std::optional<uint64_t> PoolBook::free(uint64_t address, StreamKey stream, FenceKey fence, uint64_t now_ns,
                                       std::vector<SlabEvent>* events) {
    State& st = *state_;
    std::vector<Gone> gone;
    std::unique_lock lock(mutex_);
    const std::optional<uint64_t> size = st.free_block(address, stream, fence, now_ns);
    st.maybe_idle_pass(now_ns, gone);
    st.leave(lock, gone, events);
    return size;
}

std::optional<Block> PoolBook::find(uint64_t address) const {
    std::lock_guard lock(mutex_);
    return state_->find(address);
}

std::optional<uint64_t> PoolBook::make_arena(uint64_t bytes, std::vector<SlabEvent>* events) {
    if (bytes == 0 || bytes > kMaxRequest) return std::nullopt;
    State& st = *state_;
    // One thread makes it: two asking at once would both count it against the
    // physical guard, and the one refused would take the arena for refused.
    std::lock_guard making(arena_making_);
    if (std::optional<uint64_t> made = arena_base()) return made;
    const uint64_t size = round_up(bytes, config_.chunk_bytes);
    // Made outside the book's mutex, as every slab is.
    const std::optional<uint64_t> base = slabs_.create(size);
    if (!base) return std::nullopt;
    std::unique_lock lock(mutex_);
    Slab* slab = st.add_slab(*base, size, true);
    st.arena = slab;
    if (events) events->push_back({slab->id, *base, size, false});
    return *base;
}

std::optional<uint64_t> PoolBook::arena_base() const {
    std::lock_guard lock(mutex_);
    return state_->arena ? std::optional<uint64_t>(state_->arena->base) : std::nullopt;
}

std::optional<Block> PoolBook::allocate_at(uint64_t address, uint64_t bytes, StreamKey stream, PoolTag tag) {
    if (bytes == 0 || bytes > kMaxRequest) return std::nullopt;
    State& st = *state_;
    const uint64_t size = round_up(bytes, config_.alignment);
    std::vector<Gone> gone;
    std::unique_lock lock(mutex_);
    std::optional<Block> got;
    const Slab* arena = st.arena;
    // Within the arena, on the alignment, and on a chunk boundary for a block
    // of a chunk or more (as every block of the book is).
    const bool fits = arena && address >= arena->base && size <= arena->bytes &&
                      address - arena->base <= arena->bytes - size && address % config_.alignment == 0 &&
                      (size < config_.chunk_bytes || (address - arena->base) % config_.chunk_bytes == 0);
    if (fits)
        if (Seg* s = st.gather(*arena, address, size, stream)) got = st.carve(s, address, size, tag);
    // Fences that promotion left unwanted are destroyed outside the mutex.
    st.leave(lock, gone, nullptr);
    return got;
}

void PoolBook::trim(uint64_t keep_bytes, std::vector<SlabEvent>* events) {
    State& st = *state_;
    std::vector<Gone> gone;
    std::unique_lock lock(mutex_);
    // Slabs with no live block whose frees are pending: wait for those frees.
    std::vector<Fence*> pinned;
    for (const auto& slab : st.slabs) {
        if (slab->live != 0 || slab->pending == 0 || slab->arena) continue;
        for (Seg* s = slab->first; s; s = s->next)
            if (s->kind == Kind::Pending && std::find(pinned.begin(), pinned.end(), s->fence) == pinned.end()) {
                ++s->fence->pins;
                pinned.push_back(s->fence);
            }
    }
    if (!pinned.empty()) st.wait_unlocked(lock, pinned);
    // The least recently used go first.
    std::vector<Slab*> idle = st.wholly_free_newest_first();
    for (auto it = idle.rbegin(); it != idle.rend() && st.reserved > keep_bytes; ++it) st.remove_slab(*it, gone);
    st.leave(lock, gone, events);
}

void PoolBook::release_idle(uint64_t now_ns, std::vector<SlabEvent>* events) {
    State& st = *state_;
    std::vector<Gone> gone;
    std::unique_lock lock(mutex_);
    st.idle_pass(now_ns, gone);
    st.leave(lock, gone, events);
}

void PoolBook::set_placement_hint(std::shared_ptr<const PlacementHint> hint) {
    std::lock_guard lock(mutex_);
    state_->hint = std::move(hint);
}

PoolFigures PoolBook::figures(PoolTag tag) const {
    const State& st = *state_;
    std::lock_guard lock(mutex_);
    PoolFigures f;
    if (auto it = st.tags.find(tag); it != st.tags.end()) {
        f.used = it->second.used;
        f.used_high = it->second.high;
        f.blocks = it->second.blocks;
    }
    f.reserved = st.reserved;
    f.reserved_high = st.reserved_high;
    f.slab_bytes = st.slab_bytes;
    f.slabs = st.slabs.size();
    return f;
}

PoolFigures PoolBook::figures() const {
    const State& st = *state_;
    std::lock_guard lock(mutex_);
    PoolFigures f;
    f.used = st.used;
    f.used_high = st.used_high;
    f.blocks = st.blocks;
    f.reserved = st.reserved;
    f.reserved_high = st.reserved_high;
    f.slab_bytes = st.slab_bytes;
    f.slabs = st.slabs.size();
    return f;
}

void PoolBook::reset_used_high(PoolTag tag) {
    State& st = *state_;
    std::lock_guard lock(mutex_);
    if (auto it = st.tags.find(tag); it != st.tags.end()) it->second.high = it->second.used;
}

void PoolBook::reset_reserved_high() {
    State& st = *state_;
    std::lock_guard lock(mutex_);
    st.reserved_high = st.reserved;
}

} // namespace uvmp::pool

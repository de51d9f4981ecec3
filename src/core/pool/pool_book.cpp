#include "core/pool/pool_book.h"

#include "core/pool/block_placement.h"
#include "core/pool/free_ranges.h"
#include "core/pool/live_blocks.h"
#include "core/pool/pending_frees.h"
#include "core/pool/placement_hint.h"
#include "core/pool/slab_set.h"
#include "core/util/round_up.h"

#include <bit>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

namespace uvmp::pool {
namespace {

// Larger requests are refused outright (rounding them would overflow).
constexpr uint64_t kMaxRequest = uint64_t{1} << 62;
// Waits for single pending frees in one allocation that found no slab.
constexpr int kMaxWaits = 64;

unsigned alignment_shift(const PoolConfig& config) {
    return static_cast<unsigned>(std::countr_zero(config.alignment));
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

} // namespace

// The rooms of the book, and what crosses them: a call's slabs to give back
// and fences to destroy once the lock is left.
struct PoolBook::State {
    State(const PoolConfig& config, SlabSource& source, FenceOracle& oracle)
        : source(source), placement(config), slabs(config),
          free_ranges(alignment_shift(config), slabs, pending),
          pending(oracle, alignment_shift(config), free_ranges), live(slabs, free_ranges, pending) {}

    SlabSource& source;
    BlockPlacement placement;
    SlabSet slabs;
    FreeRanges free_ranges;
    PendingFrees pending;
    LiveBlocks live;
    Slab* arena = nullptr;

    // A block for `size` usable on `stream` from the free pieces, if one fits.
    std::optional<Block> take(uint64_t size, StreamKey stream, PoolTag tag) {
        const FreeIndex* own_pending = nullptr;
        if (stream != kNoStream)
            if (StreamFrees* st = pending.stream_of(stream)) own_pending = &st->pending;
        uint64_t start = 0;
        Piece* fit = placement.find_fit(size, free_ranges.ready(), own_pending, start);
        if (!fit) return std::nullopt;
        return live.carve(fit, start, size, tag);
    }

    Slab* add_slab(uint64_t base, uint64_t bytes, bool is_arena) {
        Slab* slab = slabs.add(base, bytes, is_arena);
        free_ranges.ready_index(slab).insert(slab->first);
        return slab;
    }

    void maybe_release_idle(uint64_t now, std::vector<ReleasedSlab>& gone) {
        if (!slabs.releases_at_once() && placement.room_is_short()) slabs.release_at_once();
        if (slabs.idle_check_due(now)) slabs.release_idle(now, pending, gone);
    }

    // Waits for pinned fences with the lock released (a wait can last as long as
    // the GPU's work before the free), then unpins them under it again.
    void wait_unlocked(std::unique_lock<Lock>& lock, const std::vector<HeldFence*>& pinned) {
        std::vector<FenceKey> keys;
        keys.reserve(pinned.size());
        for (HeldFence* f : pinned) keys.push_back(f->key);
        lock.unlock();
        for (FenceKey key : keys) pending.oracle().wait(key);
        lock.lock();
        for (HeldFence* f : pinned) pending.finish_wait(f);
    }

    // Releases the lock, then destroys the fences no piece waits on any more and
    // gives back the slabs taken out of the book.
    void leave(std::unique_lock<Lock>& lock, std::vector<ReleasedSlab>& gone, std::vector<SlabEvent>* events) {
        std::vector<FenceKey>& doomed = pending.doomed();
        if (doomed.empty() && gone.empty()) {
            lock.unlock();
            return;
        }
        thread_local std::vector<FenceKey> destroy;
        destroy.swap(doomed);
        lock.unlock();
        for (FenceKey key : destroy) pending.oracle().destroy(key);
        destroy.clear();
        for (const ReleasedSlab& g : gone) {
            source.release(g.base, g.bytes);
            if (events) events->push_back({g.id, g.base, g.bytes, true});
        }
        gone.clear();
    }

    // What every figure shares: the slabs, of the whole pool.
    PoolFigures slab_figures() const {
        PoolFigures f;
        f.reserved = slabs.reserved();
        f.reserved_high = slabs.reserved_high();
        f.slab_bytes = slabs.slab_bytes();
        f.slabs = slabs.slabs().size();
        return f;
    }
};

// -----------------------------------------------------------------------------

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
    st.pending.for_each_held([&](FenceKey key) { fences_.destroy(key); });
    for (FenceKey key : st.pending.doomed()) fences_.destroy(key);
    for (const auto& slab : st.slabs.slabs()) slabs_.release(slab->base, slab->bytes);
}

std::optional<Block> PoolBook::allocate(uint64_t bytes, StreamKey stream, PoolTag tag, uint64_t now_ns,
                                        std::vector<SlabEvent>* events) {
    if (bytes == 0 || bytes > kMaxRequest) return std::nullopt;
    State& st = *state_;
    const uint64_t size = round_up(bytes, config_.alignment);
    std::vector<ReleasedSlab> gone;
    std::unique_lock lock(mutex_);
    std::optional<Block> got = st.take(size, stream, tag);
    if (!got) {
        FenceQueries asked;
        st.pending.poll(size, now_ns, asked, st.placement);
        got = st.take(size, stream, tag);
    }
    st.maybe_release_idle(now_ns, gone);
    st.leave(lock, gone, events);
    if (got) return got;

    // A new slab, made outside the mutex.
    const uint64_t own = round_up(size, config_.chunk_bytes);
    const uint64_t slab_bytes = size > config_.slab_bytes ? own : config_.slab_bytes;
    auto make = [&](uint64_t slab_size) -> std::optional<Block> {
        const std::optional<uint64_t> base = slabs_.create(slab_size);
        if (!base) return std::nullopt;
        lock.lock();
        Slab* slab = st.add_slab(*base, slab_size, false);
        Block block = st.live.carve(slab->first, slab->base, size, tag);
        st.pending.forget_idle_streams();
        if (events) events->push_back({slab->id, *base, slab_size, false});
        st.leave(lock, gone, events);
        return block;
    };
    if ((got = make(slab_bytes))) return got;

    // Refused: wait for pending frees whose blocks would do, best fit first.
    lock.lock();
    for (int i = 0; i < kMaxWaits && !(got = st.take(size, stream, tag)); ++i) {
        HeldFence* f = st.pending.pin_fitting(size, stream, st.placement);
        if (!f) break;
        const FenceKey key = f->key;
        lock.unlock();
        fences_.wait(key);
        lock.lock();
        st.pending.finish_wait(f);
    }
    if (!got) {
        // No single pending block would do: wait for every stream's pending frees,
        // since blocks may coalesce into one that does.
        std::vector<HeldFence*> pinned = st.pending.pin_newest();
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
    st.slabs.release_wholly_free(gone);
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
    std::vector<ReleasedSlab> gone;
    std::unique_lock lock(mutex_);
    const std::optional<uint64_t> size = st.live.release(address, stream, fence, now_ns);
    if (size) st.placement.block_freed(address, address + *size);
    st.maybe_release_idle(now_ns, gone);
    st.leave(lock, gone, events);
    return size;
}

std::optional<Block> PoolBook::find(uint64_t address) const {
    std::lock_guard lock(mutex_);
    return state_->live.find(address);
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
    std::vector<ReleasedSlab> gone;
    std::unique_lock lock(mutex_);
    std::optional<Block> got;
    const Slab* arena = st.arena;
    // Within the arena, on the alignment, and on a chunk boundary for a block
    // of a chunk or more (as every block of the book is).
    const bool fits = arena && address >= arena->base && size <= arena->bytes &&
                      address - arena->base <= arena->bytes - size && address % config_.alignment == 0 &&
                      (size < config_.chunk_bytes || (address - arena->base) % config_.chunk_bytes == 0);
    if (fits)
        if (Piece* s = st.free_ranges.gather(*arena, address, size, stream)) got = st.live.carve(s, address, size, tag);
    // Fences that promotion left unwanted are destroyed outside the mutex.
    st.leave(lock, gone, nullptr);
    return got;
}

void PoolBook::trim(uint64_t keep_bytes, std::vector<SlabEvent>* events) {
    State& st = *state_;
    std::vector<ReleasedSlab> gone;
    std::unique_lock lock(mutex_);
    // Slabs with no live block whose frees are pending: wait for those frees.
    std::vector<HeldFence*> pinned;
    for (const auto& slab : st.slabs.slabs()) {
        if (slab->live != 0 || slab->pending == 0 || slab->arena) continue;
        for (Piece* s = slab->first; s; s = s->next)
            if (s->kind == PieceKind::Pending && std::find(pinned.begin(), pinned.end(), s->fence) == pinned.end()) {
                PendingFrees::pin(s->fence);
                pinned.push_back(s->fence);
            }
    }
    if (!pinned.empty()) st.wait_unlocked(lock, pinned);
    // The least recently used go first.
    std::vector<Slab*> idle = st.slabs.wholly_free_newest_first();
    for (auto it = idle.rbegin(); it != idle.rend() && st.slabs.reserved() > keep_bytes; ++it)
        st.slabs.remove(*it, gone);
    st.leave(lock, gone, events);
}

void PoolBook::release_idle(uint64_t now_ns, std::vector<SlabEvent>* events) {
    State& st = *state_;
    std::vector<ReleasedSlab> gone;
    std::unique_lock lock(mutex_);
    st.slabs.release_idle(now_ns, st.pending, gone);
    st.leave(lock, gone, events);
}

void PoolBook::set_placement_hint(std::shared_ptr<const PlacementHint> hint) {
    std::lock_guard lock(mutex_);
    state_->placement.set_hint(std::move(hint));
}

PoolFigures PoolBook::figures(PoolTag tag) const {
    const State& st = *state_;
    std::lock_guard lock(mutex_);
    PoolFigures f = st.slab_figures();
    if (const TagUsage* usage = st.live.usage(tag)) {
        f.used = usage->used;
        f.used_high = usage->high;
        f.blocks = usage->blocks;
    }
    return f;
}

PoolFigures PoolBook::figures() const {
    const State& st = *state_;
    std::lock_guard lock(mutex_);
    PoolFigures f = st.slab_figures();
    f.used = st.live.used();
    f.used_high = st.live.used_high();
    f.blocks = st.live.blocks();
    return f;
}

void PoolBook::reset_used_high(PoolTag tag) {
    std::lock_guard lock(mutex_);
    state_->live.reset_used_high(tag);
}

void PoolBook::reset_reserved_high() {
    std::lock_guard lock(mutex_);
    state_->slabs.reset_reserved_high();
}

} // namespace uvmp::pool

// The bookkeeping of the managed pool: large slabs that the driver glue makes
// (managed allocations under the physical guard), carved into blocks for the
// application's device allocations, with CUDA's free semantics. Pure: slabs come
// from a SlabSource and fences are asked through a FenceOracle, so the whole of
// it runs in unit tests without a GPU.
//
// Free semantics, as CUDA's stream-ordered allocator has them:
// - a block freed on stream S with fence F (an event recorded on S at the free)
//   is reusable at once by allocations on S (stream order keeps the new owner's
//   work behind the old owner's), and by allocations on other streams only once
//   F has completed on the GPU;
// - a block freed with kNoStream (cuMemFree, after whatever synchronisation the
//   caller owed) is reusable by every stream at once.
// Events on one stream complete in order, so two adjacent blocks pending on the
// same stream merge into one pending on the later fence; a block freed on a
// stream also takes in the ready memory beside it, which then waits on its fence.
//
// Frees on one stream must reach free() in the order their fences were recorded
// (one thread a stream does that by itself), and each free hands its own fence.
//
// Blocks of at least `chunk_bytes` start on a chunk boundary of their slab (the
// residency model's chunks then match the memory's), smaller ones on
// `alignment`; the search is best fit. Slabs wholly free for `release_after_ns`
// are given back, beyond the first `retain_bytes` of them (the most recently
// used are the ones kept). With a placement hint, blocks of a chunk or more go
// over dead memory still on the GPU where they can (set_placement_hint); once
// the hint says GPU room is short, slabs go back as soon as they are wholly free.
//
// An arena (make_arena) is a slab apart, for a layout planned for the step
// (core/pool/step_layout.h): best fit never places a block there; allocate_at
// places one at an address the caller names, with the same free semantics.
// Idle passes and trims leave it alone: the plan needs it every step.
// Thread-safe: one mutex, held for bookkeeping and fence queries only (never
// while a slab is made or given back, a fence is waited for or destroyed).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

namespace uvmp::pool {

class PlacementHint;

using StreamKey = uint64_t; // an opaque stream handle
using FenceKey = uint64_t;  // an opaque event handle; 0: none
// The stream of a free that waits for nothing (cuMemFree).
inline constexpr StreamKey kNoStream = ~uint64_t{0};
// Figures are kept per tag (the CUDA memory pool an allocation was asked of).
using PoolTag = uint64_t;

// Makes and gives back slabs: managed allocations, in the driver glue.
class SlabSource {
public:
    virtual ~SlabSource() = default;
    // The base address of a new slab of `bytes`, or nullopt when refused (the
    // physical guard, or the driver).
    virtual std::optional<uint64_t> create(uint64_t bytes) = 0;
    virtual void release(uint64_t base, uint64_t bytes) = 0;
};

// Answers for fences handed to free(); the pool destroys each once no block
// waits on it any more.
class FenceOracle {
public:
    virtual ~FenceOracle() = default;
    virtual bool completed(FenceKey fence) = 0;
    // Blocks until the fence has completed.
    virtual void wait(FenceKey fence) = 0;
    virtual void destroy(FenceKey fence) = 0;
};

struct PoolConfig {
    uint64_t slab_bytes = 1ull << 30;      // a request larger than this gets a slab of its own
    uint64_t chunk_bytes = 2ull << 20;     // power of two
    uint64_t alignment = 512;              // power of two, at most chunk_bytes
    uint64_t retain_bytes = 0;             // wholly free slabs kept however long unused
    uint64_t release_after_ns = 10'000'000'000ull;
    // The id of the book's first slab (later ones count up from it): two books
    // of one device give theirs from apart ranges, so a trace tells them apart.
    uint32_t first_slab_id = 1;
};

struct Block {
    uint64_t address = 0;
    uint64_t size = 0; // as asked, rounded to the alignment
    uint32_t slab = 0; // the slab's id (first_slab_id, then up; ids are not reused)
    uint64_t slab_base = 0;
    // The whole chunks this block is the first of its slab's blocks to cover,
    // [fresh_begin, fresh_end) (empty when it covers none): the slab's only
    // memory without pages yet, which is what populating places on the GPU. A
    // block within chunks that earlier blocks covered finds its pages where
    // they were left.
    uint64_t fresh_begin = 0;
    uint64_t fresh_end = 0;
    uint64_t fresh_bytes() const { return fresh_end - fresh_begin; }
};

struct PoolFigures {
    uint64_t used = 0;      // bytes of live blocks (of the tag)
    uint64_t used_high = 0;
    // Memory the pool holds (of the whole pool): the chunks of its slabs that
    // some block has covered. A managed slab has pages only where they were
    // populated; the rest is address space. What a framework reads as reserved.
    uint64_t reserved = 0;
    uint64_t reserved_high = 0;
    uint64_t slab_bytes = 0; // the slabs' whole size
    uint64_t slabs = 0;
    uint64_t blocks = 0;    // live blocks (of the tag)
};

// What happened to the slabs during one call, for the caller's trace and log.
struct SlabEvent {
    uint32_t slab = 0;
    uint64_t base = 0;
    uint64_t bytes = 0;
    bool released = false; // else created
};

class PoolBook {
public:
    // std::invalid_argument for a config that breaks the rules above.
    PoolBook(PoolConfig config, SlabSource& slabs, FenceOracle& fences);
    ~PoolBook(); // gives every slab back and destroys every fence still held
    PoolBook(const PoolBook&) = delete;
    PoolBook& operator=(const PoolBook&) = delete;

    // A block for `bytes` (> 0) usable in stream order on `stream`; nullopt
    // when no slab can be had (after waiting for pending frees that would do),
    // and for 0 bytes. With kNoStream (cuMemAlloc) only blocks ready for every
    // stream are used. `now_ns` drives the release of idle slabs.
    std::optional<Block> allocate(uint64_t bytes, StreamKey stream, PoolTag tag, uint64_t now_ns,
                                  std::vector<SlabEvent>* events = nullptr);
    // Frees the live block that starts at `address`; its size, or nullopt when
    // no live block starts there (nothing changes then). The pool owns `fence`
    // from here on (it destroys it), whatever the answer. With kNoStream or no
    // fence (0) the block is ready for every stream at once.
    std::optional<uint64_t> free(uint64_t address, StreamKey stream, FenceKey fence, uint64_t now_ns,
                                 std::vector<SlabEvent>* events = nullptr);
    // The live block containing `address`.
    std::optional<Block> find(uint64_t address) const;

    // Makes the book's arena of `bytes` (rounded up to chunks): its base, or
    // nullopt when the slab is refused. Once: with an arena already made, its
    // base whatever `bytes` says.
    std::optional<uint64_t> make_arena(uint64_t bytes, std::vector<SlabEvent>* events = nullptr);
    std::optional<uint64_t> arena_base() const;
    // A block of `bytes` (> 0) at exactly `address` of the arena, usable in
    // stream order on `stream`: nullopt when any of that memory is live, or
    // pending on another stream's free whose fence has not completed (asked
    // now, never waited for), or outside the arena. The caller then allocates
    // as usual: a plan that no longer fits costs placement, never a result.
    std::optional<Block> allocate_at(uint64_t address, uint64_t bytes, StreamKey stream, PoolTag tag);

    // Gives back wholly free slabs (their pending frees waited for) until at
    // most `keep_bytes` are reserved (see PoolFigures) or none is wholly free: cuMemPoolTrimTo.
    void trim(uint64_t keep_bytes, std::vector<SlabEvent>* events = nullptr);
    // Gives back slabs wholly free for release_after_ns or longer at now_ns (a
    // slab's time is that of the free of its last live block), but for the
    // most recently used ones that fit in retain_bytes. Slabs whose last frees
    // are pending have their fences asked first.
    void release_idle(uint64_t now_ns, std::vector<SlabEvent>* events = nullptr);

    // From here on, blocks of a chunk or more go where the hint says dead bytes
    // still lie on the GPU, where there are any among the pieces that would hold
    // them (core/pool/placement_hint.h); nullptr: best fit alone. Any thread.
    void set_placement_hint(std::shared_ptr<const PlacementHint> hint);

    PoolFigures figures(PoolTag tag) const;
    PoolFigures figures() const; // every tag together (used_high: of the sum, reset by no call)
    void reset_used_high(PoolTag tag);
    void reset_reserved_high();
    const PoolConfig& config() const { return config_; }

    // Around fork(): the book's lock, held while the process is copied.
    void lock_for_fork() const { mutex_.lock(); }
    void unlock_after_fork() const { mutex_.unlock(); }

private:
    // Implementation's choice; declared by the implementation.
    struct State;
    PoolConfig config_;
    SlabSource& slabs_;
    FenceOracle& fences_;
    // The one mutex: it spins a little before it sleeps, since the book's
    // sections last a few hundred nanoseconds, well short of a sleep and a wake.
    class Lock {
    public:
        void lock();
        void unlock();

    private:
        std::atomic<uint32_t> state_{0}; // 0 free, 1 held, 2 held and maybe waited for
    };
    mutable Lock mutex_;
    std::mutex arena_making_; // held while the arena's slab is made (never with mutex_ held)
    std::unique_ptr<State> state_;
};

} // namespace uvmp::pool

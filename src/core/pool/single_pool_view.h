// What a framework reads as a device pool's reserved memory, as one native
// stream-ordered pool would hold it for the same allocations and frees.
//
// The library's books cannot answer this themselves: a device has a GPU book
// and a host book (UVMP_HOST_HOMES), each with slabs of its own, and a block
// that moves homes mid-run leaves free cached space in one book while it takes
// new space in the other; the step's arena is a slab beside the others; and a
// book's reserved bytes are the chunks any block ever covered, which placing
// blocks over dead memory spreads. Summed, the books read about twice what the
// same job reserves natively. A native pool (PyTorch's cudaMallocAsync backend
// sets its release threshold to the maximum) keeps whatever it once mapped
// until trimmed, and best fit packs its blocks: its reserved bytes follow the
// high mark of the live bytes, less what a trim gave back. This view counts
// exactly that, from the live bytes of both homes together, so where a block
// lives never changes the figure; it never reads more than the books hold.
//
// Lock-free: allocations and frees of every thread update it.
#pragma once

#include <atomic>
#include <cstdint>

namespace uvmp::pool {

class SinglePoolView {
public:
    // `granularity`: what a native pool maps in (a power of two); the figures round up to it.
    explicit SinglePoolView(uint64_t granularity);

    void allocated(uint64_t bytes);
    void freed(uint64_t bytes);
    // cuMemPoolTrimTo(keep_bytes): cached bytes beyond `keep_bytes` go, live ones stay.
    void trimmed(uint64_t keep_bytes);

    uint64_t live() const { return live_.load(std::memory_order_relaxed); }
    // Reserved now, at most `held` (what the books hold together) and at least the live bytes.
    uint64_t reserved(uint64_t held) const;
    // The high mark of reserved since the start or the last reset.
    uint64_t reserved_high(uint64_t held) const;
    // A zero written to the high mark: it starts again from reserved now.
    void reset_high(uint64_t held);

private:
    uint64_t rounded(uint64_t bytes) const { return (bytes + granularity_ - 1) & ~(granularity_ - 1); }

    const uint64_t granularity_;
    std::atomic<uint64_t> live_{0};
    std::atomic<uint64_t> cached_{0}; // the live high mark since the last trim, less what trims gave back
    std::atomic<uint64_t> high_{0};
};

} // namespace uvmp::pool

// Freed blocks of a job whose memory exceeds its budget are discarded, and the
// blocks placed there later are refilled before any kernel can touch them.
//
// A freed block's bytes left on the GPU take its memory as much as live ones: a
// budget that stands for a smaller GPU must count them, and moving them off
// costs an eviction (host pages populated, 13-16 GB/s on the H200). A discard
// gives them back for nothing, but a kernel that writes a discarded range runs
// at 0.2 GB/s until it is prefetched again. So both ends are stream-ordered on
// the application's own streams, where nothing can come between:
// - the discard is queued on the freeing stream's work (through a stream of the
//   library's own, since batch calls refuse the legacy stream) before the free's
//   fence is recorded, so the pool hands the memory to another stream only
//   after the discard has run, and to the same stream only behind it;
// - a block placed over discarded memory has those bytes prefetched to the GPU
//   on its allocating stream before the allocation returns (a plain allocation,
//   usable on any stream, waits for its prefetch), which populates pages without
//   copying: about 2 ms a GiB, and neither call holds the calling thread (both
//   measured behind a busy stream: bench/dead_memory_probe.cu).
// Only whole chunks of a block are discarded (core/model/discard_span.h).
#pragma once

#include "core/model/discard_span.h"
#include "driver/driver_table.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

namespace uvmp::driver {

class DiscardedMemory {
public:
    explicit DiscardedMemory(uint64_t chunk_bytes) : chunk_bytes_(chunk_bytes) {}

    // Discards the whole chunks of the block at `base` of `size`, in stream
    // order on `stream` (of `context`, current), and remembers them: the span
    // discarded, empty when nothing was (a short block, or a call refused, in
    // which case its bytes stay where they are, dead). With `wait` the discard
    // has run when this returns: a free that makes the block ready for every
    // stream at once (cuMemFree) needs that.
    AddressSpan discard(const DriverTable& table, CUdeviceptr base, uint64_t size, CUstream stream, CUcontext context,
                        bool wait);
    // Prefetches the discarded parts of a block just placed at `base` to
    // `device`, on `stream`; for a plain allocation (stream_ordered false) the
    // prefetch is waited for. Returns the bytes refilled; whatever could not be
    // refilled stays remembered (a failure is logged once).
    uint64_t refill(const DriverTable& table, CUdeviceptr base, uint64_t size, CUdevice device, CUstream stream,
                    bool stream_ordered);
    // Memory given back (a slab): nothing of it is discarded memory any more.
    void forget(uint64_t base, uint64_t bytes);
    // Whether any discarded memory is remembered: allocations ask nothing otherwise.
    bool empty() const;

private:
    // The library's stream of `context` for discards, made on first use.
    CUstream stream_for(const DriverTable& table, CUcontext context);
    void remove_locked(uint64_t begin, uint64_t end);

    const uint64_t chunk_bytes_;
    mutable std::mutex mutex_;
    std::map<uint64_t, uint64_t> ranges_; // first byte -> one past the last, disjoint
    std::unordered_map<CUcontext, CUstream> streams_;
};

} // namespace uvmp::driver

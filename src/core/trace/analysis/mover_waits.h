// How long each launch's kernel waited for the library's moves, from a model of
// the mover's stream in time. The planner queues a launch's moves behind its
// fence, on one stream a device: they start when the GPU reaches the launch
// (its kernel's start, which CUPTI gives) or when the moves queued before them
// have run, whichever is later. A kernel that names chunks a batch still in
// flight brings (prefetched a few launches before it, or populated for a block
// made just before it), or that lacks chunks its own batch fetches behind the
// evictions making room, waited until they came. Counting only the moves of
// the last launch missed the kernels that waited on a backlog: under pressure
// the mover runs a second or more behind the kernels, and a launch whose
// prefetch had been queued three launches earlier behind gigabytes of
// evictions read as one that waited for nothing, so its stalled duration
// passed for its own (trace/analysis/fastest_durations.h).
//
// The rates are the link's best for each kind of move: a wait is never made
// longer than the bytes account for.
#pragma once

#include "core/rates/reference.h"
#include "core/trace/analysis/fastest_durations.h"

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace uvmp::trace {

// What the planner queued for a launch, and which earlier batches bring
// chunks its kernel names. Launches are named by number: the process's, or
// positions in a trace (MemoryRecorder::snapshot turns the one into the other).
struct LaunchBatch {
    // Queued since the device's last launch, ahead of this launch's fence: the
    // pages of blocks made since, populated as soon as the stream reaches them.
    uint64_t populate_bytes = 0;
    // Behind the fence, in this order.
    uint64_t evict_bytes = 0;    // live and dead bytes, making room
    uint64_t demand_bytes = 0;   // chunks the launch's kernel names and lacks
    uint64_t prefetch_bytes = 0; // chunks for the launches after it
    // The latest launch whose batch prefetched, and the latest whose batch
    // populated, chunks this kernel names: itself included for the populated,
    // never for the prefetched.
    std::optional<uint64_t> needs_prefetch_of;
    std::optional<uint64_t> needs_populate_of;
};

// By launch, ascending, and the kernels' start times (ns, any one clock) by launch.
struct MoverRecord {
    std::vector<std::pair<uint64_t, LaunchBatch>> batches;
    std::unordered_map<uint64_t, uint64_t> kernel_starts;
};

struct MoverRates {
    double evict_gbps = rates::kReferenceEvictGbps;
    double fetch_gbps = rates::kReferenceFetchGbps;
    // Pages populated on the GPU with nothing to copy.
    double populate_gbps = rates::kReferencePopulateGbps;
};

// The wait of each launch that waited, by launch. A batch whose kernel has no
// start time starts where the batch before it did; the batches before the
// first with one are left out.
LaunchWaits mover_waits(const MoverRecord& record, const MoverRates& rates);

} // namespace uvmp::trace

// The pool's blocks of a trace placed by a layout planned for its learned step
// (core/pool/step_layout.h): the steps after it find each planned block by the
// order and size of the step's allocations (core/placement/home_sequence.h) and
// put it at its offset of an arena that lies apart from the pool's slabs. A
// block the plan leaves out, or whose place is still taken when it comes (the
// run strayed from the learned step), goes to the pool as before.
#pragma once

#include "core/model/chunk_schedule.h"
#include "core/placement/home_sequence.h"
#include "core/pool/step_layout.h"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace uvmp::sim {

// The layout of a trace's learned step, [bounds[1], bounds[2]) of its
// iterations: the step's pooled allocations in order, each with its block of
// the plan (layout.offsets[i] for allocs[i]). Empty with fewer than three bounds.
// The simulator and the library plan the step with it alike.
struct LearnedStepLayout {
    pool::StepLayout layout;
    std::vector<uint32_t> alloc_ids;
    std::vector<uint64_t> sizes;
    uint64_t step_end = ~uint64_t{0}; // the learned step's end (a launch)
};
// `events`: a chunk schedule's, in order.
LearnedStepLayout learned_step_layout(std::span<const ChunkSchedule::AllocEvent> events,
                                      std::span<const uint64_t> bounds, uint64_t chunk_bytes);

class PlannedBlocks {
public:
    // `events`: the schedule's, in order; `bounds`: the trace's iterations (the
    // learned step is the second, [bounds[1], bounds[2]), as the simulator's
    // reference step is; with fewer than three bounds nothing is planned).
    // The arena begins at `arena_base`.
    PlannedBlocks(std::span<const ChunkSchedule::AllocEvent> events, std::span<const uint64_t> bounds,
                  uint64_t chunk_bytes, uint64_t arena_base);

    // Where the pooled allocation `alloc_id` of `size`, made before launch
    // `launch`, lies by the plan: nullopt when the plan leaves it to the pool.
    // Every pooled allocation must be asked, in order (the sequence follows them).
    std::optional<uint64_t> allocate(uint32_t alloc_id, uint64_t size, uint64_t launch);
    // Frees a planned block: its address, or nullopt for one the pool holds.
    std::optional<uint64_t> free(uint32_t alloc_id);

    const pool::StepLayout& layout() const { return layout_; }
    uint64_t blocks_planned() const { return placed_; }    // allocations put at their offset
    uint64_t blocks_displaced() const { return displaced_; } // planned, but the place was taken

private:
    uint64_t step_end_ = 0; // the learned step's end: allocations from here on follow the plan
    uint64_t arena_base_ = 0;
    pool::StepLayout layout_;
    placement::HomeSequence sequence_;
    std::map<uint64_t, uint64_t> live_; // planned blocks alive: address -> end
    std::unordered_map<uint32_t, uint64_t> address_of_;
    uint64_t placed_ = 0, displaced_ = 0;
};

} // namespace uvmp::sim

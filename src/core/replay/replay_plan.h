// What `uvmtrace replay` does on the GPU, worked out from a recorded trace
// beforehand: every allocation, free, launch and iteration mark in the order
// the program made them, sizes and times scaled, each step's boundaries, the
// stream of each stream-ordered call, and the events that order launches of
// different streams. Pure: the tool runs the plan through the driver.
#pragma once

#include "core/trace/format/model.h"

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <vector>

namespace uvmp::replay {

struct PlanOptions {
    // Every size, offset and time is multiplied by it (0 < scale <= 1): a smaller
    // GPU replays a job as if all of it were smaller, transfers and kernels alike.
    double scale = 1.0;
    // Copies of the trace's last whole step to run after it.
    uint32_t extra_steps = 0;
};

// Which driver call makes and frees an allocation. Blocks of the managed pool
// (format 1.1) are what PyTorch's stream-ordered allocator makes, the one under
// which the library sees every free; the trace does not say which call made them.
enum class AllocCall : uint8_t { Plain, StreamOrdered };

struct AllocOp {
    uint32_t slot = 0; // the allocation's place in the replay, 0, 1, 2, ...
    uint64_t bytes = 0;
    AllocCall call = AllocCall::Plain;
    uint32_t stream = 0; // index into Plan::streams; the stream of its first use
};

struct FreeOp {
    uint32_t slot = 0;
    AllocCall call = AllocCall::Plain;
    uint32_t stream = 0; // the stream of its last use
};

// One access of a launch: the kernel gets the pointer `offset` bytes into the
// slot's allocation, as the recorded launch got it, and touches `length` bytes from there.
struct Touch {
    uint32_t slot = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
};

struct LaunchOp {
    uint32_t kernel_id = 0; // the recorded kernel: one function each, so the library tells them apart
    uint32_t stream = 0;
    uint64_t duration_ns = 0;
    // Not issued before this long after its step began (the recorded host time
    // since the step's first launch); nullopt outside the steps.
    std::optional<uint64_t> not_before_ns;
    uint32_t first_touch = 0; // into Plan::touches
    uint32_t touch_count = 0;
    uint32_t first_wait = 0; // into Plan::waits: earlier launches (Plan::launches indices) it waits for
    uint32_t wait_count = 0;
    uint32_t waiters = 0; // later launches that wait for it: it records an event when > 0
};

enum class OpKind : uint8_t {
    Alloc,
    Free,
    Launch,
    Mark,          // an iteration mark (uvmp_mark_iteration) where the program made one
    StepBoundary,  // the end of the step before it and the start of the next: wait for the streams, take the time
};

struct Op {
    OpKind kind;
    uint32_t index; // into the vector of its kind; for a boundary the step it starts (== steps.size(): the end)
};

struct Step {
    uint64_t first_launch = 0; // Plan::launches index
    uint64_t launches = 0;
    std::optional<uint64_t> recorded_ns; // scaled; unknown for a last step with nothing after it
    bool copy = false;                   // one of the extra steps
};

struct Plan {
    std::vector<Op> ops;
    std::vector<AllocOp> allocs;
    std::vector<FreeOp> frees;
    std::vector<LaunchOp> launches;
    std::vector<Touch> touches;
    std::vector<uint32_t> waits;
    std::vector<uint64_t> streams; // the recorded stream handle of each replay stream
    std::vector<Step> steps;
    std::vector<uint32_t> kernel_max_touches; // by recorded kernel id
    uint32_t slots = 0;
    uint64_t peak_live_bytes = 0;
    uint64_t prologue_launches = 0; // before the first step
    // What the replay leaves out: allocations that are not managed memory
    // (passed through, VMM, pinned host: the library never converted them), and
    // accesses to memory that is not a live managed allocation.
    uint64_t skipped_allocations = 0;
    uint64_t skipped_accesses = 0;
};

// Thrown when the options cannot be met: --steps without a whole step, or a
// last step that frees memory made before it that none of its own allocations replaces.
class PlanError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// `trace` with its access lengths inferred (infer_access_extents), `bounds` its
// iteration bounds (iteration_bounds()). A step ends at its iteration mark where
// it has one: frees after the last mark (the program's teardown) are not the
// last step's, and come after its copies.
Plan make_plan(const trace::Trace& trace, std::span<const uint64_t> bounds, const PlanOptions& options);

} // namespace uvmp::replay

// Helpers for the unit tests that work with trace files. The synthetic trace
// generator itself lives in core/trace/synthesis/synthetic.h, shared with `uvmtrace synth`.
#pragma once

#include "core/trace/synthesis/synthetic.h"
#include "core/trace/format/writer.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace uvmp::trace::fixtures {

// A path in the build tree for a test's scratch file; the name should be unique per test.
std::string scratch_path(const std::string& name);
std::vector<std::byte> read_file(const std::string& path);

// Appends an allocation made before launch `launches_before`, and its free.
void add_alloc(Trace& t, uint32_t id, uint64_t size, uint64_t launches_before, AllocKind kind = AllocKind::Converted);
void add_free(Trace& t, uint32_t id, uint64_t launches_before);

// Appends a launch of kernel `kernel_id` with these accesses, numbered after
// the trace's launches so far.
void add_launch(Trace& t, uint32_t kernel_id, std::span<const Access> accesses, uint64_t duration_ns = 0);

// The same, each access naming a whole allocation (offset 0, extent unknown).
void add_launch_naming(Trace& t, uint32_t kernel_id, std::initializer_list<uint32_t> alloc_ids,
                       uint64_t duration_ns = 0);

// A training-like loop: `allocations` buffers of `alloc_mib` MiB; launch k of each
// iteration reads buffer k with kernel k, lasting `kernel_us`; a mark starts each iteration.
Trace loop_trace(uint32_t allocations, uint64_t alloc_mib, uint32_t iterations, uint64_t kernel_us = 0);

// A pooled job as PyTorch's are recorded (make_training_loop, pooled): four
// layers, `steps` steps, a loss each step frees the last step's, and the model
// freed after the last step (after a closing mark, with marks).
Trace pooled_job(uint64_t steps, bool marks = true);

} // namespace uvmp::trace::fixtures

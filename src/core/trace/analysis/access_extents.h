// How far an access reaches. A kernel's parameters say where in an allocation
// an access starts, not how long it is, and sub-allocators (PyTorch's caching
// allocator, memory pools) put many tensors into one allocation: taking every
// access to the end of its allocation makes a launch appear to touch gigabytes
// it never reads.
//
// Two pointers into one allocation that are both in use over overlapping spans
// of launches belong to buffers alive at the same time, which cannot overlap:
// the buffer at the lower offset ends at or before the higher one. So within a
// window of launches (one iteration of a training loop), an access of unknown
// length reaches up to the nearest higher offset in the same allocation whose
// span of use overlaps its own, or to the end of the allocation. The result
// can only be too long, except for pointers into the middle of a buffer (a
// view), where it is too short: a move that misses costs a fault, never a
// wrong result.
#pragma once

#include "core/trace/format/model.h"

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace uvmp {

// One access of the launch at `position` (positions grow with launch order).
struct AccessUse {
    uint64_t position = 0;
    trace::Access* access = nullptr;
};

// Size of an allocation by id; 0 when unknown (its accesses are left alone).
using AllocationSize = std::function<uint64_t(uint32_t alloc_id)>;

// Gives every access of unknown length (0) among `uses` its inferred length.
// Accesses of known length are kept and bound the others. Returns the number
// of accesses given a length.
uint64_t infer_access_extents(std::span<const AccessUse> uses, const AllocationSize& size_of);

// The same over a recorded trace, one window per iteration (`bounds` as from
// iteration_bounds(); empty: the whole trace is one window). Launches before
// the first and after the last bound form windows of their own.
uint64_t infer_access_extents(trace::Trace& trace, std::span<const uint64_t> bounds);

} // namespace uvmp

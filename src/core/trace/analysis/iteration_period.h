// Finds the training step in a launch sequence: the number of launches after
// which the sequence of kernels repeats.
#pragma once

#include "core/trace/format/model.h"

#include <cstdint>
#include <optional>
#include <span>

namespace uvmp::trace {

struct IterationPeriod {
    uint64_t first_launch = 0; // index of the first launch of the first full period
    uint64_t period = 0;       // launches per iteration
    uint64_t repeats = 0;      // how many full periods were seen
    bool from_marks = false;   // true when taken from uvmp_mark_iteration records
};

// From the iteration marks when there are at least two, else from the kernel-id
// sequence itself. nullopt when no period repeats at least twice.
std::optional<IterationPeriod> detect_iteration_period(const Trace& trace);
std::optional<IterationPeriod> detect_iteration_period(std::span<const uint32_t> kernel_ids);

} // namespace uvmp::trace

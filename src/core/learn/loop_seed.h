// One iteration of an earlier run, to start the learned policy from instead of
// learning it again (UVMP_TRACE_IN). Allocations are matched by order and size:
// the library numbers converted allocations 1, 2, 3, ... in the order the
// program makes them, so a program that allocates as it did when recorded gets
// the same ids, and a size that differs shows that it does not.
#pragma once

#include "core/trace/format/model.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace uvmp {

struct LoopSeed {
    struct Launch {
        uint32_t kernel_id = 0;
        uint32_t first_access = 0;
        uint32_t access_count = 0;
    };
    std::vector<Launch> launches;
    std::vector<trace::Access> accesses;
    // Size of every allocation the loop names, by id.
    std::unordered_map<uint32_t, uint64_t> allocation_sizes;

    std::span<const trace::Access> accesses_of(const Launch& launch) const {
        return {accesses.data() + launch.first_access, launch.access_count};
    }
};

// The last full iteration of the trace (by its iteration marks, else the
// detected period). nullopt with the reason in *why_not when there is none.
std::optional<LoopSeed> loop_seed_from_trace(const trace::Trace& trace, std::string* why_not);

} // namespace uvmp

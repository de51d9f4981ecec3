// The bytes a launch's accesses name in managed allocations: what a kernel
// moves that the library could place, by which its speed and its kind are
// judged (core/placement/timing_prior.h, core/trace/fastest_durations.h).
#pragma once

#include "core/trace/model.h"

#include <cstdint>
#include <unordered_map>

namespace uvmp::trace {

class ManagedBytes {
public:
    explicit ManagedBytes(const Trace& trace) : trace_(trace) {
        for (const Alloc& a : trace.allocs)
            if (is_managed(a.kind)) size_.emplace(a.id, a.size);
    }

    // 0 for a launch without accesses or naming no managed allocation.
    uint64_t of(const Launch& launch) const {
        if (!trace_.has_accesses_of(launch)) return 0;
        uint64_t bytes = 0;
        for (const Access& access : trace_.accesses_of(launch)) {
            const auto size = size_.find(access.alloc_id);
            if (size != size_.end()) bytes += named_bytes(access, size->second);
        }
        return bytes;
    }

private:
    const Trace& trace_;
    std::unordered_map<uint32_t, uint64_t> size_;
};

} // namespace uvmp::trace

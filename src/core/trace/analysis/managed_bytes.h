// The bytes a launch's accesses name in managed allocations, each once: what a
// kernel moves that the library could place, by which its speed and its kind are
// judged (core/placement/timing_prior.h, core/trace/analysis/launch_kind.h).
#pragma once

#include "core/trace/format/model.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace uvmp::trace {

class ManagedBytes {
public:
    explicit ManagedBytes(const Trace& trace) : trace_(trace) {
        for (const Alloc& a : trace.allocs)
            if (is_managed(a.kind)) size_.emplace(a.id, a.size);
    }

    // 0 for a launch without accesses or naming no managed allocation. A byte
    // named twice counts once: a kernel's parameters often hold one pointer in
    // several places (a GEMM's descriptors repeat its operands), and counting
    // each would make a kernel that re-reads its operands look like one that
    // streams them.
    uint64_t of(const Launch& launch) const {
        if (!trace_.has_accesses_of(launch)) return 0;
        extents_.clear();
        for (const Access& access : trace_.accesses_of(launch)) {
            const auto size = size_.find(access.alloc_id);
            if (size == size_.end()) continue;
            const uint64_t bytes = named_bytes(access, size->second);
            if (bytes) extents_.push_back({access.alloc_id, access.offset, access.offset + bytes});
        }
        std::sort(extents_.begin(), extents_.end());
        uint64_t bytes = 0;
        for (size_t i = 0; i < extents_.size();) {
            Extent run = extents_[i];
            for (++i; i < extents_.size() && extents_[i].alloc_id == run.alloc_id && extents_[i].begin <= run.end; ++i)
                run.end = std::max(run.end, extents_[i].end);
            bytes += run.end - run.begin;
        }
        return bytes;
    }

    // The managed allocations' sizes, by id.
    const std::unordered_map<uint32_t, uint64_t>& sizes() const { return size_; }

private:
    struct Extent {
        uint32_t alloc_id;
        uint64_t begin, end;
        bool operator<(const Extent& o) const { return alloc_id != o.alloc_id ? alloc_id < o.alloc_id : begin < o.begin; }
    };
    const Trace& trace_;
    std::unordered_map<uint32_t, uint64_t> size_;
    mutable std::vector<Extent> extents_; // of() only, kept for its capacity
};

} // namespace uvmp::trace

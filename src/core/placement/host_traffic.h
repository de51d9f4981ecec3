// What launches name of host-homed allocations: the trips over the link the
// tier model charges them (host_homes.h), and what the library counts of a run
// (the remote_*_bytes_named counters), by one rule. Each launch names a
// host-homed allocation once, with the bytes its first access names (the rest
// of the allocation from the offset where the extent is not known). The first
// launch to name an allocation since it was made, or since the step began
// where the caller marks steps (the simulator does, the library does not), is
// taken to write it: a block no copy or memset filled holds nothing to read.
// Later launches read it. For the blocks a step makes, the only ones homes
// learned in the run put on the host, the run's figures and the simulator's
// are the same count. A kernel that re-reads what it names (a GEMM) moves more
// than this over the link, one that touches part of it less: the figure is
// named bytes, one trip each, not bytes measured on the link.
#pragma once

#include "core/trace/format/model.h"

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace uvmp::placement {

struct HostTrip {
    uint32_t alloc_id = 0;
    uint64_t bytes = 0;
    bool writes = false;
};

struct HostTrafficBytes {
    uint64_t written = 0;
    uint64_t read = 0;
};

class HostTraffic {
public:
    // A host-homed allocation of `bytes` made (again, for an id reused: it is
    // fresh).
    void add(uint32_t id, uint64_t bytes);
    void remove(uint32_t id);
    bool holds(uint32_t id) const { return allocations_.contains(id); }
    size_t size() const { return allocations_.size(); }
    // A step begins: every allocation is written by the next launch naming it.
    void new_step();
    // The launch's trips, one per host-homed allocation it names, into `out`
    // (cleared first); their bytes are returned.
    HostTrafficBytes launch(std::span<const trace::Access> accesses, std::vector<HostTrip>& out);

private:
    struct Held {
        uint64_t bytes = 0;
        bool named = false;
    };
    std::unordered_map<uint32_t, Held> allocations_;
};

} // namespace uvmp::placement

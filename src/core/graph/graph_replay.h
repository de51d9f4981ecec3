// What one launch of an executable CUDA graph runs, learnt once by walking the
// graph's nodes when it is instantiated (driver/intercept/graph_walk.cpp) and looked up at
// every launch of it. A kernel node keeps its parameter words, not the
// allocations they named then: the registry is asked again at each launch, as
// for a direct launch, because a pooled block freed and made anew at the same
// address is another allocation.
#pragma once

#include "core/registry/registry.h"
#include "core/trace/format/model.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace uvmp {

// Device memory a copy or set node touches.
struct DeviceRange {
    uint64_t address = 0;
    uint64_t bytes = 0;
};

// One node of the graph that touches device memory, as a launch of its own.
struct GraphStep {
    enum class Kind : uint8_t { Kernel, Memcpy, Memset };
    Kind kind = Kind::Kernel;
    // The node of the instantiated graph it came from (the handle a later
    // cuGraphExec*SetParams names), or for the nodes of a child graph the child
    // graph's node in the instantiated graph.
    const void* node = nullptr;
    const void* function = nullptr; // Kernel: the CUfunction or CUkernel it runs
    uint32_t grid[3] = {1, 1, 1};
    uint32_t block[3] = {1, 1, 1};
    std::vector<uint64_t> words;     // Kernel: every 8-byte word of its parameters
    std::vector<DeviceRange> ranges; // Memcpy, Memset: the device memory of each side
};

struct GraphReplay {
    std::vector<GraphStep> steps; // in the order the driver lists the nodes
    uint32_t nodes_skipped = 0;   // nodes of other kinds, for which nothing is planned
};

// The accesses `step` makes among the live allocations, appended to `out`: a
// kernel's words as a direct launch's parameters are scanned (extent unknown), a
// copy's or set's ranges with their length.
void append_step_accesses(const GraphStep& step, const Registry& registry, std::vector<trace::Access>& out);

// The bytes one side of a 3-D copy touches: `width` bytes of each of `height`
// rows of each of `depth` planes, the side's rows `pitch` bytes apart and its
// planes `rows_per_plane` rows apart, starting at (x bytes, y, z).
DeviceRange copy_range(uint64_t base, uint64_t x, uint64_t y, uint64_t z, uint64_t pitch, uint64_t rows_per_plane,
                       uint64_t width, uint64_t height, uint64_t depth);

// The bytes a 2-D set touches: `width` elements of `element_bytes` in each of
// `height` rows `pitch` bytes apart.
DeviceRange set_range(uint64_t base, uint64_t pitch, uint64_t element_bytes, uint64_t width, uint64_t height);

// The graphs learnt, by executable graph handle. Any thread: the application's
// instantiations, launches and destructions may come from any of its threads.
class GraphTable {
public:
    struct Entry {
        uint32_t id = 0; // 1, 2, ... in order of first learning; 0: never seen
        std::shared_ptr<const GraphReplay> replay; // nullptr: what it runs is not known
    };

    // What `exec` runs from now on (nullopt: not known, and nothing is planned for
    // its launches). An executable graph learnt again keeps its id.
    void learn(const void* exec, std::optional<GraphReplay> replay);
    void forget(const void* exec);
    // A copy of the entry: the replay stays valid while the caller holds it.
    Entry find(const void* exec) const;
    // Puts `steps` in place of the steps that came from `node`. False, changing
    // nothing, when `exec` runs no known replay or none of its steps came from `node`.
    bool replace_node(const void* exec, const void* node, std::vector<GraphStep> steps);
    // Marks what `exec` runs as not known, keeping its id.
    void mark_unknown(const void* exec);
    size_t size() const;
    void clear();

    // Around fork(): held while the process is copied; the child makes it anew.
    void lock_for_fork() { mutex_.lock(); }
    void unlock_after_fork(bool in_child);

private:
    mutable std::mutex mutex_;
    std::unordered_map<const void*, Entry> by_exec_;
    uint32_t next_id_ = 1;
};

} // namespace uvmp

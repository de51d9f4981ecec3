// The access trace in memory: what the library records, what the reader returns,
// and what the simulator replays. The on-disk encoding lives in trace_writer /
// trace_reader and is specified in docs/trace-format.md.
#pragma once

#include "core/rates/link_rates.h"
#include "core/util/large_pages.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <span>
#include <vector>

namespace uvmp::trace {

inline constexpr uint16_t kFormatMajor = 1;
inline constexpr uint16_t kFormatMinor = 5;

enum class AllocKind : uint8_t {
    Converted = 0,     // device allocation turned into managed memory
    PassedThrough = 1, // device allocation left as it was (capture, managed refused, inactive)
    Vmm = 2,           // cuMemCreate
    Host = 3,          // pinned host memory
    // A block of a slab of the library's managed pool: converted too, and freed
    // bytes are dead (the pool places later blocks over them). On disk it is a
    // converted allocation that names its slab (docs/trace-format.md).
    Pooled = 4,
};

// Converted memory, in a slab of the pool or not: what the residency model tracks.
inline bool is_managed(AllocKind kind) { return kind == AllocKind::Converted || kind == AllocKind::Pooled; }

enum class MoveKind : uint8_t {
    Populate = 0, // fresh allocation placed on the GPU
    Prefetch = 1, // host -> GPU ahead of use
    Evict = 2,    // GPU -> host to stay within the budget
    Discard = 3,  // GPU copy dropped without moving (dead or read-duplicated data)
};

struct Header {
    uint16_t format_major = kFormatMajor;
    uint16_t format_minor = kFormatMinor;
    std::string library_version;
    std::string device_name;
    uint64_t device_total_bytes = 0;
    int32_t driver_version = 0;
    uint64_t chunk_bytes = 2ull << 20;
    uint64_t budget_bytes = 0;
    uint64_t start_time_ns = 0; // CLOCK_REALTIME at the start of recording
    int32_t pid = 0;
    int32_t rank = -1;
    std::map<std::string, std::string> options; // every option's effective value, as text
    // The link rates the job ran with, where they were measured or given
    // (format 1.4); nullopt: the reference figures, or a trace from before.
    std::optional<rates::LinkRates> rates;
};

// One allocation named by a launch's parameters. length == 0: extent unknown,
// assume the rest of the allocation from offset.
struct Access {
    uint32_t alloc_id = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
};

// The bytes an access names in an allocation of `allocation_size` bytes.
inline uint64_t named_bytes(const Access& access, uint64_t allocation_size) {
    if (access.offset >= allocation_size) return 0;
    const uint64_t rest = allocation_size - access.offset;
    return access.length && access.length < rest ? access.length : rest;
}

// Times are nanoseconds since Header::start_time_ns (CLOCK_MONOTONIC based).
// launches_before places allocations and frees among the launches.
struct Alloc {
    uint32_t id = 0;
    uint64_t address = 0;
    uint64_t size = 0;
    AllocKind kind = AllocKind::Converted;
    int32_t device = 0;
    uint64_t time_ns = 0;
    uint64_t launches_before = 0;
    uint32_t slab = 0; // Pooled: the id of the slab holding the block (ids start at 1)
};

struct Free {
    uint32_t id = 0;
    uint64_t time_ns = 0;
    uint64_t launches_before = 0;
};

struct Launch {
    uint64_t seq = 0; // 0, 1, 2, ... per process
    uint32_t kernel_id = 0;
    uint32_t grid[3] = {1, 1, 1};
    uint32_t block[3] = {1, 1, 1};
    uint64_t stream = 0;
    uint64_t time_ns = 0;     // host time of the launch call
    uint64_t duration_ns = 0; // GPU execution time when recorded with timing, else 0
    uint32_t first_access = 0; // index into Trace::accesses
    uint32_t access_count = 0;
};

// A kernel launch made while its stream was capturing into a graph (format 1.2):
// nothing ran then. Not a launch: it takes no sequence number, and the kernel
// runs when a graph made from the capture is launched (GraphLaunch).
struct CapturedLaunch {
    uint64_t capture_id = 0; // the driver's id of the capture sequence; 0 when not known
    uint32_t kernel_id = 0;
    uint32_t grid[3] = {1, 1, 1};
    uint32_t block[3] = {1, 1, 1};
    uint64_t stream = 0;
    uint64_t time_ns = 0;
    uint64_t launches_before = 0;
    uint32_t first_access = 0; // index into Trace::captured_accesses
    uint32_t access_count = 0;
};

// GraphLaunch::flags.
inline constexpr uint8_t kGraphLaunchCaptured = 0x01; // launched into another capture: nothing ran
inline constexpr uint8_t kGraphLaunchUnknown = 0x02;  // what the graph runs is not known: no replay recorded

// A launch of an executable graph (format 1.2). The nodes it runs that touch
// device memory follow as ordinary launch records, its replay: the `replayed`
// launches with sequence numbers from launches_before on. A reader that knows
// nothing of graphs sees those as the kernels that ran, which they are.
struct GraphLaunch {
    uint32_t graph_id = 0; // the library's id of the executable graph (1, 2, ...); 0: one it never saw made
    uint8_t flags = 0;
    uint64_t stream = 0;
    uint64_t time_ns = 0;
    uint64_t launches_before = 0; // also the seq of the replay's first launch
    uint32_t replayed = 0;        // launch records of its replay
    uint32_t nodes_skipped = 0;   // nodes of kinds nothing is planned for (host, event, ...)
};

// The alloc_id of a move of memory no allocation holds: dead bytes that freed
// blocks of the pool left on the GPU. Its offset is then the address.
inline constexpr uint32_t kNoAllocation = 0;

struct Move {
    MoveKind kind = MoveKind::Prefetch;
    uint32_t alloc_id = 0; // kNoAllocation: dead memory, at address `offset`
    uint64_t offset = 0;
    uint64_t length = 0;
    uint64_t time_ns = 0;
    uint64_t duration_ns = 0;
    uint64_t launches_before = 0;
};

// A slab of the pool made or given back (its blocks are all free by then).
enum class SlabAction : uint8_t {
    Created = 0,
    Released = 1,
};

struct Slab {
    SlabAction action = SlabAction::Created;
    uint32_t id = 0;
    uint64_t base = 0;
    uint64_t size = 0;
    int32_t device = 0;
    uint64_t time_ns = 0;
    uint64_t launches_before = 0;
};

struct Iteration {
    uint64_t index = 0;
    uint64_t launches_before = 0;
    uint64_t time_ns = 0;
};

struct Trace {
    Header header;
    std::vector<std::string> kernel_names; // indexed by Launch::kernel_id
    LargeVector<Alloc> allocs;
    LargeVector<Free> frees;
    LargeVector<Launch> launches;
    LargeVector<Access> accesses;
    LargeVector<Move> moves;
    LargeVector<Iteration> iterations;
    LargeVector<Slab> slabs;
    LargeVector<CapturedLaunch> captured_launches;
    LargeVector<Access> captured_accesses;
    LargeVector<GraphLaunch> graph_launches;
    uint64_t dropped_records = 0; // records the recorder could not keep (buffer full)

    // Whether the launch's access list lies within the access table (a reader
    // checks it; a trace built in memory may not hold it).
    bool has_accesses_of(const Launch& launch) const {
        return static_cast<uint64_t>(launch.first_access) + launch.access_count <= accesses.size();
    }
    // The launch's accesses; has_accesses_of(launch) must hold.
    std::span<const Access> accesses_of(const Launch& launch) const {
        return {accesses.data() + launch.first_access, launch.access_count};
    }
    std::span<const Access> accesses_of(const CapturedLaunch& launch) const {
        return {captured_accesses.data() + launch.first_access, launch.access_count};
    }
};

} // namespace uvmp::trace

/* uvmprefetch public C API.
 *
 * A program that runs under libuvmprefetch.so may call these functions to mark
 * training iterations and read the library's counters. A program that wants to
 * work with and without the library resolves them with
 * dlsym(RTLD_DEFAULT, "uvmp_get_stats") instead of linking against them. */
#ifndef UVMPREFETCH_UVMPREFETCH_H
#define UVMPREFETCH_UVMPREFETCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UVMP_API_VERSION 1

/* Counters since the process started. Callers set struct_size to sizeof(uvmp_stats)
 * so that later versions can append fields without breaking older callers. */
typedef struct uvmp_stats {
    uint32_t struct_size;
    uint32_t active; /* 1 when the library intercepts, 0 when it is a pure pass-through */

    uint64_t allocs_converted;      /* device allocations turned into managed memory */
    uint64_t bytes_converted;       /* total bytes of those */
    uint64_t bytes_converted_live;  /* converted bytes not yet freed */
    uint64_t bytes_converted_peak;  /* high-water mark of bytes_converted_live */
    uint64_t frees_converted;

    uint64_t allocs_passed_through; /* all allocations left as they were, by any reason below */
    uint64_t bytes_passed_through;
    uint64_t passthrough_vmm;       /* cuMemCreate (virtual memory management) */
    uint64_t passthrough_host;      /* pinned host allocations */
    uint64_t passthrough_capture;   /* stream-ordered allocations during graph capture */
    uint64_t passthrough_managed_failed; /* cuMemAllocManaged refused; real allocator used */
    uint64_t passthrough_inactive;  /* made while the library was a pass-through */

    uint64_t guard_refusals;        /* allocations refused by the physical guard */

    uint64_t launches_seen;
    uint64_t launches_with_access;  /* launches whose parameters named at least one converted allocation;
                                       read only while a trace is kept, or under a budget from the first
                                       launch past it (or after a host home), so 0 for a job within it */
    uint64_t access_entries;        /* (allocation, offset) pairs found over all launches */

    uint64_t populate_calls;
    uint64_t bytes_populated;       /* converted bytes given pages on the GPU with no data to move: at
                                       allocation time, or fresh memory first brought in by a later move */
    uint64_t bytes_prefetched;      /* bytes fetched to the GPU that held data elsewhere */
    uint64_t bytes_evicted;

    uint64_t iterations;            /* uvmp_mark_iteration calls */
    uint64_t budget_bytes;          /* the emulated capacity of the first device the job allocated on
                                       (0 before the first allocation; the stats file has each device's) */
    uint64_t guard_limit_bytes;     /* the physical guard's limit on that device */

    uint64_t trace_records_written;
    uint64_t trace_records_dropped;

    uint64_t launches_unplanned;    /* launches the policy skipped because its worker was behind */
    uint64_t move_calls;            /* prefetch/evict/populate calls issued by the worker */
    uint64_t move_call_ns;          /* host time the worker spent inside those calls */
    uint64_t bytes_demand_estimated; /* bytes launches needed that the policy had not made
                                        resident before them: faulted in, or fetched late */
    uint64_t launches_with_demand;  /* launches with such bytes: likely stalls */
    uint64_t launch_calls_timed;    /* launch calls timed (one in 64, only with a policy on) */
    uint64_t launch_call_ns;        /* host time the application spent inside them */
    uint64_t launches_captured;     /* launches into a graph being captured: not planned */
    uint64_t launches_fenced;       /* launches given a fence (an event the moves planned for
                                       them wait on); none while all memory fits the budget */
    uint64_t hooks_timed;           /* launches whose hook was timed: one in 64 */
    uint64_t hook_ns;               /* host time the library's own work took in those launches
                                       (finding accesses, planning, recording), not the driver's */
    uint64_t pool_slabs_created;    /* managed slabs the pool asked of the driver */
    uint64_t pool_slabs_released;   /* slabs given back (idle, trimmed, or at exit) */
    uint64_t pool_reserved_bytes;   /* bytes of slabs held now, over every device (their address
                                       space; the pool's reserved figure for cuMemPoolGetAttribute
                                       counts only the chunks that blocks have covered) */
    uint64_t pool_reserved_peak;    /* high-water mark of pool_reserved_bytes */
    uint64_t graph_launches;        /* cuGraphLaunch calls (captured ones included) */
    uint64_t graph_launches_unknown; /* graph launches of graphs the library could not walk: not planned */
    uint64_t graph_steps_replayed;  /* kernel, copy and set nodes the graph launches ran, each planned
                                       as a launch of its own */
    uint64_t launches_planned;      /* launches (graph steps included) the policy was handed; with
                                       launches_unplanned, every one that had an access and ran */
    uint64_t passthrough_app_managed; /* the application's own cuMemAllocManaged: counted against its
                                         device's memory, never converted or moved */
    uint64_t host_allocs;           /* converted allocations homed on the host (UVMP_HOST_HOMES): blocks of
                                       host-homed slabs the GPU reads and writes remotely, never migrated
                                       and never counted against the budget */
    uint64_t host_bytes_allocated;  /* total bytes of those */
    uint64_t host_blocks_live;      /* host-homed blocks not yet freed */
    uint64_t host_bytes_live;
    uint64_t host_slabs_created;    /* host-homed slabs the pool asked of the driver */
    uint64_t host_slab_bytes;       /* bytes of host-homed slabs held now (not in pool_reserved_bytes) */
    uint64_t bytes_evicted_dead;    /* of bytes_evicted: dead bytes freed blocks had left on the GPU,
                                       evicted to make room under the budget */
    uint64_t bytes_dead_resident;   /* dead bytes on the GPU now, counted against the budget until a
                                       block is placed over them or they are evicted */
    uint64_t bytes_held_peak;       /* the most the policy's model held of one GPU at once, live
                                       resident and dead bytes together: within the budget unless a
                                       launch alone exceeds it */
    uint64_t remote_write_bytes_named; /* bytes of host-homed blocks named by the first launch to name
                                          each since it was made, taken as writing them over the link:
                                          one trip of what it names (the rest of the block from the
                                          address it was given), not bytes measured on the link.
                                          Counted by the policy's planner: launches it skipped
                                          (launches_unplanned), and every launch under policy none,
                                          are not counted */
    uint64_t remote_read_bytes_named;  /* the same of every later launch naming them, taken as reading
                                          them: one trip a launch (a kernel that re-reads an operand
                                          moves more) */
    uint64_t pool_slab_release_ns;     /* time spent giving the pool's slabs back to the driver, on
                                          the threads whose frees or allocations emptied them:
                                          cuMemFree of managed memory returns only once the GPU has
                                          run the work queued before it, and launches from other
                                          threads wait with it */
} uvmp_stats;

/* Fills *out (up to out->struct_size bytes). Returns 0 on success, -1 on a NULL
 * argument or a struct_size smaller than the first two fields. */
int uvmp_get_stats(uvmp_stats* out);

/* Marks the end of one training iteration (step). Cheap; safe from any thread. */
void uvmp_mark_iteration(void);

/* The library's version, "MAJOR.MINOR.PATCH". */
const char* uvmp_version(void);

#ifdef __cplusplus
}
#endif

#endif

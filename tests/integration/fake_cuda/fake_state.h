// State shared by the fake driver's entry points: the allocations it handed out,
// its kernels, streams and events, and its counters. Everything here is guarded by
// one mutex or atomic, since the preloaded library calls the driver from its own
// worker thread as well as from the application's.
#pragma once

#include "fakecuda.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

// Only the driver's names and the fakecuda_ helpers leave the library.
#define FAKECUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace fakecuda {

enum class MemoryKind { device, device_async, managed, host };

struct Allocation {
    std::uintptr_t base = 0;
    std::size_t size = 0;
    MemoryKind kind = MemoryKind::device;
    std::uint64_t buffer_id = 0;
    CUmemoryPool pool = nullptr;  // device_async: the pool it came from
    fakecuda_managed_record managed{};  // managed: advice and prefetches
};

struct KernelParam {
    std::size_t offset = 0;
    std::size_t size = 0;
};

// Both handle flavours point at one of these; the flavour decides which query
// functions accept it.
struct Kernel {
    bool is_cukernel = false;
    std::string name;
    std::vector<KernelParam> params;

    std::size_t param_bytes() const;
};

struct Stream {
    bool capturing = false;
};

// Recorded work completes at once unless events are held (fakecuda_hold_events).
struct Event {
    std::atomic<bool> complete{true};
};

// A memory pool's attributes; the figures count the allocations the fake itself
// made from it. Reserved memory grows in 2 MiB steps and shrinks only when trimmed.
struct MemPool {
    std::uint64_t release_threshold = 0;
    int reuse_follow_event_dependencies = 1;
    int reuse_allow_opportunistic = 1;
    int reuse_allow_internal_dependencies = 1;
    std::uint64_t used = 0;
    std::uint64_t used_high = 0;
    std::uint64_t reserved = 0;
    std::uint64_t reserved_high = 0;
};

// Atomic twins of the fields of fakecuda_counts.
struct Counters {
#define FAKECUDA_COUNTER_FIELDS(X)                                                                  \
    X(mem_alloc) X(mem_alloc_pitch) X(mem_alloc_async) X(mem_alloc_from_pool) X(mem_alloc_managed) \
    X(mem_alloc_host) X(mem_create) X(frees) X(frees_async) X(frees_host) X(launch_kernel)         \
    X(launch_kernel_ptsz) X(launch_kernel_ex) X(launch_kernel_ex_ptsz) X(launch_cooperative)       \
    X(launch_cooperative_ptsz) X(launches_failed) X(prefetch_calls) X(prefetch_bytes)              \
    X(prefetch_to_host_bytes) X(prefetch_refused) X(advise_calls) X(mem_get_info_calls)            \
    X(ctx_synchronize) X(events_created) X(events_destroyed) X(event_queries) X(event_waits)       \
    X(mem_pool_trims) X(mem_pool_attribute_queries) X(captured_launches) X(graph_launches)             \
    X(graph_kernel_runs) X(graph_memsets) X(graph_memcpys)
#define FAKECUDA_DECLARE_COUNTER(field) std::atomic<std::uint64_t> field{0};
    FAKECUDA_COUNTER_FIELDS(FAKECUDA_DECLARE_COUNTER)
#undef FAKECUDA_DECLARE_COUNTER
};

Counters& counters();

// True once cuInit succeeded; most entry points refuse to work before, as the
// real driver does.
bool initialized();
void mark_initialized();

CUcontext the_context();
CUmemoryPool the_default_pool();

// Allocation registry. Pointers are host addresses from aligned allocation.
// A device_async allocation names the pool it comes from.
CUresult allocate(MemoryKind kind, std::size_t size, std::uintptr_t* out, CUmemoryPool pool = nullptr);
CUresult release(std::uintptr_t base, std::optional<MemoryKind> required_kind,
                 const std::vector<MemoryKind>& accepted_kinds);
// The allocation that contains address, if any.
std::optional<Allocation> find_allocation(std::uintptr_t address);
// Runs `f` on the record of the allocation containing `address` under the
// state's lock; false when there is none.
bool with_managed_record(std::uintptr_t address, const std::function<void(fakecuda_managed_record&)>& f);
std::size_t live_device_bytes();
std::size_t live_managed_bytes();
std::size_t live_allocation_count();
bool any_stream_capturing();

// Handle registries: a handle is valid only if the fake made it.
Kernel* find_kernel(const void* handle);
Kernel* make_kernel(const char* name, unsigned count, const std::size_t* offsets,
                    const std::size_t* sizes, bool is_cukernel);
// The kernel is gone (its module unloaded); its handle goes to the next kernel made.
void retire_kernel(const void* handle);
// The null handle and the two special stream handles are valid streams.
bool valid_stream(CUstream stream);
Stream* find_stream(CUstream stream);
CUstream make_stream();
bool destroy_stream(CUstream stream);
Event* find_event(CUevent event);
CUevent make_event();
bool destroy_event(CUevent event);
std::size_t live_event_count();
// While held, events recorded stay incomplete until completed.
void hold_events(bool hold);
bool events_held();
void complete_all_events();

// Memory pools: the device's default one, and those made with cuMemPoolCreate.
// with_pool runs `f` on the pool under the state's lock; false for an unknown handle.
bool with_pool(CUmemoryPool pool, const std::function<void(MemPool&)>& f);
CUmemoryPool make_pool();
bool destroy_pool(CUmemoryPool pool);
CUmemoryPool current_pool();
void set_current_pool(CUmemoryPool pool);

void remember_launch_params(std::vector<unsigned char> bytes);
void set_capturing(Stream& stream, bool capturing);

// Graphs (fake_graph.cpp). A launch on a stream that captures into a graph
// (cuStreamBeginCapture) becomes a kernel node of the graph instead of running:
// true when it did.
bool capture_kernel(CUstream stream, const void* handle, const Kernel& kernel, const unsigned (&grid)[3],
                    const unsigned (&block)[3], const std::vector<unsigned char>& params);

}  // namespace fakecuda

// cuda.h maps cuGetProcAddress to its _v2; the fake also exports the v1 under its own name.
#undef cuGetProcAddress
extern "C" CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                             cuuint64_t flags);
// The same for the memory queries, whose first versions report in 32 bits.
#undef cuMemGetInfo
#undef cuDeviceTotalMem
extern "C" CUresult CUDAAPI cuMemGetInfo(unsigned int* free, unsigned int* total);
extern "C" CUresult CUDAAPI cuDeviceTotalMem(unsigned int* bytes, CUdevice device);

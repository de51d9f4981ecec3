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
    int device = 0;               // the device whose context was current when it was made
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
    CUcontext context = nullptr;  // current when the stream was made
    // The device of the stream the event it last waited for was recorded on (-1:
    // none): the moves queued after that wait run behind that device's work.
    std::atomic<int> waited_device{-1};
};

// Recorded work completes at once unless events are held (fakecuda_hold_events).
struct Event {
    std::atomic<bool> complete{true};
    CUcontext context = nullptr;          // current when the event was made
    std::atomic<int> recorded_device{-1};  // the device of the stream it was last recorded on
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
    X(graph_kernel_runs) X(graph_memsets) X(graph_memcpys) X(event_records_refused)                  \
    X(moves_across_devices)
#define FAKECUDA_DECLARE_COUNTER(field) std::atomic<std::uint64_t> field{0};
    FAKECUDA_COUNTER_FIELDS(FAKECUDA_DECLARE_COUNTER)
#undef FAKECUDA_DECLARE_COUNTER
};

Counters& counters();

// The fake's devices: FAKECUDA_DEVICES of them (1 unless set, at most kMaxDevices),
// each with FAKECUDA_DEVICE_TOTAL_BYTES unless FAKECUDA_DEVICE_MEMORY lists sizes
// ("64M,32M": the n-th size is device n's, the last one serves the devices after it).
constexpr int kMaxDevices = 8;
int device_count();
bool valid_device(CUdevice device);
std::uint64_t device_total_bytes(int device);

// Atomic twins of the fields of fakecuda_device_counts, one set a device.
struct DeviceCounters {
#define FAKECUDA_DEVICE_COUNTER_FIELDS(X) \
    X(launches) X(prefetch_bytes) X(prefetch_to_host_bytes) X(stream_waits) X(foreign_event_waits)
#define FAKECUDA_DECLARE_COUNTER(field) std::atomic<std::uint64_t> field{0};
    FAKECUDA_DEVICE_COUNTER_FIELDS(FAKECUDA_DECLARE_COUNTER)
#undef FAKECUDA_DECLARE_COUNTER
};
DeviceCounters& device_counters(int device);  // device must be valid

// Contexts: each device has its primary one. Every thread starts with device 0's
// current, which is what a program sees after the runtime's first call; a thread
// may make another current (cuCtxSetCurrent, cuCtxPushCurrent).
CUcontext primary_context(int device);
// The device of a context the fake made, or -1.
int context_device(CUcontext context);
CUcontext current_context();
int current_device();
// nullptr makes device 0's primary context current again.
void set_current_context(CUcontext context);
// The calling thread's stack of contexts below the current one; popping an empty
// one leaves device 0's primary context current.
void push_context(CUcontext context);
void pop_context();

// True once cuInit succeeded; most entry points refuse to work before, as the
// real driver does.
bool initialized();
void mark_initialized();

// Each device's default memory pool.
CUmemoryPool default_pool(int device);

// Allocation registry. Pointers are host addresses from aligned allocation.
// A device_async allocation names the pool it comes from. Device and managed
// memory is the current device's, and counts against that device's memory.
CUresult allocate(MemoryKind kind, std::size_t size, std::uintptr_t* out, CUmemoryPool pool = nullptr);
CUresult release(std::uintptr_t base, std::optional<MemoryKind> required_kind,
                 const std::vector<MemoryKind>& accepted_kinds);
// The allocation that contains address, if any.
std::optional<Allocation> find_allocation(std::uintptr_t address);
// Runs `f` on the record of the allocation containing `address` under the
// state's lock; false when there is none.
bool with_managed_record(std::uintptr_t address, const std::function<void(fakecuda_managed_record&)>& f);
// Over every device, or of one.
std::size_t live_device_bytes(int device = -1);
std::size_t live_managed_bytes(int device = -1);
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
// A stream the fake made, in the current context.
CUstream make_stream();
// The context a valid stream belongs to (the special handles: the current one),
// nullptr for an invalid stream.
CUcontext stream_context(CUstream stream);
bool destroy_stream(CUstream stream);
Event* find_event(CUevent event);
// An event of the current context.
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
CUmemoryPool current_pool(int device);
void set_current_pool(int device, CUmemoryPool pool);

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

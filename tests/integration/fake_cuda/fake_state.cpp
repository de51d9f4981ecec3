#include "fake_state.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <unordered_map>

namespace fakecuda {
namespace {

// Real device allocations are at least 256-byte aligned; a page keeps the fake's
// addresses as far apart as a driver's would be.
constexpr std::size_t kAllocationAlignment = 4096;
// A pool's reserved memory grows by whole pieces of this.
constexpr std::uint64_t kPoolGranularity = 2ull << 20;

struct Registry {
    std::mutex mutex;
    bool initialized = false;
    std::map<std::uintptr_t, Allocation> allocations;  // by base address
    std::uint64_t next_buffer_id = 1;
    std::unordered_map<const void*, std::unique_ptr<Kernel>> kernels;
    // Kernels of unloaded modules: the next kernel made takes the latest one's
    // handle, as a real driver may hand a freed function's address out again.
    std::vector<std::unique_ptr<Kernel>> retired;
    std::unordered_map<const void*, std::unique_ptr<Stream>> streams;
    std::unordered_map<const void*, std::unique_ptr<Event>> events;
    std::vector<unsigned char> last_launch_params;
    MemPool default_pools[kMaxDevices];  // a device's handle is its pool's address
    std::unordered_map<const void*, std::unique_ptr<MemPool>> pools;  // made with cuMemPoolCreate
    CUmemoryPool current_pools[kMaxDevices] = {};  // nullptr: the device's default pool
};

struct DeviceSetup {
    int count = 1;
    std::uint64_t total_bytes[kMaxDevices] = {};
};

// "64M" and the like: bytes, with an optional K, M or G; 0 for anything else.
std::uint64_t parse_size(const char* text, char** end) {
    std::uint64_t value = std::strtoull(text, end, 10);
    switch (**end) {
    case 'K': value <<= 10; ++*end; break;
    case 'M': value <<= 20; ++*end; break;
    case 'G': value <<= 30; ++*end; break;
    default: break;
    }
    return value;
}

// Read once from the environment: a test sets it for the whole process.
const DeviceSetup& device_setup() {
    static const DeviceSetup setup = [] {
        DeviceSetup s;
        if (const char* count = std::getenv("FAKECUDA_DEVICES"))
            s.count = std::clamp(std::atoi(count), 1, kMaxDevices);
        std::uint64_t size = FAKECUDA_DEVICE_TOTAL_BYTES;
        const char* sizes = std::getenv("FAKECUDA_DEVICE_MEMORY");
        for (int d = 0; d < kMaxDevices; ++d) {
            if (sizes != nullptr && *sizes != '\0') {
                char* end = nullptr;
                if (const std::uint64_t parsed = parse_size(sizes, &end); parsed != 0) size = parsed;
                sizes = *end == ',' ? end + 1 : end;
            }
            s.total_bytes[d] = size;
        }
        return s;
    }();
    return setup;
}

// Their addresses are the contexts' handles.
int g_context_objects[kMaxDevices];

thread_local CUcontext t_current_context = nullptr;  // nullptr: device 0's primary context
thread_local std::vector<CUcontext> t_context_stack;

std::atomic<bool> g_events_held{false};

// Never destroyed: the preloaded library may still call the driver from its
// exit handlers after this library's static destructors would have run.
Registry& registry() {
    static Registry* instance = new Registry;
    return *instance;
}

// A program may fork while its other threads call the driver: the child gets
// the state whole, never with its lock held by a thread the child does not have.
__attribute__((constructor)) void hold_state_across_fork() {
    pthread_atfork([] { registry().mutex.lock(); }, [] { registry().mutex.unlock(); },
                   [] { registry().mutex.unlock(); });
}

bool counts_as_device(MemoryKind kind) {
    return kind == MemoryKind::device || kind == MemoryKind::device_async;
}

bool on_device(const Allocation& a, int device) { return device < 0 || a.device == device; }

std::uint64_t round_to_pool_granularity(std::uint64_t bytes) {
    return (bytes + kPoolGranularity - 1) / kPoolGranularity * kPoolGranularity;
}

// A new object kept in one of the registry's handle tables; its address is its handle.
template <typename Handle, typename T, typename Setup = void (*)(T&)>
Handle keep_new(std::unordered_map<const void*, std::unique_ptr<T>>& table, Setup setup = [](T&) {}) {
    auto object = std::make_unique<T>();
    setup(*object);
    auto handle = reinterpret_cast<Handle>(object.get());
    std::lock_guard lock(registry().mutex);
    table.emplace(handle, std::move(object));
    return handle;
}

// The caller holds the registry's lock.
MemPool* pool_locked(Registry& r, CUmemoryPool pool) {
    for (int d = 0; d < device_count(); ++d)
        if (pool == default_pool(d)) return &r.default_pools[d];
    auto it = r.pools.find(pool);
    return it == r.pools.end() ? nullptr : it->second.get();
}

}  // namespace

std::size_t Kernel::param_bytes() const {
    std::size_t end = 0;
    for (const KernelParam& p : params) end = std::max(end, p.offset + p.size);
    return end;
}

Counters& counters() {
    static Counters* instance = new Counters;
    return *instance;
}

bool initialized() {
    std::lock_guard lock(registry().mutex);
    return registry().initialized;
}

void mark_initialized() {
    std::lock_guard lock(registry().mutex);
    registry().initialized = true;
}

int device_count() { return device_setup().count; }

bool valid_device(CUdevice device) { return device >= 0 && device < device_count(); }

std::uint64_t device_total_bytes(int device) { return device_setup().total_bytes[device]; }

DeviceCounters& device_counters(int device) {
    static DeviceCounters* instance = new DeviceCounters[kMaxDevices];
    return instance[device];
}

CUcontext primary_context(int device) { return reinterpret_cast<CUcontext>(&g_context_objects[device]); }

int context_device(CUcontext context) {
    for (int d = 0; d < device_count(); ++d)
        if (context == primary_context(d)) return d;
    return -1;
}

CUcontext current_context() { return t_current_context != nullptr ? t_current_context : primary_context(0); }

int current_device() { return context_device(current_context()); }

void set_current_context(CUcontext context) { t_current_context = context; }

void push_context(CUcontext context) {
    t_context_stack.push_back(current_context());
    t_current_context = context;
}

void pop_context() {
    if (t_context_stack.empty()) {
        t_current_context = nullptr;
        return;
    }
    t_current_context = t_context_stack.back();
    t_context_stack.pop_back();
}

CUmemoryPool default_pool(int device) { return reinterpret_cast<CUmemoryPool>(&registry().default_pools[device]); }

CUresult allocate(MemoryKind kind, std::size_t size, std::uintptr_t* out, CUmemoryPool pool) {
    if (size == 0 || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    MemPool* from = kind == MemoryKind::device_async ? pool_locked(r, pool) : nullptr;
    if (kind == MemoryKind::device_async && from == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const int device = current_device();
    if (counts_as_device(kind)) {
        std::size_t used = 0;
        for (const auto& [base, a] : r.allocations)
            if (a.kind != MemoryKind::host && a.device == device) used += a.size;
        if (used + size > device_total_bytes(device)) return CUDA_ERROR_OUT_OF_MEMORY;
    }
    const std::size_t rounded = (size + kAllocationAlignment - 1) / kAllocationAlignment *
                                kAllocationAlignment;
    void* memory = std::aligned_alloc(kAllocationAlignment, rounded);
    if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    const auto base = reinterpret_cast<std::uintptr_t>(memory);
    Allocation& made = r.allocations[base] = Allocation{base, size, kind, r.next_buffer_id++, pool, device};
    made.managed.preferred_location_type = -1;
    made.managed.accessed_by_device = -1;
    if (from != nullptr) {
        from->used += size;
        from->used_high = std::max(from->used_high, from->used);
        from->reserved = std::max(from->reserved, round_to_pool_granularity(from->used));
        from->reserved_high = std::max(from->reserved_high, from->reserved);
    }
    *out = base;
    return CUDA_SUCCESS;
}

CUresult release(std::uintptr_t base, std::optional<MemoryKind> required_kind,
                 const std::vector<MemoryKind>& accepted_kinds) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.allocations.find(base);
    if (it == r.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
    bool accepted = accepted_kinds.empty();
    for (MemoryKind k : accepted_kinds) accepted = accepted || k == it->second.kind;
    if (required_kind && *required_kind != it->second.kind) accepted = false;
    if (!accepted) return CUDA_ERROR_INVALID_VALUE;
    if (it->second.kind == MemoryKind::device_async)
        if (MemPool* from = pool_locked(r, it->second.pool)) from->used -= it->second.size;
    std::free(reinterpret_cast<void*>(base));
    r.allocations.erase(it);
    return CUDA_SUCCESS;
}

std::optional<Allocation> find_allocation(std::uintptr_t address) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.allocations.upper_bound(address);
    if (it == r.allocations.begin()) return std::nullopt;
    --it;
    if (address >= it->second.base + it->second.size) return std::nullopt;
    return it->second;
}

bool with_managed_record(std::uintptr_t address, const std::function<void(fakecuda_managed_record&)>& f) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.allocations.upper_bound(address);
    if (it == r.allocations.begin()) return false;
    --it;
    if (address >= it->second.base + it->second.size) return false;
    f(it->second.managed);
    return true;
}

std::size_t live_device_bytes(int device) {
    std::lock_guard lock(registry().mutex);
    std::size_t total = 0;
    for (const auto& [base, a] : registry().allocations)
        if (counts_as_device(a.kind) && on_device(a, device)) total += a.size;
    return total;
}

std::size_t live_managed_bytes(int device) {
    std::lock_guard lock(registry().mutex);
    std::size_t total = 0;
    for (const auto& [base, a] : registry().allocations)
        if (a.kind == MemoryKind::managed && on_device(a, device)) total += a.size;
    return total;
}

std::size_t live_allocation_count() {
    std::lock_guard lock(registry().mutex);
    return registry().allocations.size();
}

bool any_stream_capturing() {
    std::lock_guard lock(registry().mutex);
    for (const auto& [handle, s] : registry().streams)
        if (s->capturing) return true;
    return false;
}

Kernel* find_kernel(const void* handle) {
    std::lock_guard lock(registry().mutex);
    auto it = registry().kernels.find(handle);
    return it == registry().kernels.end() ? nullptr : it->second.get();
}

Kernel* make_kernel(const char* name, unsigned count, const std::size_t* offsets,
                    const std::size_t* sizes, bool is_cukernel) {
    if (name == nullptr || (count > 0 && (offsets == nullptr || sizes == nullptr))) return nullptr;
    Kernel made;
    made.is_cukernel = is_cukernel;
    made.name = name;
    for (unsigned i = 0; i < count; ++i) {
        if (sizes[i] == 0) return nullptr;
        made.params.push_back(KernelParam{offsets[i], sizes[i]});
    }
    std::lock_guard lock(registry().mutex);
    std::unique_ptr<Kernel> kernel;
    if (!registry().retired.empty()) {
        kernel = std::move(registry().retired.back());
        registry().retired.pop_back();
        *kernel = std::move(made);
    } else {
        kernel = std::make_unique<Kernel>(std::move(made));
    }
    Kernel* raw = kernel.get();
    registry().kernels.emplace(raw, std::move(kernel));
    return raw;
}

void retire_kernel(const void* handle) {
    std::lock_guard lock(registry().mutex);
    auto it = registry().kernels.find(handle);
    if (it == registry().kernels.end()) return;
    registry().retired.push_back(std::move(it->second));
    registry().kernels.erase(it);
}

bool valid_stream(CUstream stream) {
    if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
        return true;
    return find_stream(stream) != nullptr;
}

Stream* find_stream(CUstream stream) {
    std::lock_guard lock(registry().mutex);
    auto it = registry().streams.find(stream);
    return it == registry().streams.end() ? nullptr : it->second.get();
}

CUstream make_stream() {
    const CUcontext context = current_context();
    return keep_new<CUstream>(registry().streams, [&](Stream& s) { s.context = context; });
}

CUcontext stream_context(CUstream stream) {
    if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
        return current_context();
    const Stream* s = find_stream(stream);
    return s != nullptr ? s->context : nullptr;
}

bool destroy_stream(CUstream stream) {
    std::lock_guard lock(registry().mutex);
    return registry().streams.erase(stream) == 1;
}

Event* find_event(CUevent event) {
    std::lock_guard lock(registry().mutex);
    auto it = registry().events.find(event);
    return it == registry().events.end() ? nullptr : it->second.get();
}

CUevent make_event() {
    const CUcontext context = current_context();
    return keep_new<CUevent>(registry().events, [&](Event& e) { e.context = context; });
}

bool destroy_event(CUevent event) {
    std::lock_guard lock(registry().mutex);
    return registry().events.erase(event) == 1;
}

std::size_t live_event_count() {
    std::lock_guard lock(registry().mutex);
    return registry().events.size();
}

void hold_events(bool hold) {
    g_events_held = hold;
    if (!hold) complete_all_events();
}

bool events_held() { return g_events_held; }

void complete_all_events() {
    std::lock_guard lock(registry().mutex);
    for (auto& [handle, event] : registry().events) event->complete = true;
}

bool with_pool(CUmemoryPool pool, const std::function<void(MemPool&)>& f) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    MemPool* p = pool_locked(r, pool);
    if (p == nullptr) return false;
    f(*p);
    return true;
}

CUmemoryPool make_pool() { return keep_new<CUmemoryPool>(registry().pools); }

bool destroy_pool(CUmemoryPool pool) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (CUmemoryPool& current : r.current_pools)
        if (current == pool) current = nullptr;
    return r.pools.erase(pool) == 1;
}

CUmemoryPool current_pool(int device) {
    std::lock_guard lock(registry().mutex);
    const CUmemoryPool set = registry().current_pools[device];
    return set != nullptr ? set : default_pool(device);
}

void set_current_pool(int device, CUmemoryPool pool) {
    std::lock_guard lock(registry().mutex);
    registry().current_pools[device] = pool;
}

void remember_launch_params(std::vector<unsigned char> bytes) {
    std::lock_guard lock(registry().mutex);
    registry().last_launch_params = std::move(bytes);
}

void set_capturing(Stream& stream, bool capturing) {
    std::lock_guard lock(registry().mutex);
    stream.capturing = capturing;
}

}  // namespace fakecuda

using namespace fakecuda;

FAKECUDA_EXPORT fakecuda_counts fakecuda_counters(void) {
    fakecuda_counts out{};
    const Counters& c = counters();
#define FAKECUDA_COPY_COUNTER(field) out.field = c.field.load();
    FAKECUDA_COUNTER_FIELDS(FAKECUDA_COPY_COUNTER)
#undef FAKECUDA_COPY_COUNTER
    out.live_allocations = live_allocation_count();
    out.live_device_bytes = live_device_bytes();
    out.live_managed_bytes = live_managed_bytes();
    out.live_events = live_event_count();
    return out;
}

FAKECUDA_EXPORT fakecuda_device_counts fakecuda_device_counters(int device) {
    fakecuda_device_counts out{};
    if (!valid_device(device)) return out;
    const DeviceCounters& c = device_counters(device);
#define FAKECUDA_COPY_COUNTER(field) out.field = c.field.load();
    FAKECUDA_DEVICE_COUNTER_FIELDS(FAKECUDA_COPY_COUNTER)
#undef FAKECUDA_COPY_COUNTER
    out.live_device_bytes = live_device_bytes(device);
    out.live_managed_bytes = live_managed_bytes(device);
    return out;
}

FAKECUDA_EXPORT int fakecuda_hold_events(int hold) {
    hold_events(hold != 0);
    return 0;
}

namespace {

// With FAKECUDA_EXIT_REPORT set, what is still live when the fake is unloaded.
// Objects loaded with the program are unloaded after one preloaded before them,
// so a program linked against the fake sees here what the library left behind.
__attribute__((destructor)) void report_at_exit() {
    if (std::getenv("FAKECUDA_EXIT_REPORT") == nullptr) return;
    std::fprintf(stderr, "fakecuda at exit: %zu live allocations (%zu managed bytes), %zu live events\n",
                 live_allocation_count(), live_managed_bytes(), live_event_count());
}

}  // namespace

FAKECUDA_EXPORT CUfunction fakecuda_make_function(
    const char* name, unsigned count, const size_t* offsets, const size_t* sizes) {
    return reinterpret_cast<CUfunction>(make_kernel(name, count, offsets, sizes, false));
}

FAKECUDA_EXPORT CUkernel fakecuda_make_kernel(
    const char* name, unsigned count, const size_t* offsets, const size_t* sizes) {
    return reinterpret_cast<CUkernel>(make_kernel(name, count, offsets, sizes, true));
}

FAKECUDA_EXPORT size_t fakecuda_last_launch_params(
    void* out, size_t capacity) {
    std::lock_guard lock(registry().mutex);
    const auto& bytes = registry().last_launch_params;
    if (out != nullptr) std::memcpy(out, bytes.data(), std::min(capacity, bytes.size()));
    return bytes.size();
}

FAKECUDA_EXPORT int fakecuda_set_stream_capturing(
    CUstream stream, int capturing) {
    Stream* s = find_stream(stream);
    if (s == nullptr) return -1;
    set_capturing(*s, capturing != 0);
    return 0;
}

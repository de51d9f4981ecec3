#include "fake_state.h"

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

struct Registry {
    std::mutex mutex;
    bool initialized = false;
    std::map<std::uintptr_t, Allocation> allocations;  // by base address
    std::uint64_t next_buffer_id = 1;
    std::unordered_map<const void*, std::unique_ptr<Kernel>> kernels;
    std::unordered_map<const void*, std::unique_ptr<Stream>> streams;
    std::unordered_map<const void*, std::unique_ptr<Event>> events;
    std::vector<unsigned char> last_launch_params;
};

// Never destroyed: the preloaded library may still call the driver from its
// exit handlers after this library's static destructors would have run.
Registry& registry() {
    static Registry* instance = new Registry;
    return *instance;
}

bool counts_as_device(MemoryKind kind) {
    return kind == MemoryKind::device || kind == MemoryKind::device_async;
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

CUcontext the_context() {
    static int context_object;
    return reinterpret_cast<CUcontext>(&context_object);
}

CUmemoryPool the_default_pool() {
    static int pool_object;
    return reinterpret_cast<CUmemoryPool>(&pool_object);
}

CUresult allocate(MemoryKind kind, std::size_t size, std::uintptr_t* out) {
    if (size == 0 || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    if (counts_as_device(kind)) {
        std::size_t used = 0;
        for (const auto& [base, a] : r.allocations)
            if (a.kind != MemoryKind::host) used += a.size;
        if (used + size > FAKECUDA_DEVICE_TOTAL_BYTES) return CUDA_ERROR_OUT_OF_MEMORY;
    }
    const std::size_t rounded = (size + kAllocationAlignment - 1) / kAllocationAlignment *
                                kAllocationAlignment;
    void* memory = std::aligned_alloc(kAllocationAlignment, rounded);
    if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    const auto base = reinterpret_cast<std::uintptr_t>(memory);
    r.allocations[base] = Allocation{base, size, kind, r.next_buffer_id++};
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

std::size_t live_device_bytes() {
    std::lock_guard lock(registry().mutex);
    std::size_t total = 0;
    for (const auto& [base, a] : registry().allocations)
        if (counts_as_device(a.kind)) total += a.size;
    return total;
}

std::size_t live_managed_bytes() {
    std::lock_guard lock(registry().mutex);
    std::size_t total = 0;
    for (const auto& [base, a] : registry().allocations)
        if (a.kind == MemoryKind::managed) total += a.size;
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
    auto kernel = std::make_unique<Kernel>();
    kernel->is_cukernel = is_cukernel;
    kernel->name = name;
    for (unsigned i = 0; i < count; ++i) {
        if (sizes[i] == 0) return nullptr;
        kernel->params.push_back(KernelParam{offsets[i], sizes[i]});
    }
    Kernel* raw = kernel.get();
    std::lock_guard lock(registry().mutex);
    registry().kernels.emplace(raw, std::move(kernel));
    return raw;
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
    auto stream = std::make_unique<Stream>();
    auto handle = reinterpret_cast<CUstream>(stream.get());
    std::lock_guard lock(registry().mutex);
    registry().streams.emplace(handle, std::move(stream));
    return handle;
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
    auto event = std::make_unique<Event>();
    auto handle = reinterpret_cast<CUevent>(event.get());
    std::lock_guard lock(registry().mutex);
    registry().events.emplace(handle, std::move(event));
    return handle;
}

bool destroy_event(CUevent event) {
    std::lock_guard lock(registry().mutex);
    return registry().events.erase(event) == 1;
}

void remember_launch_params(std::vector<unsigned char> bytes) {
    std::lock_guard lock(registry().mutex);
    registry().last_launch_params = std::move(bytes);
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
    return out;
}

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
    std::lock_guard lock(registry().mutex);
    s->capturing = capturing != 0;
    return 0;
}

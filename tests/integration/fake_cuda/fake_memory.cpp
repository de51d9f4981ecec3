// Allocation, free, memory information, pointer attributes, prefetch and advice.
#include "fake_faults.h"
#include "fake_state.h"

#include <cstring>
#include <vector>

using namespace fakecuda;

namespace {

CUresult allocate_counted(MemoryKind kind, CUdeviceptr* dptr, std::size_t bytes,
                          std::atomic<std::uint64_t>& counter, CUmemoryPool pool = nullptr) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::uintptr_t base = 0;
    const CUresult result = allocate(kind, bytes, &base, pool);
    if (result != CUDA_SUCCESS) return result;
    *dptr = static_cast<CUdeviceptr>(base);
    ++counter;
    return CUDA_SUCCESS;
}

// From the device's current pool when `pool` is nullptr.
CUresult allocate_stream_ordered(CUdeviceptr* dptr, std::size_t bytes, CUstream stream,
                                 std::atomic<std::uint64_t>& counter, CUmemoryPool pool = nullptr) {
    if (!valid_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
    return allocate_counted(MemoryKind::device_async, dptr, bytes, counter,
                            pool != nullptr ? pool : current_pool(current_device()));
}

CUresult free_stream_ordered(CUdeviceptr dptr, CUstream stream) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
    // Whether the real driver takes managed memory here is not documented; the fake
    // accepts it rather than fail a library that relies on it.
    const CUresult result =
        release(static_cast<std::uintptr_t>(dptr), std::nullopt,
                {MemoryKind::device, MemoryKind::device_async, MemoryKind::managed});
    if (result == CUDA_SUCCESS) ++counters().frees_async;
    return result;
}

CUresult allocate_host(void** pp, std::size_t bytes) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (pp == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::uintptr_t base = 0;
    const CUresult result = allocate(MemoryKind::host, bytes, &base);
    if (result != CUDA_SUCCESS) return result;
    *pp = reinterpret_cast<void*>(base);
    ++counters().mem_alloc_host;
    return CUDA_SUCCESS;
}

// Managed ranges only: the real driver refuses prefetch and advice on device memory.
std::optional<Allocation> managed_range(CUdeviceptr ptr, std::size_t bytes) {
    const auto allocation = find_allocation(static_cast<std::uintptr_t>(ptr));
    if (allocation && allocation->kind == MemoryKind::managed && bytes > 0 &&
        static_cast<std::uintptr_t>(ptr) + bytes <= allocation->base + allocation->size)
        return allocation;
    return std::nullopt;
}

bool is_managed_range(CUdeviceptr ptr, std::size_t bytes) { return managed_range(ptr, bytes).has_value(); }

bool valid_location(const CUmemLocation& location) {
    switch (location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return valid_device(location.id);
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: return true;
    default: return false;
    }
}

bool is_host(const CUmemLocation& location) {
    return location.type != CU_MEM_LOCATION_TYPE_DEVICE;
}

// A move belongs to one device: the one it fills, or for a move to the host the
// one whose memory it empties. Issued on another device's stream, or behind a
// wait for another device's event, it runs in step with the wrong device's work.
bool across_devices(int device, CUstream stream) {
    const Stream* s = find_stream(stream);
    const int waited = s != nullptr ? s->waited_device.load() : -1;
    return device != context_device(stream_context(stream)) || (waited >= 0 && waited != device);
}

CUresult prefetch_batch(CUdeviceptr* ptrs, std::size_t* sizes, std::size_t count,
                        CUmemLocation* locations, std::size_t* location_indices,
                        std::size_t location_count, CUstream stream) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (ptrs == nullptr || sizes == nullptr || count == 0 || locations == nullptr ||
        location_indices == nullptr || location_count == 0 || location_count > count)
        return CUDA_ERROR_INVALID_VALUE;
    if (stream_context(stream) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (location_indices[0] != 0) return CUDA_ERROR_INVALID_VALUE;
    for (std::size_t i = 0; i < location_count; ++i) {
        if (!valid_location(locations[i]) || location_indices[i] >= count ||
            (i > 0 && location_indices[i] <= location_indices[i - 1]))
            return CUDA_ERROR_INVALID_VALUE;
    }
    std::vector<int> owners(count);
    for (std::size_t i = 0; i < count; ++i) {
        const auto range = managed_range(ptrs[i], sizes[i]);
        if (!range) {
            ++counters().prefetch_refused;
            return CUDA_ERROR_INVALID_VALUE;
        }
        owners[i] = range->device;
    }
    std::size_t location = 0;
    for (std::size_t i = 0; i < count; ++i) {
        while (location + 1 < location_count && location_indices[location + 1] <= i) ++location;
        const bool to_host = is_host(locations[location]);
        const int device = to_host ? owners[i] : locations[location].id;
        counters().prefetch_bytes += sizes[i];
        if (to_host) {
            counters().prefetch_to_host_bytes += sizes[i];
            device_counters(device).prefetch_to_host_bytes += sizes[i];
        } else {
            device_counters(device).prefetch_bytes += sizes[i];
        }
        if (across_devices(device, stream)) ++counters().moves_across_devices;
        with_managed_record(static_cast<std::uintptr_t>(ptrs[i]), [&](fakecuda_managed_record& record) {
            record.prefetch_bytes += sizes[i];
            if (to_host) record.prefetch_to_host_bytes += sizes[i];
        });
    }
    ++counters().prefetch_calls;
    return CUDA_SUCCESS;
}

std::size_t attribute_size(CUpointer_attribute attribute) {
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: return sizeof(CUcontext);
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: return sizeof(unsigned int);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: return sizeof(CUdeviceptr);
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: return sizeof(void*);
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: return sizeof(CUdeviceptr);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: return sizeof(std::size_t);
    case CU_POINTER_ATTRIBUTE_MAPPED: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: return sizeof(CUmemoryPool);
    default: return 0;
    }
}

template <typename T>
void store(void* data, T value) {
    std::memcpy(data, &value, sizeof value);
}

// Fills one attribute of an address the fake knows (allocation) or does not (nullopt).
CUresult fill_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr,
                        const std::optional<Allocation>& allocation) {
    const std::size_t size = attribute_size(attribute);
    if (size == 0) return CUDA_ERROR_INVALID_VALUE;
    std::memset(data, 0, size);
    if (!allocation) return CUDA_SUCCESS;
    const bool managed = allocation->kind == MemoryKind::managed;
    const bool host = allocation->kind == MemoryKind::host;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: store(data, primary_context(allocation->device)); break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        store(data, static_cast<unsigned int>(host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE));
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: store(data, ptr); break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        store(data, (managed || host) ? reinterpret_cast<void*>(ptr) : nullptr);
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        store(data, static_cast<unsigned long long>(allocation->buffer_id));
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: store(data, managed ? 1 : 0); break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: store(data, allocation->device); break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        store(data, allocation->kind == MemoryKind::device ? 1 : 0);
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        store(data, static_cast<CUdeviceptr>(allocation->base));
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: store(data, allocation->size); break;
    case CU_POINTER_ATTRIBUTE_MAPPED: store(data, 1); break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        store(data, allocation->kind == MemoryKind::device_async ? default_pool(allocation->device) : nullptr);
        break;
    default: break;
    }
    return CUDA_SUCCESS;
}

}  // namespace

FAKECUDA_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemAlloc_v2");
    return allocate_counted(MemoryKind::device, dptr, bytesize, counters().mem_alloc);
}

FAKECUDA_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width,
                                            size_t height, unsigned int element_size) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemAllocPitch_v2");
    if (pitch == nullptr || width == 0 || height == 0) return CUDA_ERROR_INVALID_VALUE;
    if (element_size != 4 && element_size != 8 && element_size != 16)
        return CUDA_ERROR_INVALID_VALUE;
    constexpr std::size_t kPitchAlignment = 512;
    const std::size_t row = (width + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
    const CUresult result =
        allocate_counted(MemoryKind::device, dptr, row * height, counters().mem_alloc_pitch);
    if (result == CUDA_SUCCESS) *pitch = row;
    return result;
}

FAKECUDA_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemAllocAsync");
    return allocate_stream_ordered(dptr, bytesize, stream, counters().mem_alloc_async);
}

FAKECUDA_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                              CUstream stream) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemAllocAsync_ptsz");
    return allocate_stream_ordered(dptr, bytesize, stream, counters().mem_alloc_async);
}

FAKECUDA_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize,
                                                 CUmemoryPool pool, CUstream stream) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemAllocFromPoolAsync");
    if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return allocate_stream_ordered(dptr, bytesize, stream, counters().mem_alloc_from_pool, pool);
}

FAKECUDA_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                                      CUmemoryPool pool, CUstream stream) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemAllocFromPoolAsync_ptsz");
    if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return allocate_stream_ordered(dptr, bytesize, stream, counters().mem_alloc_from_pool, pool);
}

FAKECUDA_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize,
                                           unsigned int flags) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemAllocManaged");
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    // Capture in the global mode forbids managed allocation, as on a real device.
    if (any_stream_capturing()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return allocate_counted(MemoryKind::managed, dptr, bytesize, counters().mem_alloc_managed);
}

FAKECUDA_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemFree_v2");
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult result =
        release(static_cast<std::uintptr_t>(dptr), std::nullopt,
                {MemoryKind::device, MemoryKind::device_async, MemoryKind::managed});
    if (result == CUDA_SUCCESS) ++counters().frees;
    return result;
}

FAKECUDA_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemFreeAsync");
    return free_stream_ordered(dptr, stream);
}

FAKECUDA_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemFreeAsync_ptsz");
    return free_stream_ordered(dptr, stream);
}

FAKECUDA_EXPORT CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
    ++counters().mem_get_info_calls;
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const int device = current_device();
    const std::uint64_t total_bytes = device_total_bytes(device);
    const std::size_t used = live_device_bytes(device) + live_managed_bytes(device);
    *total = total_bytes;
    *free = used >= total_bytes ? 0 : total_bytes - used;
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                     const CUmemAllocationProp* prop, unsigned long long flags) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (handle == nullptr || prop == nullptr || size == 0 || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    static std::atomic<CUmemGenericAllocationHandle> next_handle{1};
    *handle = next_handle++;
    ++counters().mem_create;
    return CUDA_SUCCESS;
}

// Handles are not kept: any the fake could have made is released.
FAKECUDA_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    return handle == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemAllocHost_v2");
    return allocate_host(pp, bytesize);
}

FAKECUDA_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int flags) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemHostAlloc");
    return allocate_host(pp, bytesize);
}

FAKECUDA_EXPORT CUresult cuMemFreeHost(void* p) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemFreeHost");
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult result =
        release(reinterpret_cast<std::uintptr_t>(p), MemoryKind::host, {});
    if (result == CUDA_SUCCESS) ++counters().frees_host;
    return result;
}

FAKECUDA_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr dptr) {
    if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const auto allocation = find_allocation(static_cast<std::uintptr_t>(dptr));
    // Only plain device allocations can be shared; managed memory cannot.
    if (!allocation || allocation->kind != MemoryKind::device) return CUDA_ERROR_INVALID_VALUE;
    std::memset(handle, 0, sizeof *handle);
    std::memcpy(handle->reserved, &allocation->base, sizeof allocation->base);
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                               CUdeviceptr ptr) {
    if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const auto allocation = find_allocation(static_cast<std::uintptr_t>(ptr));
    // The single-attribute query fails on memory the driver does not know.
    if (!allocation) return CUDA_ERROR_INVALID_VALUE;
    return fill_attribute(data, attribute, ptr, allocation);
}

FAKECUDA_EXPORT CUresult cuPointerGetAttributes(unsigned int count,
                                                CUpointer_attribute* attributes, void** data,
                                                CUdeviceptr ptr) {
    if (count == 0 || attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const auto allocation = find_allocation(static_cast<std::uintptr_t>(ptr));
    for (unsigned int i = 0; i < count; ++i) {
        if (data[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
        const CUresult result = fill_attribute(data[i], attributes[i], ptr, allocation);
        if (result != CUDA_SUCCESS) return result;
    }
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr ptr, size_t bytes,
                                               CUmemLocation location, unsigned int flags,
                                               CUstream stream) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemPrefetchAsync_v2");
    std::size_t size = bytes;
    std::size_t first_index = 0;
    return prefetch_batch(&ptr, &size, 1, &location, &first_index, 1, stream);
}

FAKECUDA_EXPORT CUresult cuMemPrefetchBatchAsync(CUdeviceptr* ptrs, size_t* sizes, size_t count,
                                                 CUmemLocation* locations,
                                                 size_t* location_indices, size_t location_count,
                                                 unsigned long long flags, CUstream stream) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemPrefetchBatchAsync");
    return prefetch_batch(ptrs, sizes, count, locations, location_indices, location_count,
                          stream);
}

FAKECUDA_EXPORT CUresult cuMemDiscardAndPrefetchBatchAsync(
    CUdeviceptr* ptrs, size_t* sizes, size_t count, CUmemLocation* locations,
    size_t* location_indices, size_t location_count, unsigned long long flags, CUstream stream) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemDiscardAndPrefetchBatchAsync");
    return prefetch_batch(ptrs, sizes, count, locations, location_indices, location_count,
                          stream);
}

FAKECUDA_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr ptr, size_t bytes, CUmem_advise advice,
                                        CUmemLocation location) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuMemAdvise_v2");
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!is_managed_range(ptr, bytes) || !valid_location(location))
        return CUDA_ERROR_INVALID_VALUE;
    ++counters().advise_calls;
    with_managed_record(static_cast<std::uintptr_t>(ptr), [&](fakecuda_managed_record& record) {
        ++record.advice_calls;
        if (advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION) {
            record.preferred_location_type = static_cast<int>(location.type);
            record.preferred_location_id = location.id;
        } else if (advice == CU_MEM_ADVISE_SET_ACCESSED_BY && location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
            record.accessed_by_device = location.id;
        }
    });
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT int fakecuda_managed_record_of(CUdeviceptr ptr, fakecuda_managed_record* out) {
    if (out == nullptr) return -1;
    const auto allocation = find_allocation(static_cast<std::uintptr_t>(ptr));
    if (!allocation || allocation->kind != MemoryKind::managed) return -1;
    *out = allocation->managed;
    return 0;
}

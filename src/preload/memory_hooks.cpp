// Allocation, free and memory-query hooks: each forwards to the interceptor,
// or straight to the driver while the library is not set up.
#include "driver/intercept/interceptor.h"
#include "preload/framework_notice.h"
#include "preload/hooks.h"

using uvmp::driver::driver_table;
using uvmp::driver::interceptor;
using uvmp::driver::StreamFlavor;

namespace {

// Pitched allocations get the alignment the driver uses for texture pitch.
constexpr size_t kPitchAlignment = 512;

template <typename Passthrough>
CUresult allocate(CUdeviceptr* dptr, size_t bytes, CUstream stream, bool stream_ordered,
                  StreamFlavor flavor, CUmemoryPool pool, Passthrough&& passthrough) {
    if (stream_ordered) uvmp::preload::note_stream_ordered_allocation();
    auto* icpt = interceptor();
    if (!icpt) return passthrough();
    return icpt->allocate(dptr, bytes, stream, stream_ordered, flavor, pool, passthrough);
}

CUresult free_async(CUdeviceptr ptr, CUstream stream, StreamFlavor flavor) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    auto* icpt = interceptor();
    if (!icpt) {
        auto real = flavor == StreamFlavor::PerThread ? table->cuMemFreeAsync_ptsz : table->cuMemFreeAsync;
        return real(ptr, stream);
    }
    return icpt->free_async(ptr, stream, flavor, *table);
}

} // namespace

extern "C" CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    return allocate(dptr, bytes, nullptr, false, StreamFlavor::Legacy, nullptr,
                    [&] { return table->cuMemAlloc_v2(dptr, bytes); });
}

extern "C" CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                       unsigned int element_size) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    auto passthrough = [&] { return table->cuMemAllocPitch_v2(dptr, pitch, width, height, element_size); };
    const bool valid = pitch && width && height &&
                       (element_size == 4 || element_size == 8 || element_size == 16);
    if (!valid) return passthrough();
    const size_t row = (width + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
    const CUresult r = allocate(dptr, row * height, nullptr, false, StreamFlavor::Legacy, nullptr, passthrough);
    // A passed-through call chose its own pitch; only a converted one gets ours.
    if (r == CUDA_SUCCESS && interceptor() && interceptor()->registry().find_base(*dptr)) *pitch = row;
    return r;
}

extern "C" CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    return allocate(dptr, bytes, stream, true, StreamFlavor::Legacy, nullptr,
                    [&] { return table->cuMemAllocAsync(dptr, bytes, stream); });
}

extern "C" CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    return allocate(dptr, bytes, stream, true, StreamFlavor::PerThread, nullptr,
                    [&] { return table->cuMemAllocAsync_ptsz(dptr, bytes, stream); });
}

extern "C" CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                                            CUstream stream) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    return allocate(dptr, bytes, stream, true, StreamFlavor::Legacy, pool,
                    [&] { return table->cuMemAllocFromPoolAsync(dptr, bytes, pool, stream); });
}

extern "C" CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                                                 CUstream stream) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    return allocate(dptr, bytes, stream, true, StreamFlavor::PerThread, pool,
                    [&] { return table->cuMemAllocFromPoolAsync_ptsz(dptr, bytes, pool, stream); });
}

// The library's own slabs are made through the driver table, never through here.
extern "C" CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int flags) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult r = table->cuMemAllocManaged(dptr, bytes, flags);
    if (r == CUDA_SUCCESS && dptr && bytes && interceptor()) interceptor()->note_app_managed(*dptr, bytes, *table);
    return r;
}

extern "C" CUresult cuMemFree_v2(CUdeviceptr ptr) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    auto* icpt = interceptor();
    return icpt ? icpt->free(ptr, *table) : table->cuMemFree_v2(ptr);
}

extern "C" CUresult cuMemFreeAsync(CUdeviceptr ptr, CUstream stream) {
    return free_async(ptr, stream, StreamFlavor::Legacy);
}

extern "C" CUresult cuMemFreeAsync_ptsz(CUdeviceptr ptr, CUstream stream) {
    return free_async(ptr, stream, StreamFlavor::PerThread);
}

extern "C" CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    auto* icpt = interceptor();
    return icpt ? icpt->mem_get_info(free_bytes, total_bytes, *table)
                : table->cuMemGetInfo_v2(free_bytes, total_bytes);
}

// The first version, with 32-bit sizes.
extern "C" CUresult cuMemGetInfo(unsigned int* free_bytes, unsigned int* total_bytes) {
    const auto* table = driver_table();
    if (!table || !table->cuMemGetInfo) return CUDA_ERROR_NOT_INITIALIZED;
    auto* icpt = interceptor();
    return icpt ? icpt->mem_get_info_v1(free_bytes, total_bytes, *table)
                : table->cuMemGetInfo(free_bytes, total_bytes);
}

extern "C" CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    auto* icpt = interceptor();
    return icpt ? icpt->device_total_mem(bytes, device, *table) : table->cuDeviceTotalMem_v2(bytes, device);
}

extern "C" CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice device) {
    const auto* table = driver_table();
    if (!table || !table->cuDeviceTotalMem) return CUDA_ERROR_NOT_INITIALIZED;
    auto* icpt = interceptor();
    return icpt ? icpt->device_total_mem_v1(bytes, device, *table) : table->cuDeviceTotalMem(bytes, device);
}

extern "C" CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                const CUmemAllocationProp* prop, unsigned long long flags) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult r = table->cuMemCreate(handle, size, prop, flags);
    if (r == CUDA_SUCCESS && handle && prop && interceptor()) interceptor()->note_vmm_created(*handle, size, *prop);
    return r;
}

extern "C" CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult r = table->cuMemRelease(handle);
    if (r == CUDA_SUCCESS && interceptor()) interceptor()->note_vmm_released(handle);
    return r;
}

extern "C" CUresult cuMemAllocHost_v2(void** pp, size_t bytes) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult r = table->cuMemAllocHost_v2(pp, bytes);
    if (r == CUDA_SUCCESS && interceptor()) interceptor()->note_passthrough_host(bytes);
    return r;
}

extern "C" CUresult cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult r = table->cuMemHostAlloc(pp, bytes, flags);
    if (r == CUDA_SUCCESS && interceptor()) interceptor()->note_passthrough_host(bytes);
    return r;
}

extern "C" CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr ptr) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult r = table->cuIpcGetMemHandle(handle, ptr);
    if (interceptor()) interceptor()->note_ipc_failure(ptr, r);
    return r;
}

extern "C" CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult r = table->cuPointerGetAttribute(data, attribute, ptr);
    if (r == CUDA_SUCCESS && interceptor()) interceptor()->adjust_pointer_attribute(attribute, data, ptr);
    return r;
}

extern "C" CUresult cuPointerGetAttributes(unsigned int count, CUpointer_attribute* attributes,
                                           void** data, CUdeviceptr ptr) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult r = table->cuPointerGetAttributes(count, attributes, data, ptr);
    if (r == CUDA_SUCCESS && interceptor() && attributes && data)
        for (unsigned int i = 0; i < count; ++i)
            interceptor()->adjust_pointer_attribute(attributes[i], data[i], ptr);
    return r;
}

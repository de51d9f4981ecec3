// CUDA memory-pool hooks: attribute queries and trims of pools whose
// allocations the library converted answer from its own figures; the device's
// default and current pool handles are noted on the way through.
#include "driver/intercept/interceptor.h"
#include "preload/hooks.h"

using uvmp::driver::driver_table;
using uvmp::driver::interceptor;

namespace {

// The interceptor's answer, or the driver's while the library is not set up.
template <typename Ours, typename Theirs>
CUresult forward(Ours&& ours, Theirs&& theirs) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    auto* icpt = interceptor();
    return icpt ? ours(*icpt, *table) : theirs(*table);
}

} // namespace

extern "C" CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
    return forward([&](auto& icpt, auto& table) { return icpt.mem_pool_get_attribute(pool, attr, value, table); },
                   [&](auto& table) { return table.cuMemPoolGetAttribute(pool, attr, value); });
}

extern "C" CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
    return forward([&](auto& icpt, auto& table) { return icpt.mem_pool_set_attribute(pool, attr, value, table); },
                   [&](auto& table) { return table.cuMemPoolSetAttribute(pool, attr, value); });
}

extern "C" CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
    return forward([&](auto& icpt, auto& table) { return icpt.mem_pool_trim_to(pool, minBytesToKeep, table); },
                   [&](auto& table) { return table.cuMemPoolTrimTo(pool, minBytesToKeep); });
}

extern "C" CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult r = table->cuDeviceGetMemPool(pool, dev);
    if (r == CUDA_SUCCESS && pool && interceptor()) interceptor()->note_current_pool(dev, *pool);
    return r;
}

extern "C" CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult r = table->cuDeviceGetDefaultMemPool(pool_out, dev);
    if (r == CUDA_SUCCESS && pool_out && interceptor()) interceptor()->note_default_pool(dev, *pool_out);
    return r;
}

extern "C" CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult r = table->cuDeviceSetMemPool(dev, pool);
    if (r == CUDA_SUCCESS && interceptor()) interceptor()->note_current_pool(dev, pool);
    return r;
}

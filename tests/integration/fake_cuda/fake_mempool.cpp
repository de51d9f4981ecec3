// Memory pools: the device's default pool, pools made with cuMemPoolCreate, their
// attributes and trimming. The figures are those of the allocations the fake made
// from each pool, as the driver's would be.
#include "fake_state.h"

#include <algorithm>
#include <cstring>

using namespace fakecuda;

namespace {

constexpr std::uint64_t kPoolGranularity = 2ull << 20;

template <typename T>
void store_value(void* value, T v) {
    std::memcpy(value, &v, sizeof v);
}

template <typename T>
T load_value(const void* value) {
    T v{};
    std::memcpy(&v, value, sizeof v);
    return v;
}

int* reuse_flag(MemPool& p, CUmemPool_attribute attribute) {
    switch (attribute) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: return &p.reuse_follow_event_dependencies;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: return &p.reuse_allow_opportunistic;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: return &p.reuse_allow_internal_dependencies;
    default: return nullptr;
    }
}

}  // namespace

FAKECUDA_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (pool == nullptr || props == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pool = make_pool();
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    return destroy_pool(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKECUDA_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute, void* value) {
    ++counters().mem_pool_attribute_queries;
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUresult result = CUDA_SUCCESS;
    const bool known = with_pool(pool, [&](MemPool& p) {
        if (int* flag = reuse_flag(p, attribute)) {
            store_value<int>(value, *flag);
            return;
        }
        switch (attribute) {
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: store_value<cuuint64_t>(value, p.release_threshold); break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: store_value<cuuint64_t>(value, p.reserved); break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: store_value<cuuint64_t>(value, p.reserved_high); break;
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: store_value<cuuint64_t>(value, p.used); break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH: store_value<cuuint64_t>(value, p.used_high); break;
        default: result = CUDA_ERROR_INVALID_VALUE; break;
        }
    });
    return known ? result : CUDA_ERROR_INVALID_VALUE;
}

// The high marks may only be reset (to the current figure) by writing zero; the
// current figures cannot be set at all.
FAKECUDA_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute, void* value) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUresult result = CUDA_SUCCESS;
    const bool known = with_pool(pool, [&](MemPool& p) {
        if (int* flag = reuse_flag(p, attribute)) {
            *flag = load_value<int>(value) != 0;
            return;
        }
        const auto v = load_value<cuuint64_t>(value);
        switch (attribute) {
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p.release_threshold = v; break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
            if (v == 0) p.reserved_high = p.reserved;
            else result = CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
            if (v == 0) p.used_high = p.used;
            else result = CUDA_ERROR_INVALID_VALUE;
            break;
        default: result = CUDA_ERROR_INVALID_VALUE; break;
        }
    });
    return known ? result : CUDA_ERROR_INVALID_VALUE;
}

FAKECUDA_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t min_bytes_to_keep) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    const bool known = with_pool(pool, [&](MemPool& p) {
        const std::uint64_t in_use = (p.used + kPoolGranularity - 1) / kPoolGranularity * kPoolGranularity;
        p.reserved = std::max<std::uint64_t>(in_use, std::min<std::uint64_t>(p.reserved, min_bytes_to_keep));
    });
    if (!known) return CUDA_ERROR_INVALID_VALUE;
    ++counters().mem_pool_trims;
    return CUDA_SUCCESS;
}

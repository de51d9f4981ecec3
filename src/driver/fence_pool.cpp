#include "driver/fence_pool.h"

namespace uvmp::driver {

CUevent FencePool::acquire(const DriverTable& table) {
    CUcontext context = nullptr;
    if (table.cuCtxGetCurrent(&context) != CUDA_SUCCESS || !context) return nullptr;
    {
        std::lock_guard lock(mutex_);
        if (auto it = free_.find(context); it != free_.end() && !it->second.empty()) {
            CUevent e = it->second.back();
            it->second.pop_back();
            return e;
        }
    }
    CUevent e = nullptr;
    if (table.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return nullptr;
    std::lock_guard lock(mutex_);
    made_in_[e] = context;
    return e;
}

void FencePool::release(CUevent event) {
    std::lock_guard lock(mutex_);
    // Every event here was made by acquire, which noted its context.
    if (auto it = made_in_.find(event); it != made_in_.end()) free_[it->second].push_back(event);
}

} // namespace uvmp::driver

#include "driver/pool/fence_pool.h"

#include "core/util/log.h"

namespace uvmp::driver {

MpmcQueue<CUevent>* FencePool::idle_of(CUcontext context) {
    for (Idle& idle : idle_) {
        const CUcontext c = idle.context.load(std::memory_order_acquire);
        if (!c) return nullptr; // places are filled in order: the rest are free
        if (c == context) return idle.events.load(std::memory_order_acquire);
    }
    return nullptr;
}

MpmcQueue<CUevent>* FencePool::idle_of_locked(CUcontext context) {
    for (size_t i = 0; i < kContexts; ++i) {
        const CUcontext c = idle_[i].context.load(std::memory_order_acquire);
        if (c == context) return idle_[i].events.load(std::memory_order_acquire);
        if (c) continue;
        owned_[i] = std::make_unique<MpmcQueue<CUevent>>(kIdle);
        idle_[i].events.store(owned_[i].get(), std::memory_order_release);
        idle_[i].context.store(context, std::memory_order_release);
        return owned_[i].get();
    }
    return nullptr;
}

CUevent FencePool::acquire(const DriverTable& table, CUcontext context) {
    if (!context) return nullptr;
    CUevent e = nullptr;
    if (MpmcQueue<CUevent>* idle = idle_of(context); idle && idle->try_pop(e)) return e;
    // The event is made in the calling thread's current context, which is `context`.
    if (table.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return nullptr;
    std::lock_guard lock(mutex_);
    made_in_[e] = context;
    idle_of_locked(context);
    return e;
}

void FencePool::release(CUevent event) {
    MpmcQueue<CUevent>* idle = nullptr;
    {
        std::lock_guard lock(mutex_);
        // Every event here was made by acquire, which noted its context.
        if (auto it = made_in_.find(event); it != made_in_.end()) idle = idle_of(it->second);
    }
    if (idle && idle->try_push(event)) return;
    {
        std::lock_guard lock(mutex_);
        made_in_.erase(event);
    }
    destroy(event);
}

void FencePool::destroy(CUevent event) {
    const DriverTable* table = driver_table_if_ready();
    if (table && table->cuEventDestroy_v2(event) != CUDA_SUCCESS)
        UVMP_WARN_ONCE("destroying an idle fence event failed; its resources stay with the driver");
}

} // namespace uvmp::driver

#include "driver/intercept/passthrough_ledger.h"

namespace uvmp::driver {

void PassthroughLedger::note_allocation(CUdeviceptr ptr, uint64_t bytes, int device) {
    std::lock_guard lock(mutex_);
    allocations_[ptr] = Held{bytes, device};
    live_[static_cast<size_t>(device)] += bytes;
}

void PassthroughLedger::forget_allocation(CUdeviceptr ptr) { forget(allocations_, ptr); }

void PassthroughLedger::note_vmm(CUmemGenericAllocationHandle handle, uint64_t bytes, int device) {
    std::lock_guard lock(mutex_);
    vmm_handles_[handle] = Held{bytes, device};
    live_[static_cast<size_t>(device)] += bytes;
}

void PassthroughLedger::forget_vmm(CUmemGenericAllocationHandle handle) { forget(vmm_handles_, handle); }

template <typename Key>
void PassthroughLedger::forget(std::unordered_map<Key, Held>& held, Key key) {
    std::lock_guard lock(mutex_);
    if (auto it = held.find(key); it != held.end()) {
        live_[static_cast<size_t>(it->second.device)] -= it->second.bytes;
        stats_.passthrough_freed(it->second.device, it->second.bytes);
        held.erase(it);
    }
}

void PassthroughLedger::forget_after_fork() {
    allocations_.clear();
    vmm_handles_.clear();
    for (auto& bytes : live_) bytes.store(0, std::memory_order_relaxed);
}

} // namespace uvmp::driver

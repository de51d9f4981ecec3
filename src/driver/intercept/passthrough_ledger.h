// Device memory the job holds outside the managed pool: allocations the driver
// made itself (passed through) and physical memory made with cuMemCreate. Each
// counts against the memory reported free on its device until it is freed.
#pragma once

#include "core/accounting/stats.h"
#include "driver/table/driver_api.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace uvmp::driver {

class PassthroughLedger {
public:
    static constexpr size_t kMaxDevices = 64;
    // Frees are counted in `stats` (Stats::passthrough_freed); what was held is
    // counted by the caller, which knows why it passed through.
    explicit PassthroughLedger(Stats& stats) : stats_(stats) {}

    // Whether memory on `device` can be booked here.
    static bool tracks(int device) { return device >= 0 && static_cast<size_t>(device) < kMaxDevices; }
    // `device` is one tracks() accepts.
    void note_allocation(CUdeviceptr ptr, uint64_t bytes, int device);
    void forget_allocation(CUdeviceptr ptr);
    void note_vmm(CUmemGenericAllocationHandle handle, uint64_t bytes, int device);
    void forget_vmm(CUmemGenericAllocationHandle handle);
    uint64_t live_on(int device) const { return live_[static_cast<size_t>(device)].load(); }

    void lock_for_fork() { mutex_.lock(); }
    void unlock_after_fork() { mutex_.unlock(); }
    // In a forked child: what the parent held is the parent's.
    void forget_after_fork();

private:
    struct Held {
        uint64_t bytes;
        int device;
    };
    template <typename Key>
    void forget(std::unordered_map<Key, Held>& held, Key key);

    Stats& stats_;
    std::mutex mutex_;
    std::unordered_map<CUdeviceptr, Held> allocations_;
    std::unordered_map<CUmemGenericAllocationHandle, Held> vmm_handles_;
    std::array<std::atomic<uint64_t>, kMaxDevices> live_{};
};

} // namespace uvmp::driver

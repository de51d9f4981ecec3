// The host memory guard: every placement of the library's on the host asks it
// first. Host-homed slabs and evictions to the host take host RAM, and a host
// that runs out of it ends the job (the OOM killer), where a GPU short of room
// only slows it. Short of room (core/hostmem/host_room.h), a new host slab is
// refused, and the allocation takes a GPU slab; an eviction is not made, and
// its pages stay on the GPU. Both are hints the results never depend on: the
// allocation's bytes are the same on either home, and a page left on the GPU
// is read there as well as anywhere. What it costs is the budget, which the
// GPU may then exceed, an emulated capacity, rather than the job. One warning
// line says so the first time. Any thread.
#pragma once

#include "core/accounting/stats.h"
#include "core/config/options.h"
#include "core/hostmem/host_room.h"

#include <atomic>
#include <cstdint>
#include <mutex>

namespace uvmp::driver {

class HostMemoryGuard {
public:
    // The figures are read under config.host_memory_root (tests' fake tree),
    // else the machine's own; `reader` replaces them (tests).
    HostMemoryGuard(const Config& config, Stats& stats, hostmem::HostRoom::Reader reader = {});

    // A new host-homed slab of `bytes`: whether it may be made.
    bool admit_host_slab(uint64_t bytes);
    // An eviction of `bytes` to the host, about to be issued: whether it may be.
    bool admit_eviction(uint64_t bytes);

    // In a forked child: the parent's thread may have held the lock; the child
    // reads its own figures afresh.
    void forget_after_fork();

private:
    bool admit(uint64_t bytes, std::atomic<uint64_t>& refusals, std::atomic<uint64_t>& refused_bytes);

    Stats& stats_;
    hostmem::HostRoom::Reader reader_;
    SizeOrPercent reserve_;
    std::mutex mutex_;
    hostmem::HostRoom room_;
    std::atomic<bool> warned_{false};
};

} // namespace uvmp::driver

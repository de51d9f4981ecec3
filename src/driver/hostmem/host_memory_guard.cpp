#include "driver/hostmem/host_memory_guard.h"

#include "core/util/log.h"
#include "core/util/size_parse.h"
#include "driver/intercept/monotonic_clock.h"

#include <memory>
#include <new>

namespace uvmp::driver {
namespace {

// The option unset (empty) means its default.
SizeOrPercent reserve_of(const Config& config) {
    if (config.host_reserve) return *config.host_reserve;
    return *parse_size_or_percent(find_option("host_reserve")->default_text);
}

hostmem::HostRoom::Reader reader_of(const Config& config, hostmem::HostRoom::Reader given) {
    if (given) return given;
    return [sources = hostmem::Sources::under(config.host_memory_root)] { return hostmem::read_host_memory(sources); };
}

} // namespace

HostMemoryGuard::HostMemoryGuard(const Config& config, Stats& stats, hostmem::HostRoom::Reader reader)
    : stats_(stats), reader_(reader_of(config, std::move(reader))), reserve_(reserve_of(config)),
      room_(reader_, reserve_) {}

bool HostMemoryGuard::admit_host_slab(uint64_t bytes) {
    return admit(bytes, stats_.host_memory.host_slabs_refused, stats_.host_memory.host_slab_bytes_refused);
}

bool HostMemoryGuard::admit_eviction(uint64_t bytes) {
    return admit(bytes, stats_.host_memory.evictions_not_made, stats_.host_memory.eviction_bytes_not_made);
}

bool HostMemoryGuard::admit(uint64_t bytes, std::atomic<uint64_t>& refusals, std::atomic<uint64_t>& refused_bytes) {
    HostMemoryStats& figures = stats_.host_memory;
    std::optional<uint64_t> available;
    uint64_t reserve = 0;
    bool admitted = false;
    {
        std::lock_guard lock(mutex_);
        admitted = room_.take(bytes, monotonic_ns());
        available = room_.available();
        reserve = room_.reserve();
    }
    figures.available_bytes.store(available.value_or(HostMemoryStats::kUnknown), std::memory_order_relaxed);
    figures.reserve_bytes.store(reserve, std::memory_order_relaxed);
    if (admitted) return true;
    stats_.add(refusals);
    stats_.add(refused_bytes, bytes);
    figures.short_seen.store(true, std::memory_order_relaxed);
    if (!warned_.exchange(true, std::memory_order_relaxed))
        log::warn("host memory short ({} available, {} reserve): host homes off and evictions capped while it "
                  "lasts; allocations take GPU slabs and pages stay on the GPU, past the budget if need be "
                  "(UVMP_HOST_RESERVE)",
                  format_size(available.value_or(0)), format_size(reserve));
    return false;
}

void HostMemoryGuard::forget_after_fork() {
    new (&mutex_) std::mutex;
    std::destroy_at(&room_);
    new (&room_) hostmem::HostRoom(reader_, reserve_);
}

} // namespace uvmp::driver

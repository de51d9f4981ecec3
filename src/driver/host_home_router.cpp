#include "driver/host_home_router.h"

#include "core/placement/recorded_homes.h"
#include "core/trace/reader.h"
#include "core/util/log.h"
#include "core/util/size_parse.h"

#include <algorithm>
#include <exception>
#include <string>

namespace uvmp::driver {

placement::Home HostHomeRouter::home_of(int device, uint64_t bytes, uint64_t budget_bytes) {
    if (!config_.host_homes) return placement::Home::Gpu;
    std::call_once(once_, [&] { set_up(device, budget_bytes); });
    if (!routing_.load(std::memory_order_acquire) || device != device_) return placement::Home::Gpu;
    std::lock_guard lock(mutex_);
    return sequence_.next(bytes);
}

void HostHomeRouter::set_up(int device, uint64_t budget_bytes) {
    auto none = [](const std::string& why) { log::warn("UVMP_HOST_HOMES=on: {}; no allocation is homed on the host", why); };
    if (config_.trace_in.empty()) return none("it needs UVMP_TRACE_IN, an earlier trace of the program recorded with UVMP_TRACE_TIMING=1");
    // Without a budget nothing must move, and a host home only costs remote trips.
    if (!config_.budget) return none("it needs a budget (UVMP_BUDGET)");
    std::string why_not;
    std::optional<placement::RecordedHomes> homes;
    try {
        homes = placement::recorded_homes(trace::read_trace_file(config_.trace_in), budget_bytes, config_.chunk_size,
                                          &why_not);
    } catch (const std::exception& e) {
        why_not = e.what();
    }
    if (!homes) return none("cannot learn them from " + config_.trace_in + ": " + why_not);
    if (homes->host_entries() == 0) {
        log::info("UVMP_HOST_HOMES=on: under a budget of {}, no allocation of {} gains from a host home",
                  format_size(budget_bytes), config_.trace_in);
        return;
    }
    if (!placement::homes_pay(*homes)) {
        log::info("UVMP_HOST_HOMES=on: under a budget of {}, host homes would shorten {}'s step by {:.1f}% in "
                  "simulation ({:.1f} ms against {:.1f} ms), less than the {:.0f}% the simulator can be trusted "
                  "with; every allocation is homed on the GPU",
                  format_size(budget_bytes), config_.trace_in,
                  100.0 * (1.0 - homes->simulated_step_seconds / homes->all_gpu_step_seconds),
                  homes->simulated_step_seconds * 1e3, homes->all_gpu_step_seconds * 1e3,
                  100.0 * placement::kMinSimulatedGain);
        return;
    }
    const auto& chosen = homes->choice.homes;
    log::info("host homes from {}: {} of the {} allocations live in its learned step ({}) on the host; migration must "
              "move {} a step instead of {} ({} kernels judged by their timing); its step simulated at {:.1f} ms "
              "against {:.1f} ms with every home on the GPU",
              config_.trace_in, std::count(chosen.begin(), chosen.end(), placement::Home::Host), chosen.size(),
              format_size(homes->choice.host_bytes), format_size(homes->choice.swapped_bytes),
              format_size(homes->choice.all_gpu_swapped_bytes), homes->kernels_judged,
              homes->simulated_step_seconds * 1e3, homes->all_gpu_step_seconds * 1e3);
    {
        std::lock_guard lock(mutex_);
        sequence_ = placement::HomeSequence(std::move(homes->prologue), std::move(homes->step));
        device_ = device;
    }
    routing_.store(true, std::memory_order_release);
}

void HostHomeRouter::report() const {
    if (!routing_.load(std::memory_order_acquire)) return;
    std::lock_guard lock(mutex_);
    const placement::HomeSequenceCounts& c = sequence_.counts();
    log::info("host homes: {} allocations routed to the host; {} matched the recorded run ({} after a resync), {} did "
              "not (homed on the GPU)",
              c.host, c.matched, c.resyncs, c.unmatched);
}

} // namespace uvmp::driver

#include "driver/homes/host_home_router.h"

#include "core/trace/format/reader.h"
#include "core/util/log.h"
#include "core/util/size_parse.h"

#include <algorithm>
#include <exception>
#include <string>

namespace uvmp::driver {
namespace {

HostHomeChoice figures_of(const placement::RecordedHomes& homes, const std::string& source) {
    const auto& chosen = homes.choice.homes;
    HostHomeChoice c;
    c.source = source;
    c.step_allocations = chosen.size();
    c.candidates = homes.candidates;
    c.chosen = static_cast<uint64_t>(std::count(chosen.begin(), chosen.end(), placement::Home::Host));
    c.chosen_bytes = homes.choice.host_bytes;
    c.swapped_bytes = homes.choice.swapped_bytes;
    c.all_gpu_swapped_bytes = homes.choice.all_gpu_swapped_bytes;
    c.kernels_judged = homes.kernels_judged;
    c.kernels_streaming = homes.kernels_streaming;
    c.kernels_tried = homes.kernels_tried;
    c.waited_launches = homes.waited_launches;
    c.kinds_from_waits = homes.kinds_from_waits;
    c.streaming_gbps = homes.streaming_gbps;
    c.simulated_ms = homes.simulated_step_seconds * 1e3;
    c.all_gpu_ms = homes.all_gpu_step_seconds * 1e3;
    c.layout_ms = homes.planned_step_seconds * 1e3;
    c.placed_as_they_come_ms = homes.over_dead_step_seconds * 1e3;
    c.layout_arena_bytes = homes.arena_bytes;
    return c;
}

} // namespace

bool HostHomeRouter::enabled() const {
    // auto leaves the policies that are there for comparison as they are.
    return config_.host_homes == HostHomes::On ||
           (config_.host_homes == HostHomes::Auto && config_.policy == ResidencyPolicy::Learned);
}

bool HostHomeRouter::learns_in_run() const {
    return config_.host_homes == HostHomes::Auto && enabled() && config_.trace_in.empty() && config_.budget;
}

placement::Home HostHomeRouter::home_of(int device, uint64_t bytes, uint64_t budget_bytes, Routed* routed) {
    *routed = {};
    if (!enabled()) return placement::Home::Gpu;
    std::call_once(once_, [&] { set_up(device, budget_bytes); });
    if (!routing_.load(std::memory_order_acquire) || device != device_) return placement::Home::Gpu;
    std::lock_guard lock(mutex_);
    const placement::Home home = sequence_.next(bytes, &routed->step_entry);
    if (home == placement::Home::Gpu && routed->step_entry && *routed->step_entry < step_offsets_.size() &&
        layout_on_.load(std::memory_order_acquire))
        routed->arena_offset = step_offsets_[*routed->step_entry];
    return home;
}

void HostHomeRouter::set_homes(std::span<const size_t> step_entries, placement::Home home) {
    std::lock_guard lock(mutex_);
    for (const size_t entry : step_entries) sequence_.set_home(entry, home);
}

void HostHomeRouter::set_up(int device, uint64_t budget_bytes) {
    const std::string mode = fmt::format("UVMP_HOST_HOMES={}", to_string(config_.host_homes));
    auto none = [&](const std::string& why) { log::warn("{}: {}; no allocation is homed on the host", mode, why); };
    // Homes learned in the run come later, from the learner.
    if (config_.host_homes == HostHomes::Auto && config_.trace_in.empty()) return;
    if (config_.trace_in.empty()) return none("it needs UVMP_TRACE_IN, an earlier trace of the program recorded with UVMP_TRACE_TIMING=1");
    // Without a budget nothing must move, and a host home only costs remote trips.
    if (!config_.budget) {
        if (config_.host_homes == HostHomes::On) none("it needs a budget (UVMP_BUDGET)");
        return;
    }
    std::string why_not;
    std::optional<placement::RecordedHomes> homes;
    placement::TimingPriorConfig prior;
    prior.streaming_gbps = config_.streaming_gbps.line_gbps(rates(device));
    try {
        homes = placement::recorded_homes(trace::read_trace_file(config_.trace_in), budget_bytes, config_.chunk_size,
                                          &why_not, rates(device), placement::HomeScope::LiveInStep, prior,
                                          config_.step_layout);
    } catch (const std::exception& e) {
        why_not = e.what();
    }
    if (!homes) return none("cannot learn them from " + config_.trace_in + ": " + why_not);
    adopt(device, budget_bytes, *homes, config_.trace_in, [] { return std::nullopt; });
}

void HostHomeRouter::adopt_learned(int device, uint64_t budget_bytes, placement::RecordedHomes homes,
                                   const std::function<uint64_t()>& allocations_recorded) {
    const uint64_t before_step = homes.prologue.size();
    adopt(device, budget_bytes, homes, "the run's own steps", [&]() -> std::optional<uint64_t> {
        const uint64_t recorded = allocations_recorded();
        return recorded > before_step ? recorded - before_step : 0;
    });
}

void HostHomeRouter::adopt(int device, uint64_t budget_bytes, placement::RecordedHomes& homes,
                           const std::string& source,
                           const std::function<std::optional<uint64_t>()>& position) {
    const std::string budget = "a budget of " + format_size(budget_bytes);
    HostHomeChoice figures = figures_of(homes, source);
    figures_.chosen(figures);
    if (homes.over_dead_step_seconds > 0)
        log::info("step layout: {}'s step simulated at {:.1f} ms with a layout planned for it ({} out a step), "
                  "against {:.1f} ms with blocks placed as they come; {}",
                  source, homes.planned_step_seconds * 1e3, format_size(homes.planned_step_out_bytes),
                  homes.over_dead_step_seconds * 1e3,
                  homes.planned() ? fmt::format("blocks of the steps after it go where it puts them, in an arena "
                                                "of {}",
                                                format_size(homes.arena_bytes))
                                  : std::string("blocks are placed as they come"));
    // A layout goes with the homes the simulation found best for it, whatever they gain alone.
    if (!homes.planned() && homes.host_entries() == 0) {
        log::info("host homes: under {}, no allocation of {} gains from a host home", budget, source);
        return;
    }
    const double gain = placement::simulated_gain(homes.simulated_step_seconds, homes.all_gpu_step_seconds);
    if (!homes.planned() && !placement::homes_pay(homes)) {
        log::info("host homes: under {}, host homes would shorten {}'s step by {:.1f}% in simulation ({:.1f} ms "
                  "against {:.1f} ms), less than the {:.0f}% the simulator can be trusted with; every allocation is "
                  "homed on the GPU",
                  budget, source, 100.0 * gain, homes.simulated_step_seconds * 1e3,
                  homes.all_gpu_step_seconds * 1e3, 100.0 * placement::kMinSimulatedGain);
        return;
    }
    const auto& chosen = homes.choice.homes;
    log::info("host homes from {}: {} of the {} allocations live in its learned step ({}) on the host; migration must "
              "move {} a step instead of {} ({} kernels judged by their timing); its step simulated at {:.1f} ms "
              "against {:.1f} ms with every home on the GPU",
              source, std::count(chosen.begin(), chosen.end(), placement::Home::Host), chosen.size(),
              format_size(homes.choice.host_bytes), format_size(homes.choice.swapped_bytes),
              format_size(homes.choice.all_gpu_swapped_bytes), homes.kernels_judged,
              homes.simulated_step_seconds * 1e3, homes.all_gpu_step_seconds * 1e3);
    std::lock_guard lock(mutex_);
    sequence_ = placement::HomeSequence(std::move(homes.prologue), std::move(homes.step));
    step_offsets_ = std::move(homes.step_offsets);
    arena_bytes_.store(homes.arena_bytes, std::memory_order_release);
    if (const std::optional<uint64_t> at = position()) sequence_.start_in_step(*at);
    device_ = device;
    routing_.store(true, std::memory_order_release);
    figures.used = true;
    figures_.chosen(std::move(figures));
}

void HostHomeRouter::report() const {
    if (!routing_.load(std::memory_order_acquire)) return;
    std::lock_guard lock(mutex_);
    const placement::HomeSequenceCounts& c = sequence_.counts();
    figures_.routed({.host = c.host,
                     .matched = c.matched,
                     .unmatched = c.unmatched,
                     .resyncs = c.resyncs,
                     .laid_out = planned_placed_.load(std::memory_order_relaxed),
                     .displaced = planned_displaced_.load(std::memory_order_relaxed)});
    log::info("host homes: {} allocations routed to the host; {} matched the learned sequence ({} after a resync), "
              "{} did not (homed on the GPU)",
              c.host, c.matched, c.resyncs, c.unmatched);
    if (arena_bytes() != 0)
        log::info("step layout: {} blocks placed where the layout put them, {} placed as they came (their place "
                  "was taken, or no arena)",
                  planned_placed_.load(std::memory_order_relaxed), planned_displaced_.load(std::memory_order_relaxed));
}

} // namespace uvmp::driver

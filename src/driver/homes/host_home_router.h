// Which converted allocations of this run live on the host (UVMP_HOST_HOMES):
// the homes learned from an earlier run's trace recorded with kernel timing
// (core/homesearch/recorded_homes.h), or from this run's own first steps
// (driver/homes/home_learner.h), routed by allocation order and size
// (core/placement/home_sequence.h). A trace is read on the first conversion,
// once the device's budget is known; homes learned in the run arrive later,
// and routing starts with the allocation after them. Every conversion asks it
// in order.
#pragma once

#include "core/accounting/host_home_figures.h"
#include "core/config/options.h"
#include "core/placement/home_sequence.h"
#include "core/homesearch/recorded_homes.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace uvmp::driver {

class HostHomeRouter {
public:
    // What routing says of one allocation.
    struct Routed {
        // The learned step's entry it took, where it took one.
        std::optional<size_t> step_entry;
        // Its offset in the arena, where a layout planned for the learned step
        // places it (a GPU home only).
        std::optional<uint64_t> arena_offset;
    };

    // `figures`: where the choice and what routing did are reported.
    HostHomeRouter(const Config& config, HostHomeFigures& figures) : config_(config), figures_(figures) {}

    // Where the rates of a device come from (driver/rates/device_rates.h);
    // until given, the reference figures. Set before the first allocation.
    // `rates_of`: the device's rates as decisions take them; `fastest_of`: the
    // same with moves no slower than the run has seen them go (DeviceRates::fastest).
    void take_rates_from(std::function<rates::LinkRates(int)> rates_of,
                         std::function<rates::LinkRates(int)> fastest_of) {
        rates_of_ = std::move(rates_of);
        fastest_of_ = std::move(fastest_of);
    }
    rates::LinkRates rates(int device) const { return rates_of_ ? rates_of_(device) : rates::LinkRates{}; }
    rates::LinkRates fastest_rates(int device) const { return fastest_of_ ? fastest_of_(device) : rates(device); }

    // The home of the run's next converted allocation, of `bytes` on `device`
    // whose budget is `budget_bytes`, and where its block goes (*routed). Any
    // thread; the calls' order is the order the sequence follows.
    placement::Home home_of(int device, uint64_t bytes, uint64_t budget_bytes, Routed* routed);
    // The arena the planned layout needs (0: no layout), once routing has begun.
    uint64_t arena_bytes() const { return arena_bytes_.load(std::memory_order_acquire); }
    // An allocation with an arena offset got its block there (else the place
    // was taken, or there was no arena, and the pool placed it as it came).
    void note_planned(bool placed) {
        (placed ? planned_placed_ : planned_displaced_).fetch_add(1, std::memory_order_relaxed);
    }
    // Remote trials' verdict: these entries of the learned step are homed at
    // `home` from the next allocation on.
    void set_homes(std::span<const size_t> step_entries, placement::Home home);
    // Whether the planned layout places the GPU-homed entries from the next
    // allocation on (it does once routing begins): a layout planned around the
    // host homes is taken away with all of them.
    void use_layout(bool on) { layout_on_.store(on, std::memory_order_release); }
    // Whether a planned layout places them now.
    bool layout_used() const { return arena_bytes() != 0 && layout_on_.load(std::memory_order_acquire); }
    // Whether this run learns its homes from itself: UVMP_HOST_HOMES=auto
    // without UVMP_TRACE_IN, with policy learned and a budget.
    bool learns_in_run() const;
    // The homes learned from this run's recording on `device`.
    // `allocations_recorded` counts the managed allocations the recording
    // holds: the run's place in the learned step.
    void adopt_learned(int device, uint64_t budget_bytes, placement::RecordedHomes homes,
                       const std::function<uint64_t()>& allocations_recorded);
    // What routing did, in one log line and in the figures (at exit).
    void report() const;
    // Whether routing has begun.
    bool routing() const { return routing_.load(std::memory_order_acquire); }

    // Around fork(): the sequence's lock, held while the process is copied. A
    // child allocates as nothing recorded: it homes everything on the GPU.
    void lock_for_fork() { mutex_.lock(); }
    void unlock_after_fork() { mutex_.unlock(); }
    void forget_after_fork() { routing_.store(false, std::memory_order_relaxed); }

private:
    void set_up(int device, uint64_t budget_bytes);
    // Logs what the homes are and starts routing by them where they pay.
    // `source`: where they were learned, for the log. `position`: where in
    // the learned step the run is (nullopt: before its prologue).
    void adopt(int device, uint64_t budget_bytes, placement::RecordedHomes& homes, const std::string& source,
               const std::function<std::optional<uint64_t>()>& position);
    // Whether homes may be chosen at all under this configuration.
    bool enabled() const;

    const Config& config_;
    HostHomeFigures& figures_;
    std::function<rates::LinkRates(int)> rates_of_;
    std::function<rates::LinkRates(int)> fastest_of_;
    std::once_flag once_;
    std::atomic<bool> routing_{false};
    int device_ = -1; // the device the homes were chosen for: its budget decided them
    mutable std::mutex mutex_;
    placement::HomeSequence sequence_;
    std::vector<std::optional<uint64_t>> step_offsets_; // by step entry (RecordedHomes::step_offsets)
    std::atomic<uint64_t> arena_bytes_{0};
    std::atomic<bool> layout_on_{true};
    std::atomic<uint64_t> planned_placed_{0}, planned_displaced_{0};
};

} // namespace uvmp::driver

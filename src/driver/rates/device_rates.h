// The link rates of each device the job uses, settled on the device's first
// use under a budget by UVMP_RATES: the user's cache, else the probe
// (link_probe.h); always the probe; never (the reference figures); or a file.
// Every consumer asks here, so that a device nobody measured runs on the
// reference figures and says so, and one that was measured never does.
//
// Rates measured on this machine (probe or cache) are then corrected from the
// run's own moves: the mover times its large evictions on the GPU
// (driver/rates/move_timer.h) and the eviction figure follows the median of
// the latest (rates::RateRefiner); fetches are not timed (worker/planner.cpp).
// A rates file or the reference figures stand as given.
#pragma once

#include "core/accounting/device_budget.h"
#include "core/config/options.h"
#include "core/rates/link_rates.h"
#include "core/rates/rate_refiner.h"
#include "driver/table/driver_table.h"

#include <array>
#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace uvmp::driver {

class DeviceRates {
public:
    static constexpr size_t kMaxDevices = 64;

    explicit DeviceRates(const Config& config) : config_(config) {}

    // The rates of `device`, whose context is current on the calling thread,
    // settled on the first call for it (a probe reserves its buffer against
    // `guard`). Never fails: whatever goes wrong is said in one line and the
    // reference figures stand.
    rates::LinkRates settle(int device, const DriverTable& table, DeviceBudget& guard);
    // The settled rates of `device`, or nullopt before settle.
    std::optional<rates::LinkRates> settled(int device) const;
    // The settled rates, else the reference figures.
    rates::LinkRates of(int device) const { return settled(device).value_or(rates::LinkRates{}); }
    // of(), with fetch and eviction no slower than the figures the run's moves
    // refined (rates::fastest_moves): for models that bound a wait from below.
    rates::LinkRates fastest(int device) const;
    // Every settled device's rates, by device.
    std::vector<std::pair<int, rates::LinkRates>> all() const;

    // A move of the library's that the GPU timed: `bytes` in `seconds`. Where
    // the device's rates were measured here, the refined figures replace them
    // once a refiner's window of moves has counted since the last change, and
    // only where one moved by at least 1%: readers keep every published value
    // (they take no lock), so publishing is kept to what changes a decision.
    // Any thread; serialised.
    void observe_move(int device, rates::Move move, uint64_t bytes, double seconds);

    // For the exit summary: one line a settled device.
    std::vector<std::string> summary_lines() const;
    // The stats file's JSON with the settled rates added under "link_rates"
    // (by device); unchanged where none settled.
    std::string with_rates(const std::string& stats_json) const;

private:
    enum class Mode { Auto, Probe, Reference, File };
    Mode mode() const;
    rates::LinkRates choose(int device, const DriverTable& table, DeviceBudget& guard);
    rates::LinkRates probed(int device, const DriverTable& table, DeviceBudget& guard,
                            const rates::DeviceIdentity& identity);

    const Config& config_;
    // Settling is serialised (and happens under the interceptor's budget lock,
    // which fork holds); reading takes no lock, so that a forked child or a
    // thread caught mid-read never waits. Each device's rates are published
    // once and never freed.
    std::mutex settle_mutex_;
    std::array<std::atomic<const rates::LinkRates*>, kMaxDevices> rates_{};
    // The refinement of one device: the rates it started from and the moves counted.
    struct Refinement {
        std::optional<rates::LinkRates> base;
        rates::RateRefiner refiner;
        size_t counted_at_publish = 0;
        size_t published = 0;
    };
    // Past this many publications a device keeps its last refined figures.
    static constexpr size_t kMaxPublished = 1024;
    mutable std::mutex refine_mutex_;
    std::array<Refinement, kMaxDevices> refinements_;
    // UVMP_RATES=FILE: read once, for every device.
    std::optional<rates::LinkRates> file_rates_;
    bool file_read_ = false;
};

} // namespace uvmp::driver

// The link rates of each device the job uses, settled on the device's first
// use under a budget by UVMP_RATES: the user's cache, else the probe
// (link_probe.h); always the probe; never (the reference figures); or a file.
// Every consumer asks here, so that a device nobody measured runs on the
// reference figures and says so, and one that was measured never does.
//
// Not done yet: refining fetch and eviction from the run's own moves
// (rates::RateRefiner). The mover (worker/planner.cpp, Planner::issue) queues
// its prefetches asynchronously and knows only how long each call took, not
// when the transfer ended; it would need an event pair a move or batch on its
// stream, read back later off the critical path, before the refiner has
// anything to count.
#pragma once

#include "core/accounting/device_budget.h"
#include "core/config/options.h"
#include "core/rates/link_rates.h"
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
    // Every settled device's rates, by device.
    std::vector<std::pair<int, rates::LinkRates>> all() const;

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
    // UVMP_RATES=FILE: read once, for every device.
    std::optional<rates::LinkRates> file_rates_;
    bool file_read_ = false;
};

} // namespace uvmp::driver

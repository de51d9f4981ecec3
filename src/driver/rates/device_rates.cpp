#include "driver/rates/device_rates.h"

#include "core/rates/rate_cache.h"
#include "core/util/log.h"
#include "driver/rates/link_probe.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <ctime>

namespace uvmp::driver {

DeviceRates::Mode DeviceRates::mode() const {
    const std::string& value = config_.link_rates;
    if (value.empty() || value == "auto") return Mode::Auto;
    if (value == "probe") return Mode::Probe;
    if (value == "reference") return Mode::Reference;
    return Mode::File;
}

rates::LinkRates DeviceRates::settle(int device, const DriverTable& table, DeviceBudget& guard) {
    if (device < 0 || static_cast<size_t>(device) >= kMaxDevices) return {};
    std::lock_guard lock(settle_mutex_);
    std::atomic<const rates::LinkRates*>& slot = rates_[static_cast<size_t>(device)];
    if (const rates::LinkRates* settled = slot.load(std::memory_order_acquire)) return *settled;
    const auto* chosen = new rates::LinkRates(choose(device, table, guard));
    log::info("device {}: link rates {}", device, rates::describe(*chosen));
    slot.store(chosen, std::memory_order_release);
    return *chosen;
}

rates::LinkRates DeviceRates::choose(int device, const DriverTable& table, DeviceBudget& guard) {
    switch (mode()) {
    case Mode::Reference: return {};
    case Mode::File:
        if (!file_read_) {
            file_read_ = true;
            try {
                file_rates_ = rates::read_rates_file(config_.link_rates);
            } catch (const std::exception& e) {
                log::error("UVMP_RATES: {}; the job runs on the reference rates", e.what());
            }
        }
        return file_rates_.value_or(rates::LinkRates{});
    case Mode::Auto:
    case Mode::Probe: break;
    }
    const rates::DeviceIdentity identity = device_identity(table, device);
    if (mode() == Mode::Auto) {
        const auto now = static_cast<int64_t>(std::time(nullptr));
        rates::CacheLookup cached = rates::load_cached_rates(&process_getenv, identity, now);
        if (cached.rates) return *cached.rates;
        log::info("device {}: no cached link rates ({}); probing the link", device, cached.why_not);
    }
    return probed(device, table, guard, identity);
}

rates::LinkRates DeviceRates::probed(int device, const DriverTable& table, DeviceBudget& guard,
                                     const rates::DeviceIdentity& identity) {
    const auto start = std::chrono::steady_clock::now();
    ProbeFailure failure;
    std::optional<rates::LinkRates> measured = probe_link_rates(table, device, guard, &failure);
    if (!measured) {
        // A device that cannot time its work is no fault of the job's: said only where asked for.
        if (failure.unsupported)
            log::info("device {}: the link cannot be probed ({}); the reference rates are used", device, failure.why);
        else
            log::warn("device {}: the link probe did not run to its end ({}); the reference rates are used", device,
                      failure.why);
        return {};
    }
    measured->device = identity;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string error;
    if (const auto path = rates::store_cached_rates(&process_getenv, *measured, &error))
        log::info("device {}: link probed in {:.0f} ms, kept in {}", device, seconds * 1e3, *path);
    else
        log::info("device {}: link probed in {:.0f} ms; not kept ({})", device, seconds * 1e3, error);
    return *measured;
}

std::optional<rates::LinkRates> DeviceRates::settled(int device) const {
    if (device < 0 || static_cast<size_t>(device) >= kMaxDevices) return std::nullopt;
    if (const rates::LinkRates* settled = rates_[static_cast<size_t>(device)].load(std::memory_order_acquire))
        return *settled;
    return std::nullopt;
}

std::vector<std::pair<int, rates::LinkRates>> DeviceRates::all() const {
    std::vector<std::pair<int, rates::LinkRates>> out;
    for (size_t i = 0; i < rates_.size(); ++i)
        if (const rates::LinkRates* settled = rates_[i].load(std::memory_order_acquire))
            out.emplace_back(static_cast<int>(i), *settled);
    return out;
}

void DeviceRates::observe_move(int device, rates::Move move, uint64_t bytes, double seconds) {
    if (device < 0 || static_cast<size_t>(device) >= kMaxDevices) return;
    const auto index = static_cast<size_t>(device);
    std::lock_guard lock(refine_mutex_);
    Refinement& r = refinements_[index];
    if (!r.base) {
        const auto current = settled(device);
        if (!current || (current->source != rates::Source::Probe && current->source != rates::Source::Cache)) return;
        r.base = *current;
    }
    if (!r.refiner.observe(move, bytes, seconds) || r.published >= kMaxPublished) return;
    const size_t counted = r.refiner.moves_counted(rates::Move::Fetch) + r.refiner.moves_counted(rates::Move::Evict);
    if (r.published > 0 && counted - r.counted_at_publish < r.refiner.window()) return;
    const rates::LinkRates refined = r.refiner.refined(*r.base);
    if (refined.source != rates::Source::Refined) return;
    const rates::LinkRates current = of(device);
    const auto moved = [](double now, double was) { return was <= 0 || std::abs(now - was) >= 0.01 * was; };
    if (!moved(refined.fetch_gbps, current.fetch_gbps) && !moved(refined.evict_gbps, current.evict_gbps)) return;
    r.counted_at_publish = counted;
    ++r.published;
    // The value it replaces stays allocated: a reader may be copying it.
    rates_[index].store(new rates::LinkRates(refined), std::memory_order_release);
    log::info("device {}: link rates refined from {} timed moves: {}", device, counted, rates::describe(refined));
}

rates::LinkRates DeviceRates::fastest(int device) const {
    const rates::LinkRates current = of(device);
    if (device < 0 || static_cast<size_t>(device) >= kMaxDevices) return current;
    std::lock_guard lock(refine_mutex_);
    const Refinement& r = refinements_[static_cast<size_t>(device)];
    return r.base ? rates::fastest_moves(current, *r.base) : current;
}

std::vector<std::string> DeviceRates::summary_lines() const {
    std::vector<std::string> lines;
    for (const auto& [device, rates] : all())
        lines.push_back(fmt::format("device {} link rates: {}", device, rates::describe(rates)));
    return lines;
}

std::string DeviceRates::with_rates(const std::string& stats_json) const {
    const auto settled = all();
    if (settled.empty()) return stats_json;
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(stats_json, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return stats_json;
    nlohmann::ordered_json by_device = nlohmann::ordered_json::object();
    for (const auto& [device, rates] : settled) by_device[std::to_string(device)] = nlohmann::ordered_json::parse(rates::to_json(rates).dump());
    j["link_rates"] = std::move(by_device);
    return j.dump(2);
}

} // namespace uvmp::driver

#include "core/rates/rate_refiner.h"

#include "core/util/median.h"

#include <algorithm>
#include <cmath>

namespace uvmp::rates {

RateRefiner::RateRefiner(Settings settings) : settings_(settings) {
    settings_.window = std::max<size_t>(settings_.window, 1);
}

bool RateRefiner::observe(Move move, uint64_t bytes, double seconds) {
    if (bytes < settings_.min_bytes || !(seconds > 0) || !std::isfinite(seconds)) return false;
    Window& w = move == Move::Fetch ? fetch_ : evict_;
    const double gbps = static_cast<double>(bytes) / seconds / 1e9;
    if (w.gbps.size() < settings_.window) w.gbps.push_back(gbps);
    else w.gbps[w.next] = gbps;
    w.next = (w.next + 1) % settings_.window;
    ++w.counted;
    return true;
}

std::optional<double> RateRefiner::estimate_gbps(Move move) const {
    const Window& w = window_of(move);
    if (w.counted < settings_.min_moves || w.gbps.empty()) return std::nullopt;
    return median(w.gbps);
}

size_t RateRefiner::moves_counted(Move move) const { return window_of(move).counted; }

LinkRates RateRefiner::refined(const LinkRates& base) const {
    LinkRates out = base;
    const auto fetch = estimate_gbps(Move::Fetch);
    const auto evict = estimate_gbps(Move::Evict);
    if (fetch) out.fetch_gbps = *fetch;
    if (evict) out.evict_gbps = *evict;
    if (fetch || evict) out.source = Source::Refined;
    return out;
}

LinkRates fastest_moves(const LinkRates& current, const LinkRates& base) {
    LinkRates fastest = current;
    fastest.fetch_gbps = std::max(current.fetch_gbps, base.fetch_gbps);
    fastest.evict_gbps = std::max(current.evict_gbps, base.evict_gbps);
    return fastest;
}

} // namespace uvmp::rates

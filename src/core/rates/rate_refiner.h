// Corrects the probe's fetch and eviction rates from the timings of the
// library's own moves during the run: the probe's short moves can miss what a
// long run sees (a link shared with another process, a host under memory
// pressure populating pages slowly).
//
// Each move counts by its rate, bytes over seconds, and the estimate is the
// median of the last `window` such rates: a move that stalled behind a fault or
// a context switch moves it by at most one place, and once most of the window
// sees a new rate the estimate is that rate. Moves under `min_bytes` are left
// out: the reference curves (reference.h) run 2 MiB pieces at 37% of the
// largest pieces' speed and 16 MiB ones at 79%, so their rate says more about
// the per-call overhead than the link; at 32 MiB it is about 90%.
//
// Not synchronised: the thread that times the moves owns it.
#pragma once

#include "core/rates/link_rates.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace uvmp::rates {

enum class Move : uint8_t { Fetch, Evict };

class RateRefiner {
public:
    struct Settings {
        uint64_t min_bytes = 32ull << 20;
        size_t window = 15;
        // Fewer moves counted than this leave the probe's figure standing.
        size_t min_moves = 3;
    };

    RateRefiner() : RateRefiner(Settings{}) {}
    explicit RateRefiner(Settings settings);

    // One move of the library: `bytes` in `seconds` of its wall time. Returns
    // whether it counted (large enough, and a positive finite time).
    bool observe(Move move, uint64_t bytes, double seconds);
    std::optional<double> estimate_gbps(Move move) const;
    size_t moves_counted(Move move) const;
    // Moves the estimate is the median of, at most.
    size_t window() const { return settings_.window; }

    // `base` with fetch and eviction from the run where enough moves counted
    // (Source::Refined), else `base` unchanged.
    LinkRates refined(const LinkRates& base) const;

private:
    struct Window {
        std::vector<double> gbps; // ring of the latest rates
        size_t next = 0;
        size_t counted = 0;
    };
    const Window& window_of(Move move) const { return move == Move::Fetch ? fetch_ : evict_; }

    Settings settings_;
    Window fetch_, evict_;
};

// `current` (a refinement of `base`) with fetch and eviction no slower than
// `base`'s: the least a move can have taken. The run's moves are timed beside
// kernels, faults and other moves, and the first ones beside host pages made
// for the first time, so a refined rate can fall well below what the link
// does alone (3.9-4.6 GB/s over GPT-2's learning steps on an H100 whose probe
// read 14.7). A model that bounds waits from below takes these; what moving
// a byte costs takes `current`.
LinkRates fastest_moves(const LinkRates& current, const LinkRates& base);

} // namespace uvmp::rates

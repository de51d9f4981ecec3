// How fast data crosses the host-GPU link, for the simulator: built from the
// rates in use (core/rates/link_shape.h); a default one holds the reference
// figures measured on an H200 (docs/simulation.md lists them).
#pragma once

#include "core/rates/link_shape.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace uvmp {

struct LinkModel {
    // Throughput of one transfer call of `piece_bytes`: calls of small pieces
    // spend most of their time in per-call overhead.
    using Point = rates::CurvePoint;
    std::vector<Point> prefetch_curve;
    std::vector<Point> evict_curve;
    // Kernels that touch host-resident pages migrate them on fault at this rate.
    double demand_fault_gbps = 0;
    // Evicting and fetching at the same time share the link: this is their sum.
    double concurrent_gbps = 0;
    // A fetch of chunks no block has used yet makes pages, at this rate.
    double populate_gbps = 0;
    // For launches recorded without a duration.
    uint64_t default_kernel_ns = 20'000;

    LinkModel() : LinkModel(rates::LinkRates{}) {}
    explicit LinkModel(const rates::LinkRates& rates) {
        rates::LinkShape shape = rates::link_shape(rates);
        prefetch_curve = std::move(shape.prefetch_curve);
        evict_curve = std::move(shape.evict_curve);
        demand_fault_gbps = shape.demand_fault_gbps;
        concurrent_gbps = shape.concurrent_gbps;
        populate_gbps = shape.populate_gbps;
    }

    double prefetch_gbps(uint64_t piece_bytes) const { return rate(prefetch_curve, piece_bytes); }
    double evict_gbps(uint64_t piece_bytes) const { return rate(evict_curve, piece_bytes); }
    double peak_prefetch_gbps() const { return prefetch_curve.empty() ? 0.0 : prefetch_curve.back().gbps; }
    double peak_evict_gbps() const { return evict_curve.empty() ? 0.0 : evict_curve.back().gbps; }

    // Scales a curve so that its largest pieces run at `peak_gbps`.
    static void scale_to_peak(std::vector<Point>& curve, double peak_gbps) {
        if (curve.empty() || curve.back().gbps <= 0) return;
        const double factor = peak_gbps / curve.back().gbps;
        for (Point& p : curve) p.gbps *= factor;
    }

    // Interpolated in log2 of the piece size between the points, flat beyond the ends.
    static double rate(const std::vector<Point>& curve, uint64_t piece_bytes) {
        if (curve.empty()) return 0.0;
        if (piece_bytes <= curve.front().piece_bytes) return curve.front().gbps;
        for (size_t i = 1; i < curve.size(); ++i) {
            if (piece_bytes > curve[i].piece_bytes) continue;
            const double x0 = std::log2(static_cast<double>(curve[i - 1].piece_bytes));
            const double x1 = std::log2(static_cast<double>(curve[i].piece_bytes));
            const double t = (std::log2(static_cast<double>(piece_bytes)) - x0) / (x1 - x0);
            return curve[i - 1].gbps + t * (curve[i].gbps - curve[i - 1].gbps);
        }
        return curve.back().gbps;
    }
};

} // namespace uvmp

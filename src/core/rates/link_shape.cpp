#include "core/rates/link_shape.h"

namespace uvmp::rates {
namespace {

template <size_t N>
std::vector<CurvePoint> scaled(const std::array<CurvePoint, N>& curve, double factor) {
    std::vector<CurvePoint> out(curve.begin(), curve.end());
    for (CurvePoint& point : out) point.gbps *= factor;
    return out;
}

} // namespace

LinkShape link_shape(const LinkRates& rates) {
    // Factors of exactly 1 for the reference rates, so its curves come out bit for bit.
    const double fetch = rates.fetch_gbps / kReferenceFetchGbps;
    const double evict = rates.evict_gbps / kReferenceEvictGbps;
    const double both =
        (rates.fetch_gbps + rates.evict_gbps) / (kReferenceFetchGbps + kReferenceEvictGbps);
    return {scaled(kReferencePrefetchCurve, fetch), scaled(kReferenceEvictCurve, evict),
            kReferenceDemandFaultGbps * fetch, kReferenceConcurrentGbps * both, rates.populate_gbps};
}

} // namespace uvmp::rates

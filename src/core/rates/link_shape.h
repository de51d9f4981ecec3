// The simulator's link (core/sim/link_model.h) from measured rates. The probe
// measures the fetch and eviction rates of large pieces; how throughput falls
// with smaller pieces, and what faults and shared use reach, keep the shapes
// measured on the reference device, scaled by the measured rates against the
// reference ones. The reference rates give the reference curves exactly.
#pragma once

#include "core/rates/link_rates.h"

#include <vector>

namespace uvmp::rates {

struct LinkShape {
    std::vector<CurvePoint> prefetch_curve;
    std::vector<CurvePoint> evict_curve;
    // Fault-path migration scales with fetching, the shared link with the sum
    // of both directions, until a probe measures them.
    double demand_fault_gbps = 0;
    double concurrent_gbps = 0;
    // Measured as it is: making pages costs no link time.
    double populate_gbps = 0;
};

LinkShape link_shape(const LinkRates& rates);

} // namespace uvmp::rates

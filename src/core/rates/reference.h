// The figures measured once on an H200 over PCIe Gen5 (driver 580, docs/design.md,
// "Tiers", and docs/simulation.md). They are the fallback for what was never
// measured: a trace simulated without rates, a library whose probe could not run.
// Every other figure comes from the device the library runs on (link_rates.h).
// Nothing outside core/rates holds a link rate.
#pragma once

#include <array>
#include <cstdint>

namespace uvmp::rates {

struct CurvePoint {
    uint64_t piece_bytes;
    double gbps; // 1e9 bytes per second
};

inline constexpr double kReferenceFetchGbps = 49.0;        // migration to the GPU, large pieces
inline constexpr double kReferenceEvictGbps = 15.0;        // to the host, which populates its pages
inline constexpr double kReferenceRemoteWriteGbps = 52.6;  // kernels writing host memory
inline constexpr double kReferenceRemoteReadGbps = 51.2;   // kernels reading host memory
inline constexpr double kReferenceMemoryGbps = 4800;       // HBM3e: no kernel moves its named bytes faster
// A prefetch to the GPU of managed memory no one has touched yet: pages made
// there, nothing copied (2 GiB ranges, docs/benchmarks.md, "Placement primitives").
inline constexpr double kReferencePopulateGbps = 209.0;

// Throughput of one transfer call by its piece size: small pieces spend most of
// their time in per-call overhead. Measured by a separate run than the rates
// above, so the largest pieces come out a little apart from them (48 and 16);
// the curves keep these shapes and scale with the measured fetch and eviction
// rates (link_shape.h).
inline constexpr std::array kReferencePrefetchCurve{CurvePoint{2ull << 20, 18.0}, CurvePoint{4ull << 20, 26.0},
                                                    CurvePoint{16ull << 20, 38.0}, CurvePoint{64ull << 20, 48.0}};
inline constexpr std::array kReferenceEvictCurve{CurvePoint{2ull << 20, 11.5}, CurvePoint{64ull << 20, 16.0}};
// Kernels faulting host-resident pages in migrate them at this rate.
inline constexpr double kReferenceDemandFaultGbps = 9.0;
// Evicting and fetching at the same time share the link: this is their sum.
inline constexpr double kReferenceConcurrentGbps = 23.0;

// The streaming line used where no rate was measured (streaming_line.h): the
// value tuned on the H200 (docs/benchmarks.md, pool runs 49-54), kept so that
// traces simulated without rates give the results they always gave.
inline constexpr double kReferenceStreamingGbps = 600;

} // namespace uvmp::rates

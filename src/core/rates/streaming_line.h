// The streaming line: the named bytes per second of a kernel's local run time
// from which the timing prior (core/placement/timing_prior.h) takes a kernel to
// stream its operands, reading each about once, so that they may live on the
// host. It follows from the rates rather than from benchmarks:
//
// An operand read n times a step from the host costs n trips at the remote
// read rate r; homed on the GPU and swapped, it costs one eviction and one
// fetch (e, f). Remote reading pays while n / r < 1 / e + 1 / f, that is for
// n below n* = r (1/e + 1/f). A kernel that reads its named bytes n times moves
// at most memory_bandwidth / n of named bytes a second, so one at or above
// memory_bandwidth / n* re-reads its operands fewer than n* times: it counts as
// streaming. On the H200 figures (r 51.2, e 15, f 49, 4800) n* is 4.5 and the
// line 1080 GB/s; on an H100 (r 22.2, e 13.5, f 38.4, 3350) 2.2 and 1510.
//
// Without measured rates the line stays kReferenceStreamingGbps (600), the
// value tuned on the H200 that recorded traces were simulated with: deriving
// it from the reference figures would change every such result.
#pragma once

#include "core/rates/link_rates.h"

#include <optional>
#include <string>

namespace uvmp::rates {

// n*: reads of a byte from the host that cost as much as swapping it once.
double break_even_reads(const LinkRates& rates);
// memory_gbps / n*.
double derived_streaming_gbps(const LinkRates& rates);
// The derived line for measured rates, kReferenceStreamingGbps for the reference.
double streaming_line_gbps(const LinkRates& rates);

// UVMP_STREAMING_GBPS: a positive number, or auto (the line of the rates in use).
struct StreamingSetting {
    std::optional<double> explicit_gbps; // nullopt: auto

    // No conversion to a number: every caller names the rates its line follows
    // from, so that none takes the reference line where rates are known.
    double line_gbps(const LinkRates& rates) const { return explicit_gbps ? *explicit_gbps : streaming_line_gbps(rates); }
    std::string text() const;
};

} // namespace uvmp::rates

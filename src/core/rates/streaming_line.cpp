#include "core/rates/streaming_line.h"

#include <fmt/format.h>

namespace uvmp::rates {

double break_even_reads(const LinkRates& rates) {
    return rates.remote_read_gbps * (1.0 / rates.evict_gbps + 1.0 / rates.fetch_gbps);
}

double derived_streaming_gbps(const LinkRates& rates) { return rates.memory_gbps / break_even_reads(rates); }

double streaming_line_gbps(const LinkRates& rates) {
    return rates.measured() ? derived_streaming_gbps(rates) : kReferenceStreamingGbps;
}

std::string StreamingSetting::text() const { return explicit_gbps ? fmt::format("{:g}", *explicit_gbps) : "auto"; }

} // namespace uvmp::rates

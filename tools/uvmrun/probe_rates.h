// uvmrun --probe-rates: the library's link probe alone, on one device, its
// figures printed as a rates file (UVMP_RATES=FILE reads it back) and kept in
// the cache the library reads.
#pragma once

namespace uvmp::tools {

// The exit status: 0 with the rates printed, 1 when the probe could not run.
int probe_rates_command(int device_ordinal);

} // namespace uvmp::tools

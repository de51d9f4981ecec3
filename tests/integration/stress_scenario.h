// Sixteen threads allocating (plain and stream-ordered), freeing (their own
// memory and each other's, plain and stream-ordered, on their own streams, a
// shared one and the per-thread default stream) and launching, for a bounded
// time (STRESS_SECONDS, 1.5 by default), under whatever policy and budget the
// environment sets. At the end every call must have succeeded and the
// library's counters must agree with what the program did: as many frees as
// allocations, nothing live, every launch seen. Built with ThreadSanitizer and
// with AddressSanitizer in CI.
#pragma once

#include "check_list.h"

namespace uvmp_integration {

void run_stress_scenario(CheckList& checks);

}  // namespace uvmp_integration

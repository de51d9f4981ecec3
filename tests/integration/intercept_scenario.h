// The scenario every interception route runs, and what must hold afterwards
// depending on whether the library was expected to convert allocations or to
// stay out of the way.
#pragma once

#include "check_list.h"
#include "driver_entry_points.h"

#include <optional>
#include <string_view>

namespace uvmp_integration {

enum class Expectation {
    converted,    // running under the library, which intercepts
    passthrough,  // no library, or a library that must change nothing
};

std::optional<Expectation> parse_expectation(std::string_view text);

// Allocates, launches through every launcher of `driver`, frees, and checks the
// fake driver's and the library's counters against `expectation`.
void run_intercept_scenario(const DriverEntryPoints& driver, const FakeDriverHelpers& fake,
                            Expectation expectation, CheckList& checks);

}  // namespace uvmp_integration

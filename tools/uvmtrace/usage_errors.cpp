#include "usage_errors.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

namespace uvmp::tools {
namespace {

constexpr int kExitBadUsage = 2;

} // namespace

void bad_usage(std::string_view command, const std::string& message) {
    std::cerr << "uvmtrace " << command << ": " << message << "\n";
    throw CLI::RuntimeError(kExitBadUsage);
}

SizeOrPercent size_option(std::string_view command, const std::string& name, const std::string& text) {
    const auto parsed = parse_size_or_percent(text);
    if (!parsed)
        bad_usage(command, fmt::format("{} '{}' is not a size: use bytes with an optional K/M/G/T suffix (\"24G\", "
                                       "\"1.5GiB\") or a percentage of the trace's footprint (\"66%\")",
                                       name, text));
    return *parsed;
}

} // namespace uvmp::tools

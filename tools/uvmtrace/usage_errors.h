// How uvmtrace subcommands refuse a command line: one line naming the command
// and what is wrong, then exit status 2.
#pragma once

#include "core/util/size_parse.h"

#include <string>
#include <string_view>

namespace uvmp::tools {

// Prints "uvmtrace COMMAND: MESSAGE" to standard error and ends the command with status 2.
[[noreturn]] void bad_usage(std::string_view command, const std::string& message);

// A size ("24G") or a percentage of the trace's footprint ("66%"), or bad_usage.
SizeOrPercent size_option(std::string_view command, const std::string& name, const std::string& text);

} // namespace uvmp::tools

// Reads an access trace written by TraceWriter. One reader serves the library
// (UVMP_TRACE_IN), the tools and the tests.
#pragma once

#include "core/trace/format/model.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

namespace uvmp::trace {

// A file that is not a trace, is truncated or corrupt, or has a newer major
// version. what() is one sentence for the user; offset() is where it went wrong.
class TraceFormatError : public std::runtime_error {
public:
    TraceFormatError(uint64_t offset, const std::string& message);
    uint64_t offset() const { return offset_; }

private:
    uint64_t offset_;
};

// Throws TraceFormatError for bad content and std::runtime_error when the file
// cannot be opened or read.
Trace read_trace_file(const std::string& path);
Trace read_trace_bytes(std::span<const std::byte> bytes);
// The same, with `source` (a path) in front of every error message.
Trace read_trace_bytes(std::span<const std::byte> bytes, const std::string& source);

} // namespace uvmp::trace

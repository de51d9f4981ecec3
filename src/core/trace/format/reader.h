// Reads an access trace written by TraceWriter. One reader serves the library
// (UVMP_TRACE_IN), the tools and the tests.
#pragma once

#include "core/trace/format/model.h"

#include <cstddef>
#include <cstdint>
#include <optional>
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

// Where a trace cut short ends (its job was killed, or the disk filled): its
// last whole record ends at `byte`, and `records` records (the header among
// them) come before.
struct TraceCut {
    uint64_t byte = 0;
    uint64_t records = 0;
};

// The same for a trace that may have been cut short: read up to its last whole
// record, with `cut` set when it ends early. One cut inside its header (nothing
// to read) still throws.
Trace read_trace_bytes(std::span<const std::byte> bytes, const std::string& source, std::optional<TraceCut>& cut);

} // namespace uvmp::trace

// How every uvmtrace subcommand opens its trace: as written, or compressed with
// zstd (`zstd trace.uvmt` gives trace.uvmt.zst, about a third of the size).
#pragma once

#include "core/trace/format/model.h"

#include <string>

namespace uvmp::tools {

// Throws trace::TraceFormatError for bad content (a corrupt or truncated
// compressed stream included) and std::runtime_error when the file cannot be read.
trace::Trace load_trace(const std::string& path);

} // namespace uvmp::tools

// How every uvmtrace subcommand opens its trace: as written, or compressed with
// zstd (`zstd trace.uvmt` gives trace.uvmt.zst, about a third of the size).
#pragma once

#include "core/trace/format/model.h"

#include <string>

namespace uvmp::tools {

// Throws trace::TraceFormatError for bad content (a corrupt compressed stream
// included) and std::runtime_error when the file cannot be read. A trace cut
// short is read up to its last whole record, with one line on stderr that says
// where it was cut.
trace::Trace load_trace(const std::string& path);

} // namespace uvmp::tools

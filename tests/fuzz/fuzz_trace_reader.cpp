// libFuzzer target: any bytes given to the trace reader must produce a trace or
// a TraceFormatError, never a crash, a hang, another exception or a huge allocation.
#include "core/trace/format/reader.h"

#include <cstddef>
#include <cstdint>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        uvmp::trace::Trace trace =
            uvmp::trace::read_trace_bytes(std::span(reinterpret_cast<const std::byte*>(data), size));
        // Touch what consumers rely on: every launch's accesses lie inside the access table.
        for (const uvmp::trace::Launch& launch : trace.launches) {
            if (uint64_t{launch.first_access} + launch.access_count > trace.accesses.size()) __builtin_trap();
            if (launch.kernel_id >= trace.kernel_names.size()) __builtin_trap();
        }
    } catch (const uvmp::trace::TraceFormatError&) {
    }
    return 0;
}

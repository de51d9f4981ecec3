// Writes an access trace while the application runs. Every append is
// thread-safe and never blocks on I/O: records go into a bounded buffer that a
// background thread writes out; when the buffer is full, records are dropped and
// counted, and the count is written into the trace.
#pragma once

#include "core/trace/format/model.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace uvmp::trace {

class TraceWriter {
public:
    struct Options {
        std::string path;
        uint64_t buffer_bytes = 64ull << 20; // memory held for records not yet written
    };

    // Opens path for writing and writes the header. On failure returns nullptr and
    // sets error to a sentence naming the path and the reason.
    static std::unique_ptr<TraceWriter> open(const Options& options, const Header& header,
                                             std::string& error);

    virtual ~TraceWriter() = default;

    virtual void kernel(uint32_t id, std::string_view name) = 0;
    // A Pooled record is written as a converted allocation that names its slab.
    virtual void alloc(const Alloc& record) = 0;
    virtual void free(const Free& record) = 0;
    // record.first_access and record.access_count are ignored: accesses are given here.
    virtual void launch(const Launch& record, std::span<const Access> accesses) = 0;
    // A launch into a graph being captured: it did not run (format 1.2).
    virtual void captured_launch(const CapturedLaunch& record, std::span<const Access> accesses) = 0;
    // A graph launch; its replay's launches are written with launch() after it.
    virtual void graph_launch(const GraphLaunch& record) = 0;
    virtual void kernel_duration(uint64_t launch_seq, uint64_t duration_ns) = 0;
    virtual void move(const Move& record) = 0;
    virtual void iteration(const Iteration& record) = 0;
    // A slab of the managed pool made or given back.
    virtual void slab(const Slab& record) = 0;

    // Flushes everything, writes the dropped count and closes. Idempotent.
    virtual void close() = 0;

    virtual uint64_t records_written() const = 0;
    virtual uint64_t records_dropped() const = 0;
};

// Writes a whole in-memory trace, in the order a recorder would have produced
// it (everything placed before a launch, then the launch). Returns the records
// dropped for want of buffer space; throws std::runtime_error when the file
// cannot be written.
uint64_t write_trace_file(const Trace& trace, const std::string& path, uint64_t buffer_bytes = 64ull << 20);

} // namespace uvmp::trace

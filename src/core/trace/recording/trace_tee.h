// Two trace writers fed the same records: the file the user asked for and a
// recorder the library learns from (core/trace/recording/memory_recorder.h), while both
// are wanted. Closing it closes neither: each has its own owner.
#pragma once

#include "core/trace/format/writer.h"

namespace uvmp::trace {

class TraceTee final : public TraceWriter {
public:
    TraceTee(TraceWriter& first, TraceWriter& second) : first_(first), second_(second) {}

    void kernel(uint32_t id, std::string_view name) override { both([&](TraceWriter& w) { w.kernel(id, name); }); }
    void alloc(const Alloc& record) override { both([&](TraceWriter& w) { w.alloc(record); }); }
    void free(const Free& record) override { both([&](TraceWriter& w) { w.free(record); }); }
    void launch(const Launch& record, std::span<const Access> accesses) override {
        both([&](TraceWriter& w) { w.launch(record, accesses); });
    }
    void captured_launch(const CapturedLaunch& record, std::span<const Access> accesses) override {
        both([&](TraceWriter& w) { w.captured_launch(record, accesses); });
    }
    void graph_launch(const GraphLaunch& record) override { both([&](TraceWriter& w) { w.graph_launch(record); }); }
    void kernel_duration(uint64_t launch_seq, uint64_t duration_ns) override {
        both([&](TraceWriter& w) { w.kernel_duration(launch_seq, duration_ns); });
    }
    void move(const Move& record) override { both([&](TraceWriter& w) { w.move(record); }); }
    void iteration(const Iteration& record) override { both([&](TraceWriter& w) { w.iteration(record); }); }
    void slab(const Slab& record) override { both([&](TraceWriter& w) { w.slab(record); }); }
    void close() override {}
    uint64_t records_written() const override { return first_.records_written(); }
    uint64_t records_dropped() const override { return first_.records_dropped(); }

private:
    template <typename Write>
    void both(Write&& write) {
        write(first_);
        write(second_);
    }

    TraceWriter& first_;
    TraceWriter& second_;
};

} // namespace uvmp::trace

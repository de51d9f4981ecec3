// A trace recorder that keeps its records in memory, for a run that learns from
// itself what an earlier run's trace file would have told it (host homes
// learned within the run, driver/homes/home_learner.h). It starts in the middle of a
// run: the allocations live then are given to it first, and launch numbers are
// the process's own, which snapshot() turns into positions in its launches.
// Records come from any thread; kernel durations may come before or after
// their launch. Past `max_launches` launches it keeps nothing more and counts
// what it drops.
#pragma once

#include "core/trace/analysis/mover_waits.h"
#include "core/trace/format/writer.h"

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace uvmp::trace {

class MemoryRecorder final : public TraceWriter {
public:
    MemoryRecorder(Header header, uint64_t max_launches);

    void kernel(uint32_t id, std::string_view name) override;
    void alloc(const Alloc& record) override;
    void free(const Free& record) override;
    void launch(const Launch& record, std::span<const Access> accesses) override;
    // Nothing ran: a learned step is made of what did.
    void captured_launch(const CapturedLaunch&, std::span<const Access>) override {}
    // Its replay comes as launches, which is what a step is made of.
    void graph_launch(const GraphLaunch&) override {}
    void kernel_duration(uint64_t launch_seq, uint64_t duration_ns) override;
    // What the planner queued for the launch, and when its kernel started (ns,
    // CUPTI's clock): what the run's own waits are modelled from
    // (trace/analysis/mover_waits.h). No trace file holds them.
    void launch_batch(uint64_t launch_seq, const LaunchBatch& batch);
    void kernel_start(uint64_t launch_seq, uint64_t start_ns);
    // What the library moved is no part of what the program does.
    void move(const Move&) override {}
    void iteration(const Iteration& record) override;
    void slab(const Slab& record) override;
    // Stops taking records and lets their memory go. Idempotent.
    void close() override;
    uint64_t records_written() const override;
    uint64_t records_dropped() const override;

    // The trace so far, as a reader would return it: launches in the order of
    // their numbers, each with its duration where one came, and every
    // `launches_before` a position in those launches; `mover`, where given, by
    // the same positions (a batch's needs of launches not recorded left out).
    Trace snapshot(MoverRecord* mover = nullptr) const;
    uint64_t launches() const;
    // Managed allocations recorded so far (the live ones given first included).
    uint64_t managed_allocs() const;

private:
    template <typename Read>
    auto locked(Read&& read) const {
        std::lock_guard lock(mutex_);
        return read();
    }
    // Runs `push` under the lock unless closed or full (counted as dropped).
    template <typename Push>
    void keep(Push&& push) {
        std::lock_guard lock(mutex_);
        if (closed_) return;
        if (trace_.launches.size() >= max_launches_) {
            ++dropped_;
            return;
        }
        push();
        ++written_;
    }

    const uint64_t max_launches_;
    mutable std::mutex mutex_;
    bool closed_ = false;
    Trace trace_; // launches as they came, with the process's launch numbers
    std::unordered_map<uint64_t, uint64_t> durations_; // by launch number
    std::unordered_map<uint64_t, LaunchBatch> batches_;  // by launch number
    std::unordered_map<uint64_t, uint64_t> starts_;      // by launch number
    // Allocations recorded: one made as recording begins may come both among
    // the live ones and as a record of its own, and a free of one made before
    // that never came means nothing here.
    std::unordered_set<uint32_t> known_;
    uint64_t managed_allocs_ = 0;
    uint64_t written_ = 0;
    uint64_t dropped_ = 0;
};

} // namespace uvmp::trace

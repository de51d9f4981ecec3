// A first judgement of which kernels tolerate remote operands, from local
// kernel durations alone, before any launch ran with an operand on the host.
// A kernel that moves its named bytes at a good share of the GPU's memory
// bandwidth reads each byte about once (elementwise work, normalisations,
// reductions, optimizer updates): with an operand remote it costs about one
// trip of that operand over the link. A kernel far below that rate does more
// work per byte than it moves, which is what re-reading operands looks like (a
// GEMM, attention): it is judged intolerant. Remote trials (remote_trial.h)
// correct it once the run has timed the readers remote; this prior says where
// trying is worth it, and lets the simulator estimate what host homes could gain
// on a recorded trace.
#pragma once

#include "core/placement/tolerance.h"
#include "core/rates/reference.h"
#include "core/trace/format/model.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace uvmp::placement {

// Named bytes per second of local run time at which a kernel counts as
// streaming: the line of the rates in use (core/rates/streaming_line.h says how
// it follows from them); this is the one used where none were measured. By this
// measure (each byte counted once), on the H200 GPT-2 small's elementwise
// kernels reach 2.6-4.4 TB/s and most of its GEMMs 1.2-1.7 TB/s, one 2.7;
// resnet50's batch-norm kernels 0.44-1.28 TB/s and its small GEMMs 3.5-4.1. No
// line parts every GEMM from every streaming kernel, so the line only says what
// is worth trying: remote trials (remote_trial.h) time the readers with their
// operands remote and give the GPU home back where they run slower than it
// would cost.
inline constexpr double kDefaultStreamingGbps = rates::kReferenceStreamingGbps;

// The memory bandwidth where none was measured (LinkRates::memory_gbps where
// it was): no kernel moves its named bytes faster, so a duration cleaned of its
// waits is never taken as shorter than that allows (trace/analysis/fastest_durations.h).
inline constexpr double kMemoryGbps = rates::kReferenceMemoryGbps;

struct TimingPriorConfig {
    double streaming_gbps = kDefaultStreamingGbps;
    // Kernels shorter than this are left unjudged: their time is launch
    // overhead more than work, and their operands are small.
    uint64_t min_duration_ns = 2000;
    // Kernels whose every timed launch waited for moves
    // (trace/analysis/fastest_durations.h): their rate is only a bound from below, and
    // it varies with the waits from run to run. They are judged tolerant, so
    // that the run homes what they name on the host where that pays and times
    // them there; remote trials (remote_trial.h) give the GPU home back to what
    // they read too slowly. One too short to judge stays unjudged. Empty where
    // no trial follows.
    std::vector<uint32_t> kernels_to_try;
};

class TimingPrior final : public ToleranceSource {
public:
    // Every timed launch of the trace: the bytes its accesses name in managed
    // allocations (each access's length, or the rest of the allocation from its
    // offset when unknown) over its duration; each kernel is judged by its
    // median rate. A trace recorded without timing judges nothing.
    static TimingPrior from_trace(const trace::Trace& trace, const TimingPriorConfig& config = {});
    // The same over the launches whose positions `counted` accepts.
    static TimingPrior from_launches(const trace::Trace& trace, const TimingPriorConfig& config,
                                     const std::function<bool(uint64_t)>& counted);

    // The same verdict for every operand of a kernel: Unknown for a kernel never
    // timed (or only briefly), which the home choice treats as intolerant;
    // Tolerant for a judged kernel to try.
    Tolerance verdict(uint32_t kernel_id, uint32_t slot) const override;
    std::optional<double> kernel_gbps(uint32_t kernel_id) const;
    size_t kernels_judged() const { return gbps_.size(); }
    // Of them, those judged to stream their operands by their rate, and those
    // to be tried (kernels_to_try) whatever their rate: no kernel counts in both.
    size_t kernels_streaming() const;
    size_t kernels_tried() const;
    double streaming_gbps() const { return streaming_gbps_; }

private:
    double streaming_gbps_ = kDefaultStreamingGbps;
    std::unordered_map<uint32_t, double> gbps_; // median named GB/s by kernel id
    std::unordered_set<uint32_t> to_try_;       // TimingPriorConfig::kernels_to_try
};

} // namespace uvmp::placement

// Remote trials: the homes chosen from a recording judge which kernels may read
// an allocation remotely by a prior from their local timings alone
// (timing_prior.h), and a rate cannot part every GEMM from a streaming kernel.
// Once the run routes allocations to the host, the kernels that name them are
// timed again, remote. A kernel that streams its host-homed operands takes about
// its local time plus one trip of their bytes over the link; one that re-reads
// them (a GEMM: up to 108x slower) takes far longer. What a launch takes past
// its local time plus `trips` trips is what the host homes it names cost it.
// Where an allocation's share of that, over a step, exceeds the most its GPU home
// can cost (evicted and fetched back once a step), the GPU home is the cheaper
// one, and it is given back for the steps to come.
//
// Launches are matched by kind (trace/analysis/launch_kind.h). A kind's local time is the
// least the recording holds for it on launches naming no host-homed allocation, or
// made before the homes (pressure only lengthens a run); its excess with remote operands is the least
// over the judged step's launches of it that name some, so that a launch that
// also waited for a GPU-homed operand does not condemn the host-homed ones.
//
// A kind the recording never timed with its data in place (every launch of it
// waited for moves: trace/analysis/fastest_durations.h) has a stall for its least
// recorded duration, which would excuse a GEMM's remote reads; a kernel with no
// other kind had its operands homed on the host on trust (timing_prior.h). Such
// a kind is held to the streaming line instead: its named bytes at the rate of
// the slowest kernel still judged streaming, a local time short beside the two
// trips the trial allows. Its launches after learning are no help: nothing
// records whether they waited.
#pragma once

#include "core/placement/home_choice.h"
#include "core/placement/timing_prior.h"
#include "core/trace/analysis/launch_kind.h"
#include "core/trace/format/model.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace uvmp::placement {

struct TrialConfig {
    // Trips of the host-homed bytes a tolerant launch may add to its local
    // time: one read, with room for the noise of a shared link.
    double trips = 2.0;
    Rates rates; // remote reads for the trips; evictions and fetches for the GPU home's cost
    // Kinds without a local time of their own (CleanedDurations::kinds_untimed),
    // and the streaming line their local time is taken at (TimingPriorConfig;
    // 0: they are not judged).
    std::vector<trace::LaunchKind> kinds_untimed;
    double streaming_gbps = kDefaultStreamingGbps;
    // The recording's first launch with homes in place: every launch before it
    // ran with its data homed on the GPU, whatever went to the host after
    // (weights homed on the host name the same allocation in every step).
    uint64_t homes_from = 0;
};

struct TrialVerdict {
    // Host-homed allocations named in the judged step whose readers' excess
    // outweighs their GPU home's cost, in the order they were made.
    std::vector<uint32_t> gpu_again;
    uint64_t gpu_again_bytes = 0;
    uint64_t launches_judged = 0; // naming a host-homed allocation, timed, with a local time to compare
    // Launches naming a host-homed allocation left out: with no duration yet
    // (their kernels' records had not come), and of a kind with no local time.
    uint64_t launches_untimed = 0;
    uint64_t launches_without_local = 0;
    uint64_t kinds_judged = 0;
    uint64_t kinds_slowed = 0;    // whose least excess was above zero
    double excess_seconds = 0;    // the slowed kinds' excess over the judged step
    double gpu_again_excess_seconds = 0; // the part of it the allocations given back their GPU home caused
    // What the judged launches took remote, each beside its kind's local time:
    // the host-homed bytes they named (each launch once, with the most any of
    // its accesses names), and the seconds they took past their local times.
    // Their ratio to one trip of those bytes at the remote read rate
    // (trips_of) is the time of the read trips a named byte cost, which the
    // home choice and the simulator take as one. It holds whatever else slowed
    // the launches (moves beside them), and for a kind held to the streaming
    // line its local time is that line's estimate.
    uint64_t named_bytes = 0;
    double past_local_seconds = 0;
    // The kinds that took longest past their local times, longest first (at
    // most kSlowestKinds): which kernels the trips went to.
    static constexpr size_t kSlowestKinds = 4;
    struct KindTime {
        uint32_t kernel = 0;
        uint64_t first_launch = 0; // of the judged ones, its position in the recording
        uint64_t launches = 0;
        uint64_t named_bytes = 0;
        double past_local_seconds = 0;
    };
    std::vector<KindTime> slowest;
};

// `past_local_seconds` over one trip of `named_bytes` at `read_gbps`: 0 where
// nothing was named, or where the launches took no longer than their local
// times together.
double trips_of(double past_local_seconds, uint64_t named_bytes, double read_gbps);

// What each of `kernels` ran at in the judged step, in named GB/s by the timing
// prior's measure, over its launches there that name no host-homed allocation
// (nullopt for a kernel with none timed). With the homes in place the step
// moves little or nothing, so these times are the first the run records free
// of the learning steps' stalls: a kernel whose operands the prior kept on the
// GPU for its rate under pressure shows here whether it reads them as a
// streaming kernel does.
std::vector<std::optional<double>> trial_step_gbps(const trace::Trace& recording, uint64_t step_begin,
                                                   uint64_t step_end, const std::function<bool(uint32_t)>& host_homed,
                                                   std::span<const uint32_t> kernels,
                                                   const TimingPriorConfig& config = {});

// Judges the launches [step_begin, step_end) of `recording` (positions in its
// launches: a full step, every allocation of which was routed by the homes).
// `host_homed(id)`: whether allocation `id` lives on the host.
TrialVerdict judge_remote_trial(const trace::Trace& recording, uint64_t step_begin, uint64_t step_end,
                                const std::function<bool(uint32_t)>& host_homed, const TrialConfig& config = {});

} // namespace uvmp::placement

// The homes of a live run, learned from an earlier run's trace of the same
// program recorded with kernel timing: the host-home transform the simulator
// applies (host_homes.h: the learned step as it picks it, the timing prior as
// the tolerance judge, the home order against the budget), with as much of the
// order as simulating the recorded run under the learned policy says pays
// (core/homesearch/home_search.h), read back as the sequence of the recorded run's
// allocations that HomeSequence routes by.
#pragma once

#include "core/config/options.h"
#include "core/placement/home_choice.h"
#include "core/placement/home_sequence.h"
#include "core/placement/host_homes.h"
#include "core/placement/timing_prior.h"
#include "core/trace/format/model.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace uvmp::placement {

struct RecordedHomes {
    // The recorded run's managed allocations made before its learned step, and
    // those made within it, in order, each with the home the transform gave it.
    std::vector<HomeEntry> prologue;
    std::vector<HomeEntry> step;
    // The trace's ids of the allocations made before the learned step and live
    // in it that are homed on the host (HomeScope::LiveInStep only): a run
    // learning from itself has made them on the GPU and moves them there once.
    std::vector<uint32_t> earlier_host_ids;
    uint64_t earlier_host_bytes = 0;
    HomeChoice choice;           // for the learned step's live allocations
    uint64_t step_begin = 0;     // the learned step: launches [step_begin, step_end)
    uint64_t step_end = 0;
    uint64_t kernels_judged = 0; // by the timing prior
    uint64_t kernels_streaming = 0; // of them, judged to tolerate remote operands by their rate (tried ones apart)
    uint64_t kernels_tried = 0;     // judged tolerant to be tried remote (TimingPriorConfig::kernels_to_try)
    uint64_t candidates = 0;     // allocations of the step the home order ranks
    // Allocations the step makes that a reader judged intolerant (or not
    // judged) keeps on the GPU, by that kernel, most bytes first: what a
    // choice smaller than expected is made of.
    struct KeptOnGpu {
        uint32_t kernel = 0;
        std::optional<double> kernel_gbps; // its named bytes over its duration, where judged
        uint64_t allocations = 0;
        uint64_t bytes = 0;
    };
    std::vector<KeptOnGpu> kept_on_gpu;
    double streaming_gbps = 0; // the line the kernels were judged by
    // Set by a run learning from itself: launches of the recording that waited
    // for moves as they began, and kinds timed only on those
    // (trace::CleanedDurations).
    uint64_t waited_launches = 0;
    uint64_t kinds_from_waits = 0;
    // The recorded run's step, simulated with these homes and with every home on the GPU.
    double simulated_step_seconds = 0;
    double all_gpu_step_seconds = 0;
    uint64_t host_entries() const;

    // A layout planned for the learned step's GPU-homed blocks, where chosen
    // (LayoutChoice): each entry of `step`'s offset in an arena of
    // arena_bytes (none: the pool places it as it comes). Empty: no layout.
    std::vector<std::optional<uint64_t>> step_offsets;
    uint64_t arena_bytes = 0;
    bool planned() const { return !step_offsets.empty(); }
    // What the layout was weighed by: the step simulated with the best homes
    // of each placement (over dead bytes as blocks come; by the layout), each
    // as the library would use them (placed as they come, the homes only
    // where they pay). 0 where not simulated.
    double over_dead_step_seconds = 0;
    double planned_step_seconds = 0;
    uint64_t planned_step_out_bytes = 0; // moved out in the layout's typical step
};

// nullopt, with the reason in *why_not, for a trace the transform cannot use:
// no full iteration, or no kernel timing (UVMP_TRACE_TIMING=1) to judge by.
// Whether the homes are worth using: their simulated step must be shorter than
// the one with every home on the GPU by kMinSimulatedGain at least. The
// simulator replays the recorded run's addresses, while a live pool lays its
// blocks out afresh once some go to host slabs; on resnet50 a predicted gain of
// 2-3% came out a step twice as long. A gain that small is within what it misses.
inline constexpr double kMinSimulatedGain = 0.10;
bool homes_pay(const RecordedHomes& homes);
// The share of the all-GPU step that the homes save in simulation (0 or less: none).
double simulated_gain(double with_homes_seconds, double all_gpu_seconds);
// The rule itself, for homes of some host bytes and this simulated gain
// (`uvmtrace simulate --homes auto` applies it as the library does).
bool homes_pay(bool any_host_home, double simulated_gain);

// Whether a layout planned for the learned step is worth using: its steady
// step, simulated with the homes best for it, must move out at most
// kLayoutOutShare of the budget (`planned_out_bytes`), and be no more than
// kLayoutMargin longer than the step with blocks placed as they come, as the
// library would run that (`over_dead_seconds`: with its homes where they pay,
// else every home on the GPU). A layout gains by ending the churn of dead
// bytes: with nothing to move its step is the least those homes allow, and
// the simulator came within 5.4-10.3% of it on the GPU (GPT-2 at peak/1.25,
// peak/1.5 and 16G). Blocks placed as they come follow the run's own order of
// allocations and frees, which the simulation of them misses: at 16G they
// moved 1.92-3.77 GB of dead bytes a step on the GPU in four runs of six
// (730.6-932.0 ms; in one both placements had simulated to the same step with
// nothing to move), while the layout moved nothing at 15.7-16.1G and peak/1.5
// in every run that took it under the rule on its moves below (562-584 ms).
// So the layout is taken unless placing as they come simulates clearly
// shorter. Where live bytes must still swap, each block's place is fixed and
// cannot follow the dead bytes left on the GPU, and what the
// simulation gave the layout there was within its error (GPT-2 at peak/1.5
// with too few host homes for its arena: 1029.9 ms simulated in the run with
// 5.4 GiB out a step, 1207.5 measured, as placed as they come). A sixteenth of
// the budget lets through what a step moves at the margin (GPT-2 at 16G
// simulated 483.5 MiB out in the run: tens of ms at the eviction rate), and
// keeps out the layouts that swap a third of it.
inline constexpr double kLayoutOutShare = 1.0 / 16;
inline constexpr double kLayoutMargin = 0.05;
bool layout_pays(double planned_seconds, double over_dead_seconds, uint64_t planned_out_bytes, uint64_t budget_bytes);
// The step seconds the library would run with these searched homes, placed as
// blocks come: the homes' where they pay, else every home on the GPU's.
double effective_step_seconds(const RecordedHomes& homes);
// The same, from the search's figures (`uvmtrace simulate --placement auto` weighs as the library does).
double effective_step_seconds(bool any_host_home, double with_homes_seconds, double all_gpu_seconds);

// Full steps after the learned one that weighing a layout takes: the first
// pays once for the pages of the layout's arena, the others show what the
// steps run at from then on (the simulated step is the median).
inline constexpr size_t kStepsAfterLearned = 4;
struct LengthenedTrace {
    trace::Trace trace;
    std::vector<uint64_t> bounds;
};
// The trace with its last step repeated (repeat_last_iteration_with_blocks)
// until it holds kStepsAfterLearned full steps after its learned one (the
// second); nullopt where it holds them already, or cannot be so lengthened (a
// run learning from itself has recorded one step past the learned one).
std::optional<LengthenedTrace> lengthened_for_layout(const trace::Trace& trace, const std::vector<uint64_t>& bounds);

// `chunk_bytes`: the residency model's chunk, as the run's (UVMP_CHUNK_SIZE).
// `scope`: which allocations may be homed on the host (host_homes.h).
// `prior`: how the trace's kernel timings judge tolerance (UVMP_STREAMING_GBPS).
// `layout`: whether the homes are searched with a layout planned for the step
// too, and chosen with it where layout_pays (Auto) or always (On); both
// searches then run on the trace lengthened_for_layout.
std::optional<RecordedHomes> recorded_homes(const trace::Trace& trace, uint64_t budget_bytes, uint64_t chunk_bytes,
                                            std::string* why_not, const Rates& rates = {},
                                            HomeScope scope = HomeScope::LiveInStep,
                                            const TimingPriorConfig& prior = {},
                                            LayoutChoice layout = LayoutChoice::Off);
// The same, with the trace's iteration_bounds() already at hand.
std::optional<RecordedHomes> recorded_homes(const trace::Trace& trace, const std::vector<uint64_t>& bounds,
                                            uint64_t budget_bytes, uint64_t chunk_bytes, std::string* why_not,
                                            const Rates& rates = {}, HomeScope scope = HomeScope::LiveInStep,
                                            const TimingPriorConfig& prior = {},
                                            LayoutChoice layout = LayoutChoice::Off);

// Whether a run uses these homes: a layout planned for the step, or host
// homes that pay (homes_pay).
bool homes_used(const RecordedHomes& homes);

// The order in which a run learning from itself searches: `search(scope)`
// (an optional result) over the step's own allocations first; where `widen`
// allows and they give nothing `used` says is used, over every allocation
// live in the step, whose result is taken where it is used. The library
// (homes_in_run) and `uvmtrace simulate --homes auto` both search so.
template <class Search, class Used>
auto own_allocations_first(Search&& search, Used&& used, bool widen) -> decltype(search(HomeScope::MadeInStep)) {
    auto own = search(HomeScope::MadeInStep);
    if (!widen || (own && used(*own))) return own;
    auto all = search(HomeScope::LiveInStep);
    return all && used(*all) ? all : own;
}

// The bounds a run learning from itself searches: a recording that holds one
// full step learns from it, with the part of a step it began in (from its
// first launch) as the span before, which the layout's repeat pairs blocks
// across (repeat_last_iteration_with_blocks); others as they are.
std::vector<uint64_t> with_partial_step_before(const std::vector<uint64_t>& bounds);

// The homes of a run learning from itself (the recording's `bounds`): the
// step's own allocations first (HomeScope::MadeInStep); where they give no
// homes worth using and `earlier` allows (UVMP_EARLIER_HOMES), every
// allocation live in the step (LiveInStep), whose earlier ones the run moves
// where they lie. Earlier allocations come second because homing them costs
// what the simulator does not see: GPT-2 small at peak/1.5 on an H100 ran
// 1434 ms a step with 404 of them homed (simulated 704) against 569 with the
// step's own alone (simulated 853), while a decode loop whose weights exceed
// the budget has nothing else to home.
std::optional<RecordedHomes> homes_in_run(const trace::Trace& trace, const std::vector<uint64_t>& bounds,
                                          uint64_t budget_bytes, uint64_t chunk_bytes, std::string* why_not,
                                          const Rates& rates, const TimingPriorConfig& prior, LayoutChoice layout,
                                          bool earlier);

} // namespace uvmp::placement

#include "core/homesearch/recorded_homes.h"

#include "core/placement/host_homes.h"
#include "core/placement/step_model.h"
#include "core/placement/timing_prior.h"
#include "core/model/chunk_schedule.h"
#include "core/homesearch/home_search.h"
#include "core/sim/planned_blocks.h"
#include "core/trace/edit/repeat.h"
#include "core/sim/simulator.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace uvmp::placement {

uint64_t RecordedHomes::host_entries() const {
    const auto host = [](const HomeEntry& e) { return e.home == Home::Host; };
    return static_cast<uint64_t>(std::count_if(prologue.begin(), prologue.end(), host) +
                                 std::count_if(step.begin(), step.end(), host));
}

double simulated_gain(double with_homes_seconds, double all_gpu_seconds) {
    return all_gpu_seconds > 0 ? 1.0 - with_homes_seconds / all_gpu_seconds : 0.0;
}

bool homes_pay(bool any_host_home, double simulated_gain) {
    return any_host_home && simulated_gain >= kMinSimulatedGain;
}

bool homes_pay(const RecordedHomes& homes) {
    return homes_pay(homes.host_entries() > 0, simulated_gain(homes.simulated_step_seconds, homes.all_gpu_step_seconds));
}

std::optional<LengthenedTrace> lengthened_for_layout(const trace::Trace& trace, const std::vector<uint64_t>& bounds) {
    // bounds[1], bounds[2]: the learned step; the full steps after it end at the bounds after those.
    const size_t after = bounds.size() >= 3 ? bounds.size() - 3 : 0;
    if (bounds.size() < 3 || after >= kStepsAfterLearned) return std::nullopt;
    LengthenedTrace out{trace, {}};
    try {
        out.bounds = repeat_last_iteration_with_blocks(out.trace, bounds, static_cast<uint32_t>(kStepsAfterLearned - after));
    } catch (const std::invalid_argument&) {
        return std::nullopt;
    }
    return out;
}

bool layout_pays(double planned_seconds, double over_dead_seconds, uint64_t planned_out_bytes, uint64_t budget_bytes) {
    return static_cast<double>(planned_out_bytes) <= kLayoutOutShare * static_cast<double>(budget_bytes) &&
           planned_seconds <= over_dead_seconds * (1 + kLayoutMargin);
}

double effective_step_seconds(bool any_host_home, double with_homes_seconds, double all_gpu_seconds) {
    return homes_pay(any_host_home, simulated_gain(with_homes_seconds, all_gpu_seconds)) ? with_homes_seconds
                                                                                        : all_gpu_seconds;
}

double effective_step_seconds(const RecordedHomes& homes) {
    return effective_step_seconds(homes.host_entries() > 0, homes.simulated_step_seconds, homes.all_gpu_step_seconds);
}

namespace {

std::vector<RecordedHomes::KeptOnGpu> kept_on_gpu(const trace::Trace& trace, uint64_t step_begin, uint64_t step_end,
                                                  const TimingPrior& prior) {
    const StepModel model = step_model(trace, step_begin, step_end, &prior);
    std::unordered_set<uint32_t> made_before;
    for (const trace::Alloc& a : trace.allocs)
        if (a.launches_before < step_begin) made_before.insert(a.id);
    std::unordered_map<uint32_t, RecordedHomes::KeptOnGpu> by_kernel;
    for (size_t i = 0; i < model.allocations.size(); ++i) {
        const uint32_t kernel = model.kept_by[i];
        if (kernel == StepModel::kNoKernel || made_before.count(model.alloc_ids[i])) continue;
        RecordedHomes::KeptOnGpu& kept = by_kernel[kernel];
        kept.kernel = kernel;
        kept.kernel_gbps = prior.kernel_gbps(kernel);
        ++kept.allocations;
        kept.bytes += model.allocations[i].bytes;
    }
    std::vector<RecordedHomes::KeptOnGpu> out;
    for (const auto& [kernel, kept] : by_kernel) out.push_back(kept);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return a.bytes != b.bytes ? a.bytes > b.bytes : a.kernel < b.kernel;
    });
    return out;
}

// The searched homes as RecordedHomes (with no layout).
RecordedHomes read_back(const trace::Trace& trace, const SearchedHomes& searched, const TimingPrior& prior) {
    const HostHomesOutcome& outcome = searched.homes;
    RecordedHomes out;
    out.choice = outcome.choice;
    out.simulated_step_seconds = searched.result.step_seconds;
    for (const SearchedHomes::Tried& t : searched.tried)
        if (t.taken == 0) out.all_gpu_step_seconds = t.step_seconds;
    out.step_begin = outcome.step_begin;
    out.step_end = outcome.step_end;
    out.kernels_judged = prior.kernels_judged();
    out.kernels_streaming = prior.kernels_streaming();
    out.kernels_tried = prior.kernels_tried();
    out.candidates = outcome.order.size();
    out.kept_on_gpu = kept_on_gpu(trace, out.step_begin, out.step_end, prior);
    out.streaming_gbps = prior.streaming_gbps();
    // Made before the learned step and freed before it began: routed by the
    // sequence like any step's, never moved where it lies.
    std::unordered_set<uint32_t> gone_by_step;
    for (const trace::Free& f : trace.frees)
        if (f.launches_before <= out.step_begin) gone_by_step.insert(f.id);
    // The transform leaves the allocations in their places and marks the
    // host-homed ones as host memory: its homes are read off its trace.
    for (size_t i = 0; i < trace.allocs.size(); ++i) {
        const trace::Alloc& a = trace.allocs[i];
        if (!trace::is_managed(a.kind) || a.launches_before >= out.step_end) continue;
        const Home home = outcome.trace.allocs[i].kind == trace::AllocKind::Host ? Home::Host : Home::Gpu;
        const bool earlier = a.launches_before < out.step_begin;
        (earlier ? out.prologue : out.step).push_back({a.size, home});
        if (earlier && home == Home::Host && !gone_by_step.contains(a.id)) {
            out.earlier_host_ids.push_back(a.id);
            out.earlier_host_bytes += a.size;
        }
    }
    return out;
}

} // namespace

std::optional<RecordedHomes> recorded_homes(const trace::Trace& trace, uint64_t budget_bytes, uint64_t chunk_bytes,
                                            std::string* why_not, const Rates& rates, HomeScope scope,
                                            const TimingPriorConfig& prior, LayoutChoice layout) {
    return recorded_homes(trace, iteration_bounds(trace), budget_bytes, chunk_bytes, why_not, rates, scope, prior,
                          layout);
}

std::optional<RecordedHomes> recorded_homes(const trace::Trace& trace, const std::vector<uint64_t>& bounds,
                                            uint64_t budget_bytes, uint64_t chunk_bytes, std::string* why_not,
                                            const Rates& rates, HomeScope scope, const TimingPriorConfig& prior_config,
                                            LayoutChoice layout) {
    auto refuse = [&](const char* why) {
        if (why_not) *why_not = why;
        return std::nullopt;
    };
    if (bounds.size() < 2) return refuse("the trace holds no full iteration");
    const bool timed = std::any_of(trace.launches.begin(), trace.launches.end(),
                                   [](const trace::Launch& l) { return l.duration_ns != 0; });
    if (!timed) return refuse("the trace was recorded without kernel timing (UVMP_TRACE_TIMING=1)");
    const TimingPrior prior = TimingPrior::from_trace(trace, prior_config);
    if (prior.kernels_judged() == 0) return refuse("no kernel of the trace ran long enough to be judged");

    // How much of the home order to take, by simulating the recorded run with
    // each of a few prefixes under the learned policy, as the library runs it.
    SimConfig config;
    config.budget_bytes = budget_bytes;
    config.chunk_bytes = chunk_bytes;
    config.link = LinkModel(rates); // the link the homes will run on, as their trips are
    config.policy = PolicyKind::Learned;
    if (layout == LayoutChoice::Off) {
        const SearchedHomes searched = search_host_homes(trace, bounds, config, prior, rates, scope);
        return read_back(trace, searched, prior);
    }
    // Weighed on steps after the learned one, which the layout places.
    const std::optional<LengthenedTrace> lengthened = lengthened_for_layout(trace, bounds);
    const trace::Trace& weighed = lengthened ? lengthened->trace : trace;
    const std::vector<uint64_t>& weighed_bounds = lengthened ? lengthened->bounds : bounds;
    const auto searched_homes = [&](BlockPlacement placement) {
        config.placement = placement;
        return search_host_homes(weighed, weighed_bounds, config, prior, rates, scope);
    };
    const SearchedHomes searched = searched_homes(BlockPlacement::OverDead);
    RecordedHomes out = read_back(weighed, searched, prior);

    // The same search with the steps after the learned one laid out by a plan
    // of it: the homes best for a layout may differ from those best without.
    const SearchedHomes by_layout = searched_homes(BlockPlacement::Planned);
    const double over_dead = effective_step_seconds(out);
    const double planned = by_layout.result.step_seconds;
    const uint64_t planned_out = by_layout.result.step_out_bytes;
    out.over_dead_step_seconds = over_dead;
    out.planned_step_seconds = planned;
    out.planned_step_out_bytes = planned_out;
    if (layout == LayoutChoice::Auto && !layout_pays(planned, over_dead, planned_out, budget_bytes)) return out;
    // The plan the simulation of the winner followed, read back by step entry.
    const ChunkSchedule schedule(by_layout.homes.trace, chunk_bytes);
    const sim::LearnedStepLayout plan = sim::learned_step_layout(schedule.events(), weighed_bounds, chunk_bytes);
    if (plan.layout.planned == 0) return out;
    RecordedHomes laid_out = read_back(weighed, by_layout, prior);
    laid_out.over_dead_step_seconds = over_dead;
    laid_out.planned_step_seconds = planned;
    laid_out.planned_step_out_bytes = planned_out;
    std::unordered_map<uint32_t, size_t> entry_of;
    for (const trace::Alloc& a : weighed.allocs)
        if (trace::is_managed(a.kind) && a.launches_before >= laid_out.step_begin &&
            a.launches_before < laid_out.step_end)
            entry_of.emplace(a.id, entry_of.size());
    laid_out.step_offsets.assign(laid_out.step.size(), std::nullopt);
    for (size_t i = 0; i < plan.alloc_ids.size(); ++i) {
        const auto entry = entry_of.find(plan.alloc_ids[i]);
        if (entry != entry_of.end() && entry->second < laid_out.step_offsets.size())
            laid_out.step_offsets[entry->second] = plan.layout.offsets[i];
    }
    laid_out.arena_bytes = plan.layout.arena_bytes;
    return laid_out;
}

std::vector<uint64_t> with_partial_step_before(const std::vector<uint64_t>& bounds) {
    if (bounds.size() != 2 || bounds.front() == 0) return bounds;
    return {0, bounds[0], bounds[1]};
}

bool homes_used(const RecordedHomes& homes) { return homes.planned() || homes_pay(homes); }

std::optional<RecordedHomes> homes_in_run(const trace::Trace& trace, const std::vector<uint64_t>& bounds,
                                          uint64_t budget_bytes, uint64_t chunk_bytes, std::string* why_not,
                                          const Rates& rates, const TimingPriorConfig& prior, LayoutChoice layout,
                                          bool earlier) {
    const std::vector<uint64_t> searched = with_partial_step_before(bounds);
    return own_allocations_first(
        [&](HomeScope scope) {
            return recorded_homes(trace, searched, budget_bytes, chunk_bytes, why_not, rates, scope, prior, layout);
        },
        [](const RecordedHomes& homes) { return homes_used(homes); }, earlier);
}

} // namespace uvmp::placement

#include "core/placement/recorded_homes.h"

#include "core/placement/host_homes.h"
#include "core/placement/step_model.h"
#include "core/placement/timing_prior.h"
#include "core/sim/home_search.h"
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

} // namespace

std::optional<RecordedHomes> recorded_homes(const trace::Trace& trace, uint64_t budget_bytes, uint64_t chunk_bytes,
                                            std::string* why_not, const Rates& rates, HomeScope scope,
                                            const TimingPriorConfig& prior) {
    return recorded_homes(trace, iteration_bounds(trace), budget_bytes, chunk_bytes, why_not, rates, scope, prior);
}

std::optional<RecordedHomes> recorded_homes(const trace::Trace& trace, const std::vector<uint64_t>& bounds,
                                            uint64_t budget_bytes, uint64_t chunk_bytes, std::string* why_not,
                                            const Rates& rates, HomeScope scope, const TimingPriorConfig& prior_config) {
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
    config.policy = PolicyKind::Learned;
    const SearchedHomes searched = search_host_homes(trace, bounds, config, prior, rates, scope);
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
    out.candidates = outcome.order.size();
    out.kept_on_gpu = kept_on_gpu(trace, out.step_begin, out.step_end, prior);
    // The transform leaves the allocations in their places and marks the
    // host-homed ones as host memory: its homes are read off its trace.
    for (size_t i = 0; i < trace.allocs.size(); ++i) {
        const trace::Alloc& a = trace.allocs[i];
        if (!trace::is_managed(a.kind) || a.launches_before >= out.step_end) continue;
        const Home home = outcome.trace.allocs[i].kind == trace::AllocKind::Host ? Home::Host : Home::Gpu;
        (a.launches_before < out.step_begin ? out.prologue : out.step).push_back({a.size, home});
    }
    return out;
}

} // namespace uvmp::placement

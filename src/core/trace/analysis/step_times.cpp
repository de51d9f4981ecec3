#include "core/trace/analysis/step_times.h"

#include "core/util/median.h"

#include <algorithm>

namespace uvmp {

std::vector<StepTime> step_times(const trace::Trace& trace, std::span<const uint64_t> bounds) {
    std::vector<StepTime> steps;
    for (size_t k = 0; k + 1 < bounds.size(); ++k) {
        StepTime step;
        step.launches = {bounds[k], std::min<uint64_t>(bounds[k + 1], trace.launches.size())};
        step.call_ns = step_call_ns(trace, {bounds[k], bounds[k + 1]});
        for (uint64_t i = step.launches.begin; i < step.launches.end; ++i) {
            const uint64_t ns = trace.launches[i].duration_ns;
            if (!ns) continue;
            step.kernel_ns += ns;
            ++step.timed_launches;
        }
        steps.push_back(step);
    }
    return steps;
}

std::optional<StepTimeSummary> summarize_step_times(std::span<const StepTime> steps) {
    StepTimeSummary summary;
    summary.steps = steps.size();
    std::vector<uint64_t> calls, kernels;
    uint64_t call_sum = 0, kernel_sum = 0;
    for (const StepTime& step : steps) {
        const uint64_t launches = step.launches.end - step.launches.begin;
        if (!step.call_ns || launches == 0 || step.timed_launches != launches) continue;
        calls.push_back(step.call_ns);
        kernels.push_back(step.kernel_ns);
        call_sum += step.call_ns;
        kernel_sum += step.kernel_ns;
    }
    if (calls.empty()) return std::nullopt;
    summary.measured = calls.size();
    summary.least_call_ns = *std::min_element(calls.begin(), calls.end());
    summary.most_call_ns = *std::max_element(calls.begin(), calls.end());
    summary.median_call_ns = median(std::move(calls));
    summary.median_kernel_ns = median(std::move(kernels));
    summary.kernel_share = static_cast<double>(kernel_sum) / static_cast<double>(call_sum);
    return summary;
}

} // namespace uvmp

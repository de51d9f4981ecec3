#include "core/trace/analysis/iteration_bounds.h"

#include "core/trace/analysis/iteration_period.h"
#include "core/util/median.h"

#include <algorithm>

namespace uvmp {
namespace {

// Keeps only full iterations: a last one shorter than the one before was cut
// off by the end of the recording, unless a mark after the last launch ends it.
std::vector<uint64_t> close_bounds(std::vector<uint64_t> starts, uint64_t launches) {
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
    const bool closed = !starts.empty() && starts.back() >= launches;
    while (!starts.empty() && starts.back() >= launches) starts.pop_back();
    if (starts.empty()) return {};
    const uint64_t tail = launches - starts.back();
    if (closed || starts.size() == 1 || tail >= starts.back() - starts[starts.size() - 2]) starts.push_back(launches);
    if (starts.size() < 2) return {};
    return starts;
}

std::vector<uint64_t> period_bounds(const std::optional<trace::IterationPeriod>& period, uint64_t launches) {
    if (!period || period->period == 0) return {};
    std::vector<uint64_t> bounds;
    for (uint64_t k = 0; k <= period->repeats; ++k) {
        const uint64_t b = period->first_launch + k * period->period;
        if (b > launches) break;
        bounds.push_back(b);
    }
    return bounds.size() >= 2 ? bounds : std::vector<uint64_t>{};
}

} // namespace

std::vector<uint64_t> iteration_bounds(const trace::Trace& trace,
                                       const std::optional<trace::IterationPeriod>& detected) {
    const uint64_t launches = trace.launches.size();
    if (trace.iterations.size() >= 2) {
        std::vector<uint64_t> starts;
        for (const trace::Iteration& mark : trace.iterations) starts.push_back(mark.launches_before);
        return close_bounds(std::move(starts), launches);
    }
    return period_bounds(detected, launches);
}

std::vector<uint64_t> iteration_bounds(const trace::Trace& trace) {
    // Marks need no detection.
    return iteration_bounds(trace, trace.iterations.size() >= 2 ? std::nullopt : trace::detect_iteration_period(trace));
}

std::vector<uint64_t> recording_iteration_bounds(const trace::Trace& trace) {
    const uint64_t launches = trace.launches.size();
    std::vector<uint64_t> bounds = iteration_bounds(trace);
    if (trace.iterations.size() >= 2) return bounds;
    if (launches < kMinRecordingLaunches || bounds.size() < 3) return {};
    const uint64_t period = bounds[1] - bounds[0];
    // A part of a step that repeats (its layers) leaves more than a period of
    // the recording unexplained at one end at least.
    if (bounds.front() >= period || launches - bounds.back() >= period) return {};
    return bounds;
}

std::optional<LaunchRange> last_full_iteration(std::span<const uint64_t> bounds) {
    if (bounds.size() < 2) return std::nullopt;
    return LaunchRange{bounds[bounds.size() - 2], bounds.back()};
}

uint64_t step_call_ns(const trace::Trace& trace, LaunchRange range) {
    if (range.end >= trace.launches.size() || range.begin >= range.end) return 0;
    const uint64_t begin_ns = trace.launches[range.begin].time_ns, end_ns = trace.launches[range.end].time_ns;
    return end_ns > begin_ns ? end_ns - begin_ns : 0;
}

std::optional<uint64_t> typical_step_call_ns(const trace::Trace& trace, std::span<const uint64_t> bounds) {
    std::vector<uint64_t> timed;
    for (size_t k = 0; k + 1 < bounds.size(); ++k)
        if (const uint64_t ns = step_call_ns(trace, {bounds[k], bounds[k + 1]})) timed.push_back(ns);
    if (timed.empty()) return std::nullopt;
    return median(std::move(timed));
}

} // namespace uvmp

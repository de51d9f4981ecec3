#include "core/iteration_period.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

namespace uvmp::trace {
namespace {

// Share of compared launches that may differ from the launch one period later
// and still count as periodic: tolerates an occasional extra or replaced kernel
// (a logging step, a checkpoint) without accepting an unrelated sequence.
constexpr double kMismatchTolerance = 0.15;

// Kernels in the last launches that serve as anchors: the true period is the
// distance between the last occurrence of an anchor and an earlier one.
constexpr size_t kTailWindow = 64;
constexpr size_t kMaxAnchors = 8;

// Each anchor proposes the distances back to its most recent occurrences; the
// period and a few of its multiples are among them unless the anchor runs very
// often per iteration, and then a rarer anchor proposes it.
constexpr size_t kDistancesPerAnchor = 64;

// A fitting period must explain nearly as much of the sequence as the best
// one: a short run of one kernel (an optimizer looping over layers) repeats
// with period 1 but explains only itself.
constexpr double kCoverageSlack = 0.9;

struct Fit {
    size_t period = 0;
    uint64_t first_launch = 0;
    uint64_t repeats = 0;
    uint64_t coverage = 0; // launches from first_launch to the end
};

// Does the sequence repeat with period p after some warm-up? The warm-up end
// is the start that maximises (matches - mismatches) over the rest, so a
// differing first iteration is cut off while a single noisy spot inside the
// steady state is not.
std::optional<Fit> fit_period(std::span<const uint32_t> ids, size_t p) {
    size_t n = ids.size();
    if (p == 0 || 2 * p > n) return std::nullopt;
    size_t compared = n - p;

    // Cheap rejection first: the most recent launches must mostly match.
    size_t probe = std::min(compared, 4 * p);
    size_t probe_mismatches = 0;
    for (size_t i = n - p - probe; i < n - p; ++i) probe_mismatches += ids[i] != ids[i + p];
    if (2 * probe_mismatches > probe) return std::nullopt;

    long long suffix_score = 0;
    long long best_score = 0;
    size_t best_start = compared;
    size_t mismatches = 0;
    size_t best_mismatches = 0;
    for (size_t i = compared; i-- > 0;) {
        bool match = ids[i] == ids[i + p];
        suffix_score += match ? 1 : -1;
        mismatches += !match;
        if (suffix_score > best_score) {
            best_score = suffix_score;
            best_start = i;
            best_mismatches = mismatches;
        }
    }
    size_t steady_compared = compared - best_start;
    size_t steady_length = n - best_start;
    if (steady_length < 2 * p) return std::nullopt;
    if (static_cast<double>(best_mismatches) > kMismatchTolerance * static_cast<double>(steady_compared)) {
        return std::nullopt;
    }
    return Fit{p, best_start, steady_length / p, steady_length};
}

std::vector<size_t> candidate_periods(std::span<const uint32_t> ids) {
    size_t n = ids.size();
    // Anchors: distinct kernels near the end, the rarest first, since a kernel
    // that runs once per iteration yields the period directly.
    std::unordered_map<uint32_t, size_t> last_position;
    std::vector<uint32_t> anchors;
    for (size_t i = n; i-- > n - std::min(n, kTailWindow);) {
        if (last_position.emplace(ids[i], i).second) anchors.push_back(ids[i]);
    }
    std::unordered_map<uint32_t, std::vector<size_t>> positions;
    for (uint32_t anchor : anchors) positions[anchor];
    for (size_t i = 0; i < n; ++i) {
        auto found = positions.find(ids[i]);
        if (found != positions.end()) found->second.push_back(i);
    }
    std::sort(anchors.begin(), anchors.end(),
              [&](uint32_t a, uint32_t b) { return positions[a].size() < positions[b].size(); });
    if (anchors.size() > kMaxAnchors) anchors.resize(kMaxAnchors);

    std::vector<size_t> candidates;
    for (uint32_t anchor : anchors) {
        const std::vector<size_t>& at = positions[anchor];
        size_t last = at.back();
        size_t taken = 0;
        for (size_t j = at.size() - 1; j-- > 0 && taken++ < kDistancesPerAnchor;) {
            size_t distance = last - at[j];
            if (2 * distance > n) break;
            candidates.push_back(distance);
        }
    }
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    return candidates;
}

std::optional<IterationPeriod> from_marks(const Trace& trace) {
    std::vector<uint64_t> starts;
    for (const Iteration& mark : trace.iterations) starts.push_back(mark.launches_before);
    std::sort(starts.begin(), starts.end());
    // The most common distance between marks is the iteration; an uneven first
    // or last one does not change it.
    std::map<uint64_t, uint64_t> distance_count;
    for (size_t i = 1; i < starts.size(); ++i) {
        if (starts[i] > starts[i - 1]) ++distance_count[starts[i] - starts[i - 1]];
    }
    if (distance_count.empty()) return std::nullopt;
    auto most_common = std::max_element(distance_count.begin(), distance_count.end(),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
    IterationPeriod result;
    result.from_marks = true;
    result.first_launch = starts.front();
    result.period = most_common->first;
    uint64_t launches = trace.launches.size();
    result.repeats = launches > result.first_launch ? (launches - result.first_launch) / result.period : 0;
    result.repeats = std::max<uint64_t>(result.repeats, starts.size() - 1);
    return result;
}

} // namespace

std::optional<IterationPeriod> detect_iteration_period(std::span<const uint32_t> kernel_ids) {
    if (kernel_ids.size() < 2) return std::nullopt;
    std::vector<Fit> fits;
    for (size_t p : candidate_periods(kernel_ids)) {
        if (std::optional<Fit> fit = fit_period(kernel_ids, p)) fits.push_back(*fit);
    }
    if (fits.empty()) return std::nullopt;
    uint64_t best_coverage = 0;
    for (const Fit& fit : fits) best_coverage = std::max(best_coverage, fit.coverage);
    auto good_enough = [&](const Fit& fit) {
        return static_cast<double>(fit.coverage) >= kCoverageSlack * static_cast<double>(best_coverage);
    };
    // Candidates are in increasing order: the first good one is the smallest.
    const Fit* chosen = nullptr;
    for (const Fit& fit : fits) {
        if (good_enough(fit)) {
            chosen = &fit;
            break;
        }
    }
    // A period proposed only by a noisy anchor can be a multiple of the true
    // one: keep the smallest divisor that fits as well.
    for (size_t d = 1; d < chosen->period; ++d) {
        if (chosen->period % d != 0) continue;
        std::optional<Fit> smaller = fit_period(kernel_ids, d);
        if (smaller && good_enough(*smaller)) {
            return IterationPeriod{smaller->first_launch, d, smaller->repeats, false};
        }
    }
    return IterationPeriod{chosen->first_launch, chosen->period, chosen->repeats, false};
}

std::optional<IterationPeriod> detect_iteration_period(const Trace& trace) {
    if (trace.iterations.size() >= 2) {
        if (std::optional<IterationPeriod> marked = from_marks(trace)) return marked;
    }
    std::vector<uint32_t> ids;
    ids.reserve(trace.launches.size());
    for (const Launch& launch : trace.launches) ids.push_back(launch.kernel_id);
    return detect_iteration_period(ids);
}

} // namespace uvmp::trace

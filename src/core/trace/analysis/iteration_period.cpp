#include "core/trace/analysis/iteration_period.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

namespace uvmp::trace {
namespace {

// A launch that differs from the one a period later costs this many matching
// launches: a stretch counts as periodic while at most about a third of it
// differs locally, so an inserted kernel (which misaligns one period's worth
// of comparisons) is bridged when steady stretches surround it.
constexpr long long kMismatchCost = 2;

// Share of compared launches in the chosen stretch that may differ from the
// launch one period later: tolerates an occasional extra or replaced kernel (a
// logging step, a checkpoint) without accepting an unrelated sequence.
constexpr double kMismatchTolerance = 0.15;

// Kernels that propose candidate periods: the rarest ones of the whole trace
// (a kernel that runs once per step proposes the step directly), and the
// rarest of the last launches, in case the trace is all steady state.
constexpr size_t kRareAnchors = 24;
constexpr size_t kTailWindow = 64;
constexpr size_t kTailAnchors = 8;

// Each anchor proposes the distances from an occurrence to its next few, for
// at most this many occurrences (the latest, where the steady state is), and
// the distances from its last occurrence back to earlier ones: the step is
// among those unless the anchor runs very often per step, and then a rarer
// anchor proposes it.
constexpr size_t kOccurrencesPerAnchor = 256;
constexpr size_t kNextOccurrences = 4;
constexpr size_t kDistancesFromLast = 64;

// A stretch explained by chance (the same kernel twice in a row in unrelated
// launches) is not a period: it needs this many launches equal to the one a
// period later.
constexpr size_t kMinMatches = 8;

// Fitting a period costs one pass over the sequence; fit only the
// best-supported candidates when there are many, so that long traces stay fast.
constexpr uint64_t kComparisonBudget = 64'000'000;
constexpr size_t kMinCandidates = 64;

// Periods whose coverage is within this share of the best count as equally
// good; the smallest of them wins (a multiple of the step covers a little less
// than the step itself, never more).
constexpr double kCoverageSlack = 0.03;

struct Fit {
    size_t period = 0;
    uint64_t first_launch = 0;
    uint64_t repeats = 0;
    uint64_t covered = 0; // launches in the full periods found: repeats * period
};

// The stretch of the sequence that repeats with period p best: the run of
// comparisons ids[i] == ids[i + p] with the highest score (a match +1, a
// mismatch -kMismatchCost). A differing first step and a tail that does not
// repeat fall outside it; a noisy spot inside the steady state does not.
std::optional<Fit> fit_period(std::span<const uint32_t> ids, size_t p) {
    const size_t n = ids.size();
    if (p == 0 || 2 * p > n) return std::nullopt;
    const size_t compared = n - p;

    long long score = 0;
    size_t start = 0;
    size_t mismatches = 0;
    long long best_score = 0;
    size_t best_start = 0, best_end = 0, best_mismatches = 0;
    for (size_t i = 0; i < compared; ++i) {
        if (score <= 0) {
            score = 0;
            start = i;
            mismatches = 0;
        }
        if (ids[i] == ids[i + p]) {
            ++score;
        } else {
            score -= kMismatchCost;
            ++mismatches;
        }
        if (score > best_score) {
            best_score = score;
            best_start = start;
            best_end = i + 1;
            best_mismatches = mismatches;
        }
    }
    if (best_end - best_start - best_mismatches < kMinMatches) return std::nullopt;
    // Comparisons [best_start, best_end) explain launches [best_start, best_end + p).
    const uint64_t explained = best_end - best_start + p;
    const uint64_t repeats = explained / p;
    if (repeats < 2) return std::nullopt;
    const double compared_in_stretch = static_cast<double>(best_end - best_start);
    if (static_cast<double>(best_mismatches) > kMismatchTolerance * compared_in_stretch) return std::nullopt;
    return Fit{p, best_start, repeats, repeats * p};
}

// Candidate periods with the number of anchor distances that proposed each.
std::vector<std::pair<size_t, size_t>> candidate_periods(std::span<const uint32_t> ids) {
    const size_t n = ids.size();
    std::unordered_map<uint32_t, std::vector<size_t>> positions;
    for (size_t i = 0; i < n; ++i) positions[ids[i]].push_back(i);

    std::vector<uint32_t> kernels;
    kernels.reserve(positions.size());
    for (const auto& [kernel, at] : positions)
        if (at.size() >= 2) kernels.push_back(kernel);
    // Rarest first; among equally rare ones the latest, as the steady state is
    // usually at the end; the kernel id settles ties so the choice is deterministic.
    auto rarer = [&](uint32_t a, uint32_t b) {
        const std::vector<size_t>& pa = positions[a];
        const std::vector<size_t>& pb = positions[b];
        if (pa.size() != pb.size()) return pa.size() < pb.size();
        if (pa.back() != pb.back()) return pa.back() > pb.back();
        return a < b;
    };
    std::sort(kernels.begin(), kernels.end(), rarer);
    std::vector<uint32_t> anchors(kernels.begin(), kernels.begin() + std::min(kernels.size(), kRareAnchors));

    std::vector<uint32_t> tail;
    for (size_t i = n; i-- > n - std::min(n, kTailWindow);)
        if (positions[ids[i]].size() >= 2) tail.push_back(ids[i]);
    std::sort(tail.begin(), tail.end(), rarer);
    tail.erase(std::unique(tail.begin(), tail.end()), tail.end());
    for (size_t t = 0; t < std::min(tail.size(), kTailAnchors); ++t)
        if (std::find(anchors.begin(), anchors.end(), tail[t]) == anchors.end()) anchors.push_back(tail[t]);

    std::unordered_map<size_t, size_t> votes;
    for (uint32_t anchor : anchors) {
        const std::vector<size_t>& at = positions[anchor];
        const size_t first = at.size() > kOccurrencesPerAnchor ? at.size() - kOccurrencesPerAnchor : 0;
        for (size_t i = first; i + 1 < at.size(); ++i) {
            for (size_t j = i + 1; j < at.size() && j <= i + kNextOccurrences; ++j) {
                const size_t distance = at[j] - at[i];
                if (2 * distance > n) break;
                ++votes[distance];
            }
        }
        const size_t last = at.back();
        for (size_t j = at.size() - 1, taken = 0; j-- > 0 && taken++ < kDistancesFromLast;) {
            const size_t distance = last - at[j];
            if (2 * distance > n) break;
            ++votes[distance];
        }
    }
    std::vector<std::pair<size_t, size_t>> candidates(votes.begin(), votes.end());
    std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
        if (a.second != b.second) return a.second > b.second;
        return a.first < b.first;
    });
    const size_t affordable = std::max<size_t>(kMinCandidates, kComparisonBudget / std::max<size_t>(n, 1));
    if (candidates.size() > affordable) candidates.resize(affordable);
    return candidates;
}

// Does period d explain the launches that `fit` explains? Stops at the first
// sign that it does not, so trying the divisors of a period stays cheap.
bool explains_as_well(std::span<const uint32_t> ids, size_t d, const Fit& fit) {
    const uint64_t end = fit.first_launch + fit.covered;
    if (end < d + fit.first_launch) return false;
    const uint64_t compared = end - d - fit.first_launch;
    const auto allowed = static_cast<uint64_t>(kMismatchTolerance * static_cast<double>(compared));
    uint64_t mismatches = 0;
    for (uint64_t i = fit.first_launch; i + d < end; ++i) {
        mismatches += ids[i] != ids[i + d];
        if (mismatches > allowed) return false;
    }
    return true;
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
    for (const auto& [period, votes] : candidate_periods(kernel_ids)) {
        if (std::optional<Fit> fit = fit_period(kernel_ids, period)) fits.push_back(*fit);
    }
    if (fits.empty()) return std::nullopt;

    uint64_t best_covered = 0;
    for (const Fit& fit : fits) best_covered = std::max(best_covered, fit.covered);
    const auto near_best = static_cast<uint64_t>((1.0 - kCoverageSlack) * static_cast<double>(best_covered));
    const Fit* chosen = nullptr;
    for (const Fit& fit : fits) {
        if (fit.covered < near_best) continue;
        if (!chosen || fit.period < chosen->period || (fit.period == chosen->period && fit.covered > chosen->covered))
            chosen = &fit;
    }

    // The anchors may only have proposed a multiple of the true period (every
    // anchor runs several times per step): keep the smallest divisor that
    // explains the same launches.
    for (size_t d = 1; d < chosen->period; ++d) {
        if (chosen->period % d != 0 || !explains_as_well(kernel_ids, d, *chosen)) continue;
        if (std::optional<Fit> smaller = fit_period(kernel_ids, d))
            return IterationPeriod{smaller->first_launch, d, smaller->repeats, false};
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

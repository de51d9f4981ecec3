#include "core/homesearch/home_search.h"

#include "core/model/chunk_schedule.h"
#include "core/util/parallel_map.h"

#include <algorithm>
#include <optional>

namespace uvmp {
namespace {

// Prefixes of the home order simulated one by one, each once, the result kept
// for the one `keep` prefers.
class PrefixTrials {
public:
    PrefixTrials(const trace::Trace& trace, const std::vector<uint64_t>& bounds, const SimConfig& config,
                 const placement::ToleranceSource& tolerance, const placement::Rates& rates,
                 placement::HomeScope scope)
        : trace_(trace), bounds_(bounds), config_(config), tolerance_(tolerance), rates_(rates), scope_(scope),
          // The order alone, with nothing taken: what the prefixes are cut from.
          none_(placement::with_host_homes(trace, bounds, config.budget_bytes, tolerance, rates, size_t{0}, scope)) {}

    const std::vector<placement::HomeOrder::Step>& order() const { return none_.order; }

    // Simulates the order's first `taken` of each of `takens` not simulated
    // before, side by side; each result becomes the kept one where `keep` says
    // so of its step seconds (the first tried always is), in the order given.
    template <typename Keep>
    void run(const std::vector<size_t>& takens, Keep keep) {
        std::vector<size_t> todo;
        for (size_t taken : takens) {
            taken = std::min(taken, order().size());
            if (std::find(done_.begin(), done_.end(), taken) != done_.end()) continue;
            done_.push_back(taken);
            todo.push_back(taken);
        }
        std::vector<Trial> trials = parallel_map<Trial>(todo.size(), [&](size_t i) { return simulate_prefix(todo[i]); });
        for (Trial& trial : trials) {
            kept_.tried.push_back({trial.taken, trial.homes.choice.host_bytes, trial.result.step_seconds});
            if (!kept_seconds_ || keep(trial.result.step_seconds, *kept_seconds_)) {
                kept_seconds_ = trial.result.step_seconds;
                kept_.homes = std::move(trial.homes);
                kept_.result = std::move(trial.result);
            }
        }
    }

    SearchedHomes take() { return std::move(kept_); }
    uint64_t kept_host_bytes() const { return kept_.homes.choice.host_bytes; }

private:
    struct Trial {
        size_t taken = 0;
        placement::HostHomesOutcome homes;
        SimResult result;
    };

    Trial simulate_prefix(size_t taken) const {
        Trial trial{taken, taken == 0 ? none_
                                      : placement::with_host_homes(trace_, bounds_, config_.budget_bytes, tolerance_,
                                                                   rates_, taken, scope_),
                    {}};
        const ChunkSchedule schedule(trial.homes.trace, config_.chunk_bytes);
        trial.result = simulate(trial.homes.trace, schedule, bounds_, config_);
        return trial;
    }

    const trace::Trace& trace_;
    const std::vector<uint64_t>& bounds_;
    const SimConfig& config_;
    const placement::ToleranceSource& tolerance_;
    const placement::Rates& rates_;
    placement::HomeScope scope_;
    const placement::HostHomesOutcome none_;
    std::vector<size_t> done_;
    SearchedHomes kept_;
    std::optional<double> kept_seconds_;
};

} // namespace

SearchedHomes search_host_homes(const trace::Trace& trace, const std::vector<uint64_t>& bounds,
                                const SimConfig& config, const placement::ToleranceSource& tolerance,
                                const placement::Rates& rates, placement::HomeScope scope) {
    PrefixTrials trials(trace, bounds, config, tolerance, rates, scope);
    const std::vector<placement::HomeOrder::Step>& order = trials.order();
    const uint64_t total = order.empty() ? 0 : order.back().host_bytes;
    // The shortest prefix holding at least `bytes` of host homes.
    const auto prefix_of = [&](uint64_t bytes) -> size_t {
        const auto it = std::lower_bound(order.begin(), order.end(), bytes,
                                         [](const placement::HomeOrder::Step& s, uint64_t b) { return s.host_bytes < b; });
        return bytes == 0 ? 0 : static_cast<size_t>(it - order.begin()) + 1;
    };
    const auto fastest = [](double seconds, double kept) { return seconds < kept; };
    constexpr uint64_t kParts = 8;
    std::vector<size_t> parts;
    for (uint64_t part = 0; part <= kParts; ++part) parts.push_back(prefix_of(total * part / kParts));
    trials.run(parts, fastest);
    // Halfway to either neighbour of the best.
    const uint64_t best_bytes = trials.kept_host_bytes();
    const uint64_t half = total / (2 * kParts);
    trials.run({prefix_of(best_bytes > half ? best_bytes - half : 0), prefix_of(std::min(total, best_bytes + half))},
               fastest);
    return trials.take();
}

SearchedHomes host_homes_nearest(const trace::Trace& trace, const std::vector<uint64_t>& bounds,
                                 const SimConfig& config, const placement::ToleranceSource& tolerance,
                                 const placement::Rates& rates, placement::HomeScope scope, uint64_t host_bytes) {
    PrefixTrials trials(trace, bounds, config, tolerance, rates, scope);
    const std::vector<placement::HomeOrder::Step>& order = trials.order();
    size_t taken = 0;
    uint64_t nearest = host_bytes;
    for (size_t k = 0; k < order.size(); ++k) {
        const uint64_t bytes = order[k].host_bytes;
        const uint64_t distance = bytes > host_bytes ? bytes - host_bytes : host_bytes - bytes;
        if (distance < nearest) nearest = distance, taken = k + 1;
    }
    const auto latest = [](double, double) { return true; };
    trials.run({0, taken}, latest);
    return trials.take();
}

} // namespace uvmp

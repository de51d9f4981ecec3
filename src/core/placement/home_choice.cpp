#include "core/placement/home_choice.h"

#include <algorithm>
#include <stdexcept>

namespace uvmp::placement {
namespace {

// Live GPU-homed bytes per launch: a range add and a maximum with where it is,
// both in O(log launches). A step of a thousand launches and allocations asks
// for each candidate at each round.
class LiveBytesTree {
public:
    explicit LiveBytesTree(uint32_t launches)
        : size_(std::max<uint32_t>(launches, 1)), max_(4 * size_t{size_}, 0), add_(4 * size_t{size_}, 0) {}

    void add(uint32_t first, uint32_t last, int64_t bytes) { add(1, 0, size_ - 1, first, last, bytes); }
    int64_t max() const { return max_[1]; }
    // A launch where the maximum is reached.
    uint32_t argmax() const {
        size_t node = 1;
        uint32_t lo = 0, hi = size_ - 1;
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo) / 2;
            // The child holding the maximum is the one whose own maximum, with
            // this node's add, gives this node's.
            if (max_[2 * node] == max_[node] - add_[node]) {
                node = 2 * node;
                hi = mid;
            } else {
                node = 2 * node + 1;
                lo = mid + 1;
            }
        }
        return lo;
    }

private:
    // max_[n] is the maximum over n's interval including every add_ at n and below.
    void add(size_t node, uint32_t lo, uint32_t hi, uint32_t first, uint32_t last, int64_t bytes) {
        if (last < lo || hi < first) return;
        if (first <= lo && hi <= last) {
            add_[node] += bytes;
            max_[node] += bytes;
            return;
        }
        const uint32_t mid = lo + (hi - lo) / 2;
        add(2 * node, lo, mid, first, last, bytes);
        add(2 * node + 1, mid + 1, hi, first, last, bytes);
        max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + add_[node];
    }

    uint32_t size_;
    std::vector<int64_t> max_;
    std::vector<int64_t> add_;
};

double seconds(double bytes, double gbps) { return gbps > 0 ? bytes / (gbps * 1e9) : 0.0; }

uint64_t excess(int64_t peak, uint64_t budget) {
    return peak > 0 && static_cast<uint64_t>(peak) > budget ? static_cast<uint64_t>(peak) - budget : 0;
}

} // namespace

double remote_seconds(const StepAllocation& allocation, const Rates& rates) {
    const double bytes = static_cast<double>(allocation.bytes);
    const uint32_t reads = allocation.uses > 1 ? allocation.uses - 1 : 0;
    return seconds(bytes, rates.remote_write_gbps) + reads * seconds(bytes, rates.remote_read_gbps);
}

HomeOrder host_home_order(std::span<const StepAllocation> allocations, uint32_t launches, uint64_t budget_bytes,
                          const Rates& rates) {
    LiveBytesTree live(launches);
    for (const StepAllocation& a : allocations) {
        if (a.first_launch > a.last_launch || a.last_launch >= launches)
            throw std::invalid_argument("choose_homes: an allocation's launches lie outside the step");
        live.add(a.first_launch, a.last_launch, static_cast<int64_t>(a.bytes));
    }
    HomeOrder order;
    order.all_gpu_swapped_bytes = excess(live.max(), budget_bytes);
    uint64_t swapped_now = order.all_gpu_swapped_bytes;
    double remote_total = 0;
    uint64_t host_bytes = 0;

    std::vector<size_t> candidates;
    for (size_t i = 0; i < allocations.size(); ++i)
        if (allocations[i].remote_tolerant && allocations[i].bytes > 0) candidates.push_back(i);

    while (swapped_now > 0 && !candidates.empty()) {
        // Only an allocation live at a launch of the peak can lower the peak.
        const uint32_t peak_launch = live.argmax();
        size_t best = candidates.size();
        double best_yield = 0;
        uint64_t best_swapped = swapped_now;
        for (size_t k = 0; k < candidates.size(); ++k) {
            const StepAllocation& a = allocations[candidates[k]];
            if (peak_launch < a.first_launch || a.last_launch < peak_launch) continue;
            live.add(a.first_launch, a.last_launch, -static_cast<int64_t>(a.bytes));
            const uint64_t swapped = excess(live.max(), budget_bytes);
            live.add(a.first_launch, a.last_launch, static_cast<int64_t>(a.bytes));
            if (swapped >= swapped_now) continue;
            // Bytes of swap saved a second of trips: an allocation read once
            // comes before one read many times.
            const double yield = static_cast<double>(swapped_now - swapped) / std::max(remote_seconds(a, rates), 1e-12);
            if (yield > best_yield) {
                best_yield = yield;
                best = k;
                best_swapped = swapped;
            }
        }
        if (best == candidates.size()) break;
        const size_t index = candidates[best];
        const StepAllocation& a = allocations[index];
        live.add(a.first_launch, a.last_launch, -static_cast<int64_t>(a.bytes));
        swapped_now = best_swapped;
        remote_total += remote_seconds(a, rates);
        host_bytes += a.bytes;
        order.steps.push_back({index, swapped_now, remote_total, host_bytes});
        candidates[best] = candidates.back();
        candidates.pop_back();
    }
    return order;
}

double estimated_step_seconds(double compute_seconds, double remote_seconds, uint64_t swapped_bytes,
                              const Rates& rates) {
    const double swapped = static_cast<double>(swapped_bytes);
    return std::max(compute_seconds + remote_seconds,
                    seconds(swapped, rates.evict_gbps) + seconds(swapped, rates.fetch_gbps));
}

HomeChoice choice_of(std::span<const StepAllocation> allocations, const HomeOrder& order, size_t taken,
                     const Rates& rates, double compute_seconds) {
    if (taken > order.steps.size()) throw std::invalid_argument("choice_of: more homes taken than the order has");
    HomeChoice choice;
    choice.homes.assign(allocations.size(), Home::Gpu);
    for (size_t k = 0; k < taken; ++k) choice.homes[order.steps[k].index] = Home::Host;
    choice.taken = taken;
    choice.all_gpu_swapped_bytes = order.all_gpu_swapped_bytes;
    choice.all_gpu_seconds = estimated_step_seconds(compute_seconds, 0, order.all_gpu_swapped_bytes, rates);
    const HomeOrder::Step* last = taken > 0 ? &order.steps[taken - 1] : nullptr;
    choice.swapped_bytes = last ? last->swapped_bytes : order.all_gpu_swapped_bytes;
    choice.host_bytes = last ? last->host_bytes : 0;
    choice.estimated_seconds =
        estimated_step_seconds(compute_seconds, last ? last->remote_seconds : 0, choice.swapped_bytes, rates);
    return choice;
}

size_t least_estimate_prefix(const HomeOrder& order, const Rates& rates, double compute_seconds) {
    size_t best = 0;
    double best_seconds = estimated_step_seconds(compute_seconds, 0, order.all_gpu_swapped_bytes, rates);
    for (size_t k = 0; k < order.steps.size(); ++k) {
        const HomeOrder::Step& step = order.steps[k];
        const double s = estimated_step_seconds(compute_seconds, step.remote_seconds, step.swapped_bytes, rates);
        if (s < best_seconds) {
            best_seconds = s;
            best = k + 1;
        }
    }
    return best;
}

HomeChoice choose_homes(std::span<const StepAllocation> allocations, uint32_t launches, uint64_t budget_bytes,
                        const Rates& rates, double compute_seconds) {
    const HomeOrder order = host_home_order(allocations, launches, budget_bytes, rates);
    return choice_of(allocations, order, least_estimate_prefix(order, rates, compute_seconds), rates,
                     compute_seconds);
}

StepHomes::StepHomes(std::span<const StepAllocation> learned, std::span<const Home> homes) {
    if (learned.size() != homes.size()) throw std::invalid_argument("StepHomes: one home per allocation");
    sizes_.reserve(learned.size());
    for (const StepAllocation& a : learned) sizes_.push_back(a.bytes);
    homes_.assign(homes.begin(), homes.end());
}

Home StepHomes::home_of(uint32_t ordinal_in_step, uint64_t bytes) const {
    if (ordinal_in_step >= sizes_.size() || sizes_[ordinal_in_step] != bytes) return Home::Gpu;
    return homes_[ordinal_in_step];
}

} // namespace uvmp::placement

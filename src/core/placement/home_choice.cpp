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

HomeChoice choose_homes(std::span<const StepAllocation> allocations, uint32_t launches, uint64_t budget_bytes,
                        const Rates& rates) {
    LiveBytesTree live(launches);
    for (const StepAllocation& a : allocations) {
        if (a.first_launch > a.last_launch || a.last_launch >= launches)
            throw std::invalid_argument("choose_homes: an allocation's launches lie outside the step");
        live.add(a.first_launch, a.last_launch, static_cast<int64_t>(a.bytes));
    }
    auto swap_seconds = [&](uint64_t swapped) {
        return seconds(static_cast<double>(swapped), rates.evict_gbps) + seconds(static_cast<double>(swapped), rates.fetch_gbps);
    };

    HomeChoice choice;
    choice.homes.assign(allocations.size(), Home::Gpu);
    choice.all_gpu_swapped_bytes = excess(live.max(), budget_bytes);
    choice.all_gpu_seconds = swap_seconds(choice.all_gpu_swapped_bytes);
    choice.swapped_bytes = choice.all_gpu_swapped_bytes;
    double remote_total = 0;

    std::vector<size_t> candidates;
    for (size_t i = 0; i < allocations.size(); ++i)
        if (allocations[i].remote_tolerant && allocations[i].bytes > 0) candidates.push_back(i);

    while (choice.swapped_bytes > 0 && !candidates.empty()) {
        // Only an allocation live at a launch of the peak can lower the peak.
        const uint32_t peak_launch = live.argmax();
        const double current = swap_seconds(choice.swapped_bytes);
        size_t best = candidates.size();
        double best_gain = 0;
        uint64_t best_swapped = choice.swapped_bytes;
        for (size_t k = 0; k < candidates.size(); ++k) {
            const StepAllocation& a = allocations[candidates[k]];
            if (peak_launch < a.first_launch || a.last_launch < peak_launch) continue;
            live.add(a.first_launch, a.last_launch, -static_cast<int64_t>(a.bytes));
            const uint64_t swapped = excess(live.max(), budget_bytes);
            live.add(a.first_launch, a.last_launch, static_cast<int64_t>(a.bytes));
            const double gain = current - swap_seconds(swapped) - remote_seconds(a, rates);
            if (gain > best_gain) {
                best_gain = gain;
                best = k;
                best_swapped = swapped;
            }
        }
        if (best == candidates.size()) break;
        const size_t index = candidates[best];
        const StepAllocation& a = allocations[index];
        live.add(a.first_launch, a.last_launch, -static_cast<int64_t>(a.bytes));
        choice.homes[index] = Home::Host;
        choice.host_bytes += a.bytes;
        choice.swapped_bytes = best_swapped;
        remote_total += remote_seconds(a, rates);
        candidates[best] = candidates.back();
        candidates.pop_back();
    }
    choice.estimated_seconds = remote_total + swap_seconds(choice.swapped_bytes);
    return choice;
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

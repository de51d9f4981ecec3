#include "core/placement/host_homes.h"

#include "core/placement/host_traffic.h"
#include "core/placement/step_model.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace uvmp::placement {
namespace {

// The managed allocations made within launches [begin, end), in the order made.
std::vector<const trace::Alloc*> made_within(const trace::Trace& trace, uint64_t begin, uint64_t end) {
    std::vector<const trace::Alloc*> made;
    for (const trace::Alloc& a : trace.allocs)
        if (trace::is_managed(a.kind) && a.launches_before >= begin && a.launches_before < end) made.push_back(&a);
    return made;
}

// Follows a step's allocations along the learned sequence: an allocation of
// the size expected next takes its home; one of another size takes the home of
// the next entry of its size a few places ahead (a step that makes an
// allocation fewer), else it stands in for the expected one and takes the GPU.
// Erring towards the GPU is the cheap mistake: a GEMM's operand put on the
// host by a misaligned match would run many times slower.
class SequenceFollower {
public:
    explicit SequenceFollower(const std::vector<std::pair<uint64_t, Home>>& sequence) : sequence_(sequence) {}
    Home next(uint64_t bytes) {
        constexpr size_t kLookAhead = 8;
        for (size_t q = position_; q < sequence_.size() && q < position_ + kLookAhead; ++q) {
            if (sequence_[q].first != bytes) continue;
            position_ = q + 1;
            return sequence_[q].second;
        }
        ++position_;
        return Home::Gpu;
    }

private:
    const std::vector<std::pair<uint64_t, Home>>& sequence_;
    size_t position_ = 0;
};

} // namespace

HostHomesOutcome with_host_homes(const trace::Trace& trace, std::span<const uint64_t> bounds, uint64_t budget_bytes,
                                 const ToleranceSource& tolerance, const Rates& rates,
                                 std::optional<size_t> taken, HomeScope scope) {
    if (bounds.size() < 2) throw std::invalid_argument("host homes need at least one full iteration of the trace");
    HostHomesOutcome out;
    const size_t learned = bounds.size() >= 3 ? 1 : 0;
    out.step_begin = bounds[learned];
    out.step_end = bounds[learned + 1];

    StepModel model = step_model(trace, out.step_begin, out.step_end, &tolerance);
    if (scope == HomeScope::MadeInStep) {
        std::unordered_set<uint32_t> made_before;
        for (const trace::Alloc& a : trace.allocs)
            if (a.launches_before < out.step_begin) made_before.insert(a.id);
        for (size_t i = 0; i < model.alloc_ids.size(); ++i)
            if (made_before.count(model.alloc_ids[i])) model.allocations[i].remote_tolerant = false;
    }
    const HomeOrder order = host_home_order(model.allocations, model.launches, budget_bytes, rates);
    out.order = order.steps;
    const size_t homed = taken ? std::min(*taken, order.steps.size())
                               : least_estimate_prefix(order, rates, model.compute_seconds);
    out.choice = choice_of(model.allocations, order, homed, rates, model.compute_seconds);
    std::unordered_map<uint32_t, Home> home_by_id;
    for (size_t i = 0; i < model.alloc_ids.size(); ++i) home_by_id.emplace(model.alloc_ids[i], out.choice.homes[i]);

    std::unordered_set<uint32_t> host_ids;
    // Made before the learned step and live in it: homed by identity, and no
    // part of the sequence of the step that made them (the weights made in the
    // first step would shift every position after them).
    std::unordered_set<uint32_t> by_identity;
    for (const trace::Alloc& a : trace.allocs) {
        const auto home = home_by_id.find(a.id);
        if (a.launches_before >= out.step_begin || home == home_by_id.end()) continue;
        by_identity.insert(a.id);
        if (home->second == Home::Host) host_ids.insert(a.id);
    }
    // The learned step's own allocations, by order and size, onto every step.
    std::vector<std::pair<uint64_t, Home>> sequence;
    for (const trace::Alloc* a : made_within(trace, out.step_begin, out.step_end)) {
        const auto home = home_by_id.find(a->id);
        sequence.emplace_back(a->size, home == home_by_id.end() ? Home::Gpu : home->second);
    }
    // One pass over the allocations, in the order made: each step follows the
    // sequence from its start.
    size_t step = 0;
    std::optional<SequenceFollower> follower;
    for (const trace::Alloc& a : trace.allocs) {
        if (!trace::is_managed(a.kind) || a.launches_before < bounds.front() || a.launches_before >= bounds.back() ||
            by_identity.count(a.id))
            continue;
        while (a.launches_before >= bounds[step + 1]) {
            ++step;
            follower.reset();
        }
        if (!follower) follower.emplace(sequence);
        if (follower->next(a.size) == Home::Host) host_ids.insert(a.id);
    }

    out.trace = trace;
    HostTraffic traffic;
    for (trace::Alloc& a : out.trace.allocs) {
        if (!host_ids.count(a.id)) continue;
        a.kind = trace::AllocKind::Host;
        traffic.add(a.id, a.size);
    }
    out.host_allocations = traffic.size();

    // Each launch's trips: the first launch of a step naming an allocation
    // writes it, later ones read it.
    size_t next_bound = 0;
    std::vector<HostTrip> trips;
    for (uint64_t i = 0; i < out.trace.launches.size(); ++i) {
        for (; next_bound < bounds.size() && bounds[next_bound] <= i; ++next_bound) traffic.new_step();
        trace::Launch& launch = out.trace.launches[i];
        if (!out.trace.has_accesses_of(launch)) continue;
        const HostTrafficBytes named = traffic.launch(out.trace.accesses_of(launch), trips);
        double trip_seconds = 0;
        for (const HostTrip& trip : trips) {
            const double gbps = trip.writes ? rates.remote_write_gbps : rates.remote_read_gbps;
            trip_seconds += gbps > 0 ? static_cast<double>(trip.bytes) / (gbps * 1e9) : 0.0;
        }
        launch.duration_ns += static_cast<uint64_t>(trip_seconds * 1e9);
        if (i < out.step_begin || i >= out.step_end) continue;
        out.step_remote_write_bytes += named.written;
        out.step_remote_read_bytes += named.read;
        out.step_remote_seconds += trip_seconds;
    }
    return out;
}

} // namespace uvmp::placement

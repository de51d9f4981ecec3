#include "core/sim/simulator.h"

#include "core/model/reuse_in_place.h"
#include "core/sim/planned_blocks.h"
#include "core/sim/replaced_blocks.h"
#include "core/util/size_parse.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <ctime>
#include <memory>
#include <optional>
#include <stdexcept>

namespace uvmp {
namespace {

std::unique_ptr<Policy> make_policy(const SimConfig& config, const ChunkSchedule& schedule, const trace::Trace& trace) {
    LookaheadConfig lookahead = config.lookahead;
    // As online, where every block is the pool's; a trace made before the pool has none.
    lookahead.blocks_reuse_in_place = std::any_of(trace.allocs.begin(), trace.allocs.end(), [](const trace::Alloc& a) {
        return a.kind == trace::AllocKind::Pooled;
    });
    switch (config.policy) {
    case PolicyKind::DemandLru: return make_demand_lru_policy();
    case PolicyKind::Belady: return make_belady_policy(schedule, lookahead);
    case PolicyKind::Learned: return make_learned_policy(config.predictor, lookahead);
    }
    throw std::invalid_argument("unknown policy");
}

double thread_cpu_seconds() {
    timespec now{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0.0;
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

double seconds_for(uint64_t bytes, double gbps) { return gbps > 0 ? static_cast<double>(bytes) / (gbps * 1e9) : 0.0; }

// A link curve's rate by piece size, remembered: the interpolation takes
// logarithms, and a replay asks for the same few piece sizes millions of times.
class RateMemo {
public:
    explicit RateMemo(const std::vector<LinkModel::Point>& curve) : curve_(curve) {}
    double operator()(uint64_t piece_bytes) {
        // Sizes are mostly multiples of a chunk: a multiplicative hash spreads them.
        Slot& slot = slots_[(piece_bytes * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits)];
        if (slot.piece_bytes != piece_bytes) slot = {piece_bytes, LinkModel::rate(curve_, piece_bytes)};
        return slot.gbps;
    }

private:
    static constexpr unsigned kSlotBits = 6;
    struct Slot {
        uint64_t piece_bytes = UINT64_MAX;
        double gbps = 0;
    };
    const std::vector<LinkModel::Point>& curve_;
    std::array<Slot, size_t{1} << kSlotBits> slots_{};
};

// The largest of the range's times (all finite, not negative). Four running
// maxima instead of one: the compares do not wait on each other.
double latest_of(const LargeVector<double>& times, ChunkRange range) {
    double m0 = 0, m1 = 0, m2 = 0, m3 = 0;
    size_t c = range.first;
    const size_t end = size_t{range.last} + 1;
    for (; c + 4 <= end; c += 4) {
        m0 = std::max(m0, times[c]);
        m1 = std::max(m1, times[c + 1]);
        m2 = std::max(m2, times[c + 2]);
        m3 = std::max(m3, times[c + 3]);
    }
    for (; c < end; ++c) m0 = std::max(m0, times[c]);
    return std::max(std::max(m0, m1), std::max(m2, m3));
}

// Whether the span shares a chunk with any of the ranges.
bool overlaps(std::span<const ChunkRange> ranges, const ChunkSpan& span) {
    const ChunkId last = span.first + span.count - 1;
    for (const ChunkRange& r : ranges)
        if (r.first <= last && span.first <= r.last) return true;
    return false;
}

double median(std::vector<double> values) {
    if (values.empty()) return 0.0;
    const size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
    double m = values[mid];
    if (values.size() % 2 == 0) m = (m + *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
    return m;
}

uint64_t pool_slab_bytes(const trace::Trace& trace, const SimConfig& config) {
    if (config.pool_slab_bytes) return config.pool_slab_bytes;
    const auto recorded = trace.header.options.find("pool_slab_size");
    if (recorded != trace.header.options.end())
        if (const auto bytes = parse_size(recorded->second); bytes && *bytes >= config.chunk_bytes) return *bytes;
    return uint64_t{1} << 30;
}

} // namespace

SimResult simulate(const trace::Trace& trace, const SimConfig& config) {
    const ChunkSchedule schedule(trace, config.chunk_bytes);
    return simulate(trace, schedule, iteration_bounds(trace), config);
}

SimResult simulate(const trace::Trace& trace, const ChunkSchedule& schedule, const std::vector<uint64_t>& bounds,
                   const SimConfig& config) {
    const auto wall_start = std::chrono::steady_clock::now();
    const double cpu_start = thread_cpu_seconds();
    if (schedule.chunk_bytes() != config.chunk_bytes || schedule.launch_count() != trace.launches.size())
        throw std::invalid_argument("simulate: the chunk schedule was built for another trace or chunk size");

    const LinkModel& link = config.link;
    RateMemo prefetch_gbps(link.prefetch_curve), evict_gbps(link.evict_curve);
    // The schedule worked out which ids each allocation gets, as the library's
    // model hands them out (ChunkIds::Reused): the replay takes them as they are.
    Residency residency(config.budget_bytes, config.chunk_bytes, ChunkIds::Given);
    residency.reserve_chunk_slots(schedule.chunk_slots());
    const auto policy = make_policy(config, schedule, trace);
    residency.keep_recency_order(policy->reads_recency_order());
    // Policies that fetch what a launch misses (the library's mover prefetches it
    // beside the kernel that faults on it, which costs what a prefetch that the
    // kernel waits for costs: bench/wait_or_fault_probe) rather than leaving it
    // to faults.
    const bool fetch_demand = policy->fetches_demand();
    const uint64_t launches = trace.launches.size();

    SimResult result;
    result.policy = std::string(policy->name());
    result.budget_bytes = config.budget_bytes;
    result.chunk_bytes = config.chunk_bytes;
    result.footprint_bytes = schedule.footprint_bytes();
    result.launches = launches;

    // When each chunk's data is on the GPU, and until when a kernel uses it
    // (an eviction has to wait for that).
    LargeVector<double> ready_at(schedule.chunk_slots(), 0.0);
    // The latest arrival so far: a launch that starts after it waits for none.
    double latest_arrival = 0.0;
    // At each iteration bound, before its launch: when the kernels so far ended, and
    // the bytes moved in and out so far (to tell the steps apart).
    struct AtBound {
        double kernels_end = 0;
        uint64_t in_bytes = 0;
        uint64_t out_bytes = 0;
        uint64_t dead_out_bytes = 0;
    };
    std::vector<AtBound> at_bound(bounds.size());
    size_t next_bound = 0;
    while (next_bound < bounds.size() && bounds[next_bound] == 0) ++next_bound;
    double copy_free = 0.0;
    double compute_free = 0.0;
    // The application issues launch i while the GPU runs launch i - 1: transfers
    // planned for launch i cannot start earlier than that.
    double previous_kernel_start = 0.0;

    const auto events = schedule.events();
    size_t next_event = 0;
    // Blocks of the pool: a freed block's resident bytes stay on the GPU, dead,
    // for the next block placed over them.
    const auto reuse_owner = std::make_shared<ReuseInPlace>();
    ReuseInPlace& reuse = *reuse_owner;
    std::optional<sim::ReplacedBlocks> replaced;
    if (config.placement != BlockPlacement::Recorded)
        replaced.emplace(pool_slab_bytes(trace, config), config.chunk_bytes,
                         config.placement != BlockPlacement::BestFit ? reuse_owner : nullptr);
    // (Apart from the re-placed slabs, which begin at 2^46 and grow up.)
    std::optional<sim::PlannedBlocks> planned;
    if (config.placement == BlockPlacement::Planned) planned.emplace(events, bounds, config.chunk_bytes, uint64_t{1} << 50);
    // Dead memory the launch's plan gave up for room: evicted before its other
    // evictions, each piece one call.
    uint64_t dead_bytes = 0, dead_calls = 0;
    double dead_seconds = 0;
    reuse.give_up_through(residency, [&](uint64_t, uint64_t bytes) {
        dead_bytes += bytes;
        ++dead_calls;
        dead_seconds += seconds_for(bytes, evict_gbps(bytes));
    });
    // Blocks populated since the last launch: their prefetches go first among the next launch's.
    std::vector<ChunkRange> populated;
    std::vector<ChunkSpan> planned_prefetch;
    const auto slab_changes = schedule.slab_changes();
    size_t next_slab = 0;
    auto replay_until = [&](uint64_t launch) {
        const auto added = [&](size_t k, ChunkRange chunks) {
            policy->on_allocation_added(chunks);
            const ChunkSchedule::AllocEvent& e = events[k];
            // A pooled block is placed as the library places it; allocations of
            // traces made before the pool fault in at first use.
            if (e.kind == trace::AllocKind::Pooled) {
                std::optional<uint64_t> at = planned ? planned->allocate(e.alloc_id, e.size, launch) : std::nullopt;
                const uint64_t address = at ? *at : replaced ? replaced->allocate(e.alloc_id, e.size) : e.address;
                result.reused_bytes += place_block(residency, reuse, chunks, address, launch,
                                                   [&](ChunkRange run) { populated.push_back(run); });
            } else reuse.forget(residency, e.address, e.size);
        };
        const auto removing = [&](size_t k) {
            const ChunkSchedule::AllocEvent& e = events[k];
            if (e.kind == trace::AllocKind::Pooled) {
                std::optional<uint64_t> at = planned ? planned->free(e.alloc_id) : std::nullopt;
                const uint64_t address = at ? *at : replaced ? replaced->free(e.alloc_id) : e.address;
                reuse.note_removal(residency, e.alloc_id, address, launch);
            }
            // Freed before any launch: nothing of it is populated (its ids may be handed out again).
            const ChunkId first = residency.first_chunk(e.alloc_id);
            const ChunkId last = first + residency.chunk_count(e.alloc_id) - 1;
            std::erase_if(populated, [&](const ChunkRange& run) { return run.first >= first && run.last <= last; });
        };
        // The events before each slab change due by now, then the change.
        for (; next_slab < slab_changes.size() && slab_changes[next_slab].launches_before <= launch; ++next_slab) {
            const ChunkSchedule::SlabChange& change = slab_changes[next_slab];
            ChunkSchedule::replay_events(events.first(change.before_event), next_event, launch, residency, added, removing);
            // (The recorded slabs: re-placed blocks lie in slabs of their own.)
            if (!replaced) reuse.forget(residency, change.base, change.size);
        }
        ChunkSchedule::replay_events(events, next_event, launch, residency, added, removing);
    };
    Plan plan;
    std::vector<uint64_t> span_bytes; // of the plan's prefetched spans
    // The kernel before the current launch: evicting its chunks waits until it
    // ends. (Earlier kernels ended before it started, which transfers wait for anyway.)
    std::span<const ChunkRange> previous_ranges;
    double previous_kernel_end = 0.0;
    for (uint64_t i = 0; i < launches; ++i) {
        replay_until(i);
        const trace::Launch& launch = trace.launches[i];
        const std::span<const ChunkRange> launch_ranges = schedule.launch_ranges(i);
        residency.pin_launch(launch_ranges);
        if (schedule.launch_bytes(i) > config.budget_bytes) ++result.oversized_launches;

        LaunchView view;
        view.step = i;
        view.kernel_id = launch.kernel_id;
        view.accesses = trace.accesses_of(launch);
        view.ranges = launch_ranges;
        plan.clear();
        policy->plan(view, residency, plan);
        plan.coalesce_evictions(residency);
        result.peak_launch_resident_bytes = std::max(result.peak_launch_resident_bytes, residency.held_bytes());
        if (!populated.empty()) {
            planned_prefetch.swap(plan.prefetch);
            plan.prefetch.clear();
            // (Freed since, or evicted again by this plan: nothing to populate.)
            for (const ChunkRange& run : populated)
                for (ChunkId c = run.first; c <= run.last; ++c)
                    if (residency.is_chunk_live(c) && residency.is_resident(c)) Plan::add(plan.prefetch, c, residency);
            plan.prefetch.insert(plan.prefetch.end(), planned_prefetch.begin(), planned_prefetch.end());
            populated.clear();
        }

        uint64_t evict_bytes = dead_bytes, fetch_bytes = 0, demand_bytes = 0;
        double evict_seconds = dead_seconds, fetch_seconds = 0;
        double copy_start = std::max(copy_free, previous_kernel_start);
        for (const ChunkSpan& span : plan.evict) {
            const uint64_t bytes = Plan::bytes({&span, 1}, residency);
            evict_bytes += bytes;
            evict_seconds += seconds_for(bytes, evict_gbps(bytes));
            if (overlaps(previous_ranges, span)) copy_start = std::max(copy_start, previous_kernel_end);
        }
        // Fetched in the planner's order: what the launch misses, then what comes later.
        size_t demand_spans = 0; // the first of plan.prefetch
        if (fetch_demand && !plan.demand.empty()) {
            plan.prefetch.insert(plan.prefetch.begin(), plan.demand.begin(), plan.demand.end());
            demand_spans = plan.demand.size();
            plan.demand.clear();
        }
        span_bytes.clear();
        for (const ChunkSpan& span : plan.prefetch) {
            const uint64_t bytes = Plan::bytes({&span, 1}, residency);
            if (span_bytes.size() < demand_spans) result.demand_fetched_bytes += bytes;
            span_bytes.push_back(bytes);
            fetch_bytes += bytes;
            fetch_seconds += seconds_for(bytes, prefetch_gbps(bytes));
        }
        for (const ChunkSpan& span : plan.demand) {
            demand_bytes += Plan::bytes({&span, 1}, residency);
            for (ChunkId c = span.first; c < span.first + span.count; ++c) ready_at[c] = 0.0;
        }

        // With a full GPU, room for the chunks that fault in is made in the fault
        // path, chunk by chunk, while the kernel waits; the other evictions run
        // on the copy engine ahead of the prefetches.
        const uint64_t fault_evict_bytes =
            config.fault_room == FaultRoom::FaultPath ? std::min(evict_bytes, demand_bytes) : 0;
        const double fault_evict_seconds = seconds_for(fault_evict_bytes, evict_gbps(config.chunk_bytes));
        if (evict_bytes > 0) evict_seconds *= static_cast<double>(evict_bytes - fault_evict_bytes) / static_cast<double>(evict_bytes);
        evict_bytes -= fault_evict_bytes;
        const uint64_t moved = evict_bytes + fetch_bytes;
        if (moved > 0) {
            double copy_seconds = evict_seconds + fetch_seconds;
            if (evict_bytes > 0 && fetch_bytes > 0)
                copy_seconds = std::max({evict_seconds, fetch_seconds, seconds_for(moved, link.concurrent_gbps)});
            // Evictions go first; fetched pieces arrive in order, in proportion to their bytes.
            const double per_byte = copy_seconds / static_cast<double>(moved);
            uint64_t done_bytes = evict_bytes;
            for (size_t k = 0; k < plan.prefetch.size(); ++k) {
                const ChunkSpan& span = plan.prefetch[k];
                done_bytes += span_bytes[k];
                const double arrival = copy_start + per_byte * static_cast<double>(done_bytes);
                for (ChunkId c = span.first; c < span.first + span.count; ++c) ready_at[c] = arrival;
                latest_arrival = std::max(latest_arrival, arrival);
            }
            copy_free = copy_start + copy_seconds;
            result.copy_busy_seconds += copy_seconds;
        }

        double start = compute_free;
        const bool may_wait = latest_arrival > compute_free;
        residency.unpin_launch();
        if (may_wait)
            for (const ChunkRange& r : launch_ranges) start = std::max(start, latest_of(ready_at, r));
        const uint64_t duration_ns = launch.duration_ns ? launch.duration_ns : link.default_kernel_ns;
        const double compute = static_cast<double>(duration_ns) * 1e-9;
        const double end = start + compute + fault_evict_seconds + seconds_for(demand_bytes, link.demand_fault_gbps);
        previous_ranges = launch_ranges;
        previous_kernel_end = end;
        compute_free = end;
        previous_kernel_start = start;

        result.compute_seconds += compute;
        result.evicted_bytes += evict_bytes + fault_evict_bytes;
        result.prefetched_bytes += fetch_bytes;
        result.demand_bytes += demand_bytes;
        result.evict_calls += plan.evict.size() + dead_calls;
        result.dead_evicted_bytes += dead_bytes;
        // What blocks placed before the next launch give up goes with its moves.
        dead_bytes = dead_calls = 0;
        dead_seconds = 0;
        result.prefetch_calls += plan.prefetch.size();
        for (; next_bound < bounds.size() && bounds[next_bound] == i + 1; ++next_bound)
            at_bound[next_bound] = {end, result.prefetched_bytes + result.demand_bytes, result.evicted_bytes,
                                    result.dead_evicted_bytes};
    }

    result.total_seconds = compute_free;
    result.peak_resident_bytes = residency.peak_held_bytes();
    result.prediction_hit_rate = policy->prediction_hit_rate();

    result.step_seconds = result.total_seconds;
    uint64_t reference_begin = 0, reference_end = launches;
    if (bounds.size() >= 2) {
        auto step_time = [&](size_t k) { return at_bound[k + 1].kernels_end - at_bound[k].kernels_end; };
        std::vector<double> steady;
        for (size_t k = 1; k + 1 < bounds.size(); ++k) steady.push_back(step_time(k));
        const size_t first_steady = steady.empty() ? 0 : 1;
        if (steady.empty()) steady.push_back(step_time(0));
        result.steady_step_seconds = steady;
        result.step_seconds = median(steady);
        // The step whose time is closest to the median.
        size_t typical = first_steady;
        for (size_t k = 0; k < steady.size(); ++k)
            if (std::abs(steady[k] - result.step_seconds) < std::abs(steady[typical - first_steady] - result.step_seconds))
                typical = k + first_steady;
        result.step_in_bytes = at_bound[typical + 1].in_bytes - at_bound[typical].in_bytes;
        result.step_out_bytes = at_bound[typical + 1].out_bytes - at_bound[typical].out_bytes;
        result.step_dead_out_bytes = at_bound[typical + 1].dead_out_bytes - at_bound[typical].dead_out_bytes;
        result.steady_steps = bounds.size() > 2 ? bounds.size() - 2 : 1;
        // The second iteration stands for all steady ones in the bound below.
        const size_t reference = bounds.size() > 2 ? 1 : 0;
        reference_begin = bounds[reference];
        reference_end = bounds[reference + 1];
        result.step_launches = reference_end - reference_begin;
    }
    result.step_working_set_bytes = schedule.touched_bytes(reference_begin, reference_end);
    double step_compute = 0;
    for (uint64_t i = reference_begin; i < reference_end; ++i) {
        const uint64_t ns = trace.launches[i].duration_ns ? trace.launches[i].duration_ns : link.default_kernel_ns;
        step_compute += static_cast<double>(ns) * 1e-9;
    }
    const uint64_t beyond_budget =
        result.step_working_set_bytes > config.budget_bytes ? result.step_working_set_bytes - config.budget_bytes : 0;
    const double link_seconds =
        std::max(seconds_for(beyond_budget, link.peak_prefetch_gbps()) + seconds_for(beyond_budget, link.peak_evict_gbps()),
                 seconds_for(2 * beyond_budget, link.concurrent_gbps));
    result.transfer_bound_step_seconds = std::max(step_compute, link_seconds);

    result.simulation_wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    result.simulation_cpu_seconds = thread_cpu_seconds() - cpu_start;
    if (planned) {
        result.layout_blocks = planned->layout().planned;
        result.layout_arena_bytes = planned->layout().arena_bytes;
        result.layout_peak_live_bytes = planned->layout().peak_live_bytes;
        result.layout_placed = planned->blocks_planned();
        result.layout_displaced = planned->blocks_displaced();
    }
    return result;
}

} // namespace uvmp

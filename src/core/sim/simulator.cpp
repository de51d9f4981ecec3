#include "core/sim/simulator.h"

#include "core/model/reuse_in_place.h"
#include "core/sim/planned_blocks.h"
#include "core/sim/replaced_blocks.h"
#include "core/util/median.h"
#include "core/util/size_parse.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <ctime>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_set>

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

uint64_t pool_slab_bytes(const trace::Trace& trace, const SimConfig& config) {
    if (config.pool_slab_bytes) return config.pool_slab_bytes;
    const auto recorded = trace.header.options.find("pool_slab_size");
    if (recorded != trace.header.options.end())
        if (const auto bytes = parse_size(recorded->second); bytes && *bytes >= config.chunk_bytes) return *bytes;
    return uint64_t{1} << 30;
}

// One replay of a trace under a policy and a budget: what carries over from
// launch to launch (residency, the copy engine's and the GPU's clocks, the
// pool's blocks), and the result it fills. It hands `this` to the pool's
// callbacks, so it stays where it was made.
class TraceReplay {
public:
    TraceReplay(const trace::Trace& trace, const ChunkSchedule& schedule, const std::vector<uint64_t>& bounds,
                const SimConfig& config);
    TraceReplay(const TraceReplay&) = delete;
    TraceReplay& operator=(const TraceReplay&) = delete;

    void replay_launches() {
        for (uint64_t i = 0; i < launches_; ++i) replay_launch(i);
    }
    SimResult finish();

private:
    // At each iteration bound, before its launch: when the kernels so far ended, and
    // the bytes moved in and out so far (to tell the steps apart).
    struct AtBound {
        double kernels_end = 0;
        uint64_t in_bytes = 0;
        uint64_t out_bytes = 0;
        uint64_t dead_out_bytes = 0;
    };
    // The bytes one launch moves and how long the link takes for them.
    struct LaunchMoves {
        // fetch_bytes holds populate_bytes: both run on the copy engine in the plan's order.
        uint64_t evict_bytes = 0, fetch_bytes = 0, populate_bytes = 0, demand_bytes = 0, fault_evict_bytes = 0;
        double evict_seconds = 0, fetch_seconds = 0, fault_evict_seconds = 0;
        double copy_start = 0;
    };

    void replay_launch(uint64_t i);
    void replay_allocations_until(uint64_t launch);
    void allocation_added(size_t k, ChunkRange chunks, uint64_t launch);
    void allocation_removing(size_t k, uint64_t launch);
    // A slab the re-placed pool gave back takes its dead bytes with it.
    void forget_released_slabs();
    // Marks which of a new block's chunks lie over memory no block has used.
    void note_fresh(ChunkRange chunks, uint64_t address, uint64_t size);
    // A slab made or given back: its memory is fresh again.
    void forget_used(uint64_t base, uint64_t bytes);
    void plan_launch(uint64_t i, std::span<const ChunkRange> launch_ranges);
    void prefetch_populated_first();
    LaunchMoves weigh_evictions() const;
    void weigh_fetches(LaunchMoves& moves);
    void make_fault_room(LaunchMoves& moves);
    void schedule_copies(const LaunchMoves& moves);
    double run_kernel(const trace::Launch& launch, std::span<const ChunkRange> launch_ranges, const LaunchMoves& moves);
    void account_launch(uint64_t i, const LaunchMoves& moves, double end);
    // The launches of one step: [begin, end).
    struct StepLaunches {
        uint64_t begin = 0, end = 0;
    };

    StepLaunches summarize_steps();
    void bound_step_by_link(StepLaunches reference);
    void note_layout();

    const trace::Trace& trace_;
    const ChunkSchedule& schedule_;
    const std::vector<uint64_t>& bounds_;
    const SimConfig& config_;
    const LinkModel& link_;
    const uint64_t launches_;
    // Memos, so callable from const members.
    mutable RateMemo prefetch_gbps_, evict_gbps_;
    // The schedule worked out which ids each allocation gets, as the library's
    // model hands them out (ChunkIds::Reused): the replay takes them as they are.
    Residency residency_;
    std::unique_ptr<Policy> policy_;
    // Policies that fetch what a launch misses (the library's mover prefetches it
    // beside the kernel that faults on it, which costs what a prefetch that the
    // kernel waits for costs: bench/wait_or_fault_probe) rather than leaving it
    // to faults.
    bool fetch_demand_ = false;
    SimResult result_;

    // When each chunk's data is on the GPU, and until when a kernel uses it
    // (an eviction has to wait for that).
    LargeVector<double> ready_at_;
    // The latest arrival so far: a launch that starts after it waits for none.
    double latest_arrival_ = 0.0;
    std::vector<AtBound> at_bound_;
    size_t next_bound_ = 0;
    double copy_free_ = 0.0;
    double compute_free_ = 0.0;
    // The application issues launch i while the GPU runs launch i - 1: transfers
    // planned for launch i cannot start earlier than that.
    double previous_kernel_start_ = 0.0;
    // The kernel before the current launch: evicting its chunks waits until it
    // ends. (Earlier kernels ended before it started, which transfers wait for anyway.)
    std::span<const ChunkRange> previous_ranges_;
    double previous_kernel_end_ = 0.0;

    std::span<const ChunkSchedule::AllocEvent> events_;
    size_t next_event_ = 0;
    std::span<const ChunkSchedule::SlabChange> slab_changes_;
    size_t next_slab_ = 0;
    // Blocks of the pool: a freed block's resident bytes stay on the GPU, dead,
    // for the next block placed over them.
    std::shared_ptr<ReuseInPlace> reuse_;
    std::optional<sim::ReplacedBlocks> replaced_;
    std::vector<pool::SlabEvent> slab_events_; // of the re-placed pool's last call
    // (Apart from the re-placed slabs, which begin at 2^46 and grow up.)
    std::optional<sim::PlannedBlocks> planned_;
    // Dead memory the launch's plan gave up for room: evicted before its other
    // evictions, each piece one call.
    uint64_t dead_bytes_ = 0, dead_calls_ = 0;
    double dead_seconds_ = 0;
    // Blocks populated since the last launch: their prefetches go first among the next launch's.
    std::vector<ChunkRange> populated_;
    // By chunk id: the chunk's memory was never used by a block before (its
    // first fetch makes pages), and the address chunks blocks have used.
    std::vector<uint8_t> fresh_;
    std::unordered_set<uint64_t> used_address_chunks_;
    std::vector<ChunkSpan> planned_prefetch_;

    Plan plan_;
    std::vector<uint64_t> span_bytes_; // of the plan's prefetched spans
};

TraceReplay::TraceReplay(const trace::Trace& trace, const ChunkSchedule& schedule, const std::vector<uint64_t>& bounds,
                         const SimConfig& config)
    : trace_(trace), schedule_(schedule), bounds_(bounds), config_(config), link_(config.link),
      launches_(trace.launches.size()), prefetch_gbps_(link_.prefetch_curve), evict_gbps_(link_.evict_curve),
      residency_(config.budget_bytes, config.chunk_bytes, ChunkIds::Given), ready_at_(schedule.chunk_slots(), 0.0),
      at_bound_(bounds.size()), events_(schedule.events()), slab_changes_(schedule.slab_changes()),
      reuse_(std::make_shared<ReuseInPlace>()), fresh_(schedule.chunk_slots(), 0) {
    residency_.reserve_chunk_slots(schedule.chunk_slots());
    policy_ = make_policy(config, schedule, trace);
    residency_.keep_recency_order(policy_->reads_recency_order());
    fetch_demand_ = policy_->fetches_demand();

    result_.policy = std::string(policy_->name());
    result_.budget_bytes = config.budget_bytes;
    result_.chunk_bytes = config.chunk_bytes;
    result_.footprint_bytes = schedule.footprint_bytes();
    result_.launches = launches_;

    while (next_bound_ < bounds.size() && bounds[next_bound_] == 0) ++next_bound_;
    if (config.placement != BlockPlacement::Recorded)
        replaced_.emplace(pool_slab_bytes(trace, config), config.chunk_bytes,
                          config.placement != BlockPlacement::BestFit ? reuse_ : nullptr);
    if (config.placement == BlockPlacement::Planned)
        planned_.emplace(events_, bounds, config.chunk_bytes, uint64_t{1} << 50);
    reuse_->give_up_through(residency_, [this](uint64_t, uint64_t bytes) {
        dead_bytes_ += bytes;
        ++dead_calls_;
        dead_seconds_ += seconds_for(bytes, evict_gbps_(bytes));
    });
}

void TraceReplay::replay_launch(uint64_t i) {
    replay_allocations_until(i);
    const trace::Launch& launch = trace_.launches[i];
    const std::span<const ChunkRange> launch_ranges = schedule_.launch_ranges(i);
    residency_.pin_launch(launch_ranges);
    if (schedule_.launch_bytes(i) > config_.budget_bytes) ++result_.oversized_launches;
    plan_launch(i, launch_ranges);
    LaunchMoves moves = weigh_evictions();
    weigh_fetches(moves);
    make_fault_room(moves);
    schedule_copies(moves);
    const double end = run_kernel(launch, launch_ranges, moves);
    account_launch(i, moves, end);
}

void TraceReplay::allocation_added(size_t k, ChunkRange chunks, uint64_t launch) {
    policy_->on_allocation_added(chunks);
    const ChunkSchedule::AllocEvent& e = events_[k];
    // A pooled block is placed as the library places it; allocations of
    // traces made before the pool fault in at first use.
    if (e.kind == trace::AllocKind::Pooled) {
        std::optional<uint64_t> at = planned_ ? planned_->allocate(e.alloc_id, e.size, launch) : std::nullopt;
        slab_events_.clear();
        const uint64_t address = at ? *at : replaced_ ? replaced_->allocate(e.alloc_id, e.size, slab_events_) : e.address;
        forget_released_slabs();
        note_fresh(chunks, address, e.size);
        result_.reused_bytes += place_block(residency_, *reuse_, chunks, address, launch,
                                            [&](ChunkRange run) { populated_.push_back(run); });
    } else reuse_->forget(residency_, e.address, e.size);
}

void TraceReplay::allocation_removing(size_t k, uint64_t launch) {
    const ChunkSchedule::AllocEvent& e = events_[k];
    if (e.kind == trace::AllocKind::Pooled) {
        std::optional<uint64_t> at = planned_ ? planned_->free(e.alloc_id) : std::nullopt;
        slab_events_.clear();
        const uint64_t address = at ? *at : replaced_ ? replaced_->free(e.alloc_id, slab_events_) : e.address;
        reuse_->note_removal(residency_, e.alloc_id, address, launch);
        // After the block's dead bytes are noted, as the library's planner hears of them.
        forget_released_slabs();
    }
    // Freed before any launch: nothing of it is populated (its ids may be handed out again).
    if (const std::optional<ChunkRange> all = residency_.chunks_of(e.alloc_id)) {
        std::erase_if(populated_, [&](const ChunkRange& run) { return run.first >= all->first && run.last <= all->last; });
        std::fill(fresh_.begin() + all->first, fresh_.begin() + all->last + 1, uint8_t{0});
    }
}

void TraceReplay::note_fresh(ChunkRange chunks, uint64_t address, uint64_t size) {
    const uint64_t chunk = config_.chunk_bytes;
    for (ChunkId c = chunks.first; c <= chunks.last; ++c) {
        const uint64_t begin = address + uint64_t{c - chunks.first} * chunk;
        if (begin >= address + size) break;
        const uint64_t end = std::min(begin + chunk, address + size);
        bool fresh = true;
        for (uint64_t a = begin / chunk; a <= (end - 1) / chunk; ++a) fresh &= used_address_chunks_.insert(a).second;
        fresh_[c] = fresh;
    }
}

void TraceReplay::forget_released_slabs() {
    for (const pool::SlabEvent& e : slab_events_)
        if (e.released) {
            reuse_->forget(residency_, e.base, e.bytes);
            forget_used(e.base, e.bytes);
        }
}

void TraceReplay::forget_used(uint64_t base, uint64_t bytes) {
    if (bytes == 0) return;
    for (uint64_t a = base / config_.chunk_bytes; a <= (base + bytes - 1) / config_.chunk_bytes; ++a)
        used_address_chunks_.erase(a);
}

void TraceReplay::replay_allocations_until(uint64_t launch) {
    const auto added = [&](size_t k, ChunkRange chunks) { allocation_added(k, chunks, launch); };
    const auto removing = [&](size_t k) { allocation_removing(k, launch); };
    // The events before each slab change due by now, then the change.
    for (; next_slab_ < slab_changes_.size() && slab_changes_[next_slab_].launches_before <= launch; ++next_slab_) {
        const ChunkSchedule::SlabChange& change = slab_changes_[next_slab_];
        ChunkSchedule::replay_events(events_.first(change.before_event), next_event_, launch, residency_, added, removing);
        // (The recorded slabs: re-placed blocks lie in slabs of their own.)
        if (!replaced_) {
            reuse_->forget(residency_, change.base, change.size);
            forget_used(change.base, change.size);
        }
    }
    ChunkSchedule::replay_events(events_, next_event_, launch, residency_, added, removing);
}

void TraceReplay::plan_launch(uint64_t i, std::span<const ChunkRange> launch_ranges) {
    LaunchView view;
    view.step = i;
    view.kernel_id = trace_.launches[i].kernel_id;
    view.accesses = trace_.accesses_of(trace_.launches[i]);
    view.ranges = launch_ranges;
    plan_.clear();
    policy_->plan(view, residency_, plan_);
    plan_.coalesce_evictions(residency_);
    result_.peak_launch_resident_bytes = std::max(result_.peak_launch_resident_bytes, residency_.held_bytes());
    if (!populated_.empty()) prefetch_populated_first();
}

void TraceReplay::prefetch_populated_first() {
    planned_prefetch_.swap(plan_.prefetch);
    plan_.prefetch.clear();
    // (Freed since, or evicted again by this plan: nothing to populate.)
    for (const ChunkRange& run : populated_)
        for (ChunkId c = run.first; c <= run.last; ++c)
            if (residency_.is_chunk_live(c) && residency_.is_resident(c)) Plan::add(plan_.prefetch, c, residency_);
    plan_.prefetch.insert(plan_.prefetch.end(), planned_prefetch_.begin(), planned_prefetch_.end());
    populated_.clear();
}

TraceReplay::LaunchMoves TraceReplay::weigh_evictions() const {
    LaunchMoves moves;
    moves.evict_bytes = dead_bytes_;
    moves.evict_seconds = dead_seconds_;
    moves.copy_start = std::max(copy_free_, previous_kernel_start_);
    for (const ChunkSpan& span : plan_.evict) {
        const uint64_t bytes = Plan::bytes({&span, 1}, residency_);
        moves.evict_bytes += bytes;
        moves.evict_seconds += seconds_for(bytes, evict_gbps_(bytes));
        if (overlaps(previous_ranges_, span)) moves.copy_start = std::max(moves.copy_start, previous_kernel_end_);
    }
    return moves;
}

void TraceReplay::weigh_fetches(LaunchMoves& moves) {
    // Fetched in the planner's order: what the launch misses, then what comes later.
    size_t demand_spans = 0; // the first of plan.prefetch
    if (fetch_demand_ && !plan_.demand.empty()) {
        plan_.prefetch.insert(plan_.prefetch.begin(), plan_.demand.begin(), plan_.demand.end());
        demand_spans = plan_.demand.size();
        plan_.demand.clear();
    }
    span_bytes_.clear();
    for (const ChunkSpan& span : plan_.prefetch) {
        const uint64_t bytes = Plan::bytes({&span, 1}, residency_);
        // Memory no block used before has no data to copy: its pages are made.
        uint64_t fresh = 0;
        for (ChunkId c = span.first; c < span.first + span.count; ++c)
            if (fresh_[c]) {
                fresh += residency_.bytes_of({c, c});
                fresh_[c] = 0;
            }
        if (span_bytes_.size() < demand_spans) result_.demand_fetched_bytes += bytes - fresh;
        span_bytes_.push_back(bytes);
        moves.fetch_bytes += bytes;
        moves.populate_bytes += fresh;
        moves.fetch_seconds += seconds_for(bytes - fresh, prefetch_gbps_(bytes)) + seconds_for(fresh, link_.populate_gbps);
    }
    for (const ChunkSpan& span : plan_.demand) {
        moves.demand_bytes += Plan::bytes({&span, 1}, residency_);
        for (ChunkId c = span.first; c < span.first + span.count; ++c) ready_at_[c] = 0.0;
    }
}

void TraceReplay::make_fault_room(LaunchMoves& moves) {
    // With a full GPU, room for the chunks that fault in is made in the fault
    // path, chunk by chunk, while the kernel waits; the other evictions run
    // on the copy engine ahead of the prefetches.
    moves.fault_evict_bytes =
        config_.fault_room == FaultRoom::FaultPath ? std::min(moves.evict_bytes, moves.demand_bytes) : 0;
    moves.fault_evict_seconds = seconds_for(moves.fault_evict_bytes, evict_gbps_(config_.chunk_bytes));
    if (moves.evict_bytes > 0)
        moves.evict_seconds *= static_cast<double>(moves.evict_bytes - moves.fault_evict_bytes) /
                               static_cast<double>(moves.evict_bytes);
    moves.evict_bytes -= moves.fault_evict_bytes;
}

void TraceReplay::schedule_copies(const LaunchMoves& moves) {
    const uint64_t moved = moves.evict_bytes + moves.fetch_bytes;
    if (moved == 0) return;
    double copy_seconds = moves.evict_seconds + moves.fetch_seconds;
    if (moves.evict_bytes > 0 && moves.fetch_bytes > moves.populate_bytes)
        copy_seconds = std::max({moves.evict_seconds, moves.fetch_seconds,
                                 seconds_for(moved - moves.populate_bytes, link_.concurrent_gbps)});
    // Evictions go first; fetched pieces arrive in order, in proportion to their bytes.
    const double per_byte = copy_seconds / static_cast<double>(moved);
    uint64_t done_bytes = moves.evict_bytes;
    for (size_t k = 0; k < plan_.prefetch.size(); ++k) {
        const ChunkSpan& span = plan_.prefetch[k];
        done_bytes += span_bytes_[k];
        const double arrival = moves.copy_start + per_byte * static_cast<double>(done_bytes);
        for (ChunkId c = span.first; c < span.first + span.count; ++c) ready_at_[c] = arrival;
        latest_arrival_ = std::max(latest_arrival_, arrival);
    }
    copy_free_ = moves.copy_start + copy_seconds;
    result_.copy_busy_seconds += copy_seconds;
}

double TraceReplay::run_kernel(const trace::Launch& launch, std::span<const ChunkRange> launch_ranges,
                               const LaunchMoves& moves) {
    double start = compute_free_;
    const bool may_wait = latest_arrival_ > compute_free_;
    residency_.unpin_launch();
    if (may_wait)
        for (const ChunkRange& r : launch_ranges) start = std::max(start, latest_of(ready_at_, r));
    const uint64_t duration_ns = launch.duration_ns ? launch.duration_ns : link_.default_kernel_ns;
    const double compute = static_cast<double>(duration_ns) * 1e-9;
    const double end =
        start + compute + moves.fault_evict_seconds + seconds_for(moves.demand_bytes, link_.demand_fault_gbps);
    previous_ranges_ = launch_ranges;
    previous_kernel_end_ = end;
    compute_free_ = end;
    previous_kernel_start_ = start;
    result_.compute_seconds += compute;
    return end;
}

void TraceReplay::account_launch(uint64_t i, const LaunchMoves& moves, double end) {
    result_.evicted_bytes += moves.evict_bytes + moves.fault_evict_bytes;
    result_.prefetched_bytes += moves.fetch_bytes - moves.populate_bytes;
    result_.populated_bytes += moves.populate_bytes;
    result_.demand_bytes += moves.demand_bytes;
    result_.evict_calls += plan_.evict.size() + dead_calls_;
    result_.dead_evicted_bytes += dead_bytes_;
    // What blocks placed before the next launch give up goes with its moves.
    dead_bytes_ = dead_calls_ = 0;
    dead_seconds_ = 0;
    result_.prefetch_calls += plan_.prefetch.size();
    for (; next_bound_ < bounds_.size() && bounds_[next_bound_] == i + 1; ++next_bound_)
        at_bound_[next_bound_] = {end, result_.prefetched_bytes + result_.demand_bytes, result_.evicted_bytes,
                                  result_.dead_evicted_bytes};
}

SimResult TraceReplay::finish() {
    result_.total_seconds = compute_free_;
    result_.peak_resident_bytes = residency_.peak_held_bytes();
    result_.prediction_hit_rate = policy_->prediction_hit_rate();
    bound_step_by_link(summarize_steps());
    note_layout();
    return std::move(result_);
}

// The steady steps' times and the moves of the typical one; returns the
// launches of the step that stands for all steady ones.
TraceReplay::StepLaunches TraceReplay::summarize_steps() {
    result_.step_seconds = result_.total_seconds;
    if (bounds_.size() < 2) return StepLaunches{0, launches_};
    auto step_time = [&](size_t k) { return at_bound_[k + 1].kernels_end - at_bound_[k].kernels_end; };
    std::vector<double> steady;
    for (size_t k = 1; k + 1 < bounds_.size(); ++k) steady.push_back(step_time(k));
    const size_t first_steady = steady.empty() ? 0 : 1;
    if (steady.empty()) steady.push_back(step_time(0));
    result_.steady_step_seconds = steady;
    result_.step_seconds = median(steady);
    // The step whose time is closest to the median.
    size_t typical = first_steady;
    for (size_t k = 0; k < steady.size(); ++k)
        if (std::abs(steady[k] - result_.step_seconds) < std::abs(steady[typical - first_steady] - result_.step_seconds))
            typical = k + first_steady;
    result_.step_in_bytes = at_bound_[typical + 1].in_bytes - at_bound_[typical].in_bytes;
    result_.step_out_bytes = at_bound_[typical + 1].out_bytes - at_bound_[typical].out_bytes;
    result_.step_dead_out_bytes = at_bound_[typical + 1].dead_out_bytes - at_bound_[typical].dead_out_bytes;
    result_.steady_steps = bounds_.size() > 2 ? bounds_.size() - 2 : 1;
    // The second iteration stands for all steady ones in the bound below.
    const size_t reference = bounds_.size() > 2 ? 1 : 0;
    const StepLaunches steps{bounds_[reference], bounds_[reference + 1]};
    result_.step_launches = steps.end - steps.begin;
    return steps;
}

// The step's time were the link the only limit beside the kernels: what does
// not fit the budget goes out and comes back once a step.
void TraceReplay::bound_step_by_link(StepLaunches reference) {
    result_.step_working_set_bytes = schedule_.touched_bytes(reference.begin, reference.end);
    double step_compute = 0;
    for (uint64_t i = reference.begin; i < reference.end; ++i) {
        const uint64_t ns = trace_.launches[i].duration_ns ? trace_.launches[i].duration_ns : link_.default_kernel_ns;
        step_compute += static_cast<double>(ns) * 1e-9;
    }
    const uint64_t beyond_budget = result_.step_working_set_bytes > config_.budget_bytes
                                       ? result_.step_working_set_bytes - config_.budget_bytes
                                       : 0;
    const double link_seconds = std::max(
        seconds_for(beyond_budget, link_.peak_prefetch_gbps()) + seconds_for(beyond_budget, link_.peak_evict_gbps()),
        seconds_for(2 * beyond_budget, link_.concurrent_gbps));
    result_.transfer_bound_step_seconds = std::max(step_compute, link_seconds);
}

void TraceReplay::note_layout() {
    if (!planned_) return;
    result_.layout_blocks = planned_->layout().planned;
    result_.layout_arena_bytes = planned_->layout().arena_bytes;
    result_.layout_peak_live_bytes = planned_->layout().peak_live_bytes;
    result_.layout_placed = planned_->blocks_planned();
    result_.layout_displaced = planned_->blocks_displaced();
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
    TraceReplay replay(trace, schedule, bounds, config);
    replay.replay_launches();
    SimResult result = replay.finish();
    result.simulation_wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    result.simulation_cpu_seconds = thread_cpu_seconds() - cpu_start;
    return result;
}

} // namespace uvmp

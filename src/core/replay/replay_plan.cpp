#include "core/replay/replay_plan.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>

namespace uvmp::replay {
namespace {

using namespace uvmp::trace;

// A record of the trace in the order the program made it.
struct Event {
    OpKind kind; // Alloc, Free, Mark or Launch
    size_t index;
};

bool at_bound(std::span<const uint64_t> bounds, uint64_t launches_before) {
    return std::binary_search(bounds.begin(), bounds.end(), launches_before);
}

// By trace.frees index: whether the free was made at a step bound after the
// iteration mark there. The mark ends the step before it, so such a free begins
// the next step, or, after the last mark, is the program's teardown and not
// part of the last step (which its copies would repeat).
std::vector<bool> frees_after_marks(const Trace& trace, std::span<const uint64_t> bounds) {
    std::unordered_map<uint64_t, uint64_t> mark_ns; // bound -> the time of its first mark
    for (const Iteration& mark : trace.iterations)
        if (at_bound(bounds, mark.launches_before)) mark_ns.try_emplace(mark.launches_before, mark.time_ns);
    std::vector<bool> after(trace.frees.size(), false);
    for (size_t i = 0; i < trace.frees.size(); ++i) {
        const auto it = mark_ns.find(trace.frees[i].launches_before);
        after[i] = it != mark_ns.end() && trace.frees[i].time_ns > it->second;
    }
    return after;
}

// Allocations, frees and marks go before the launch whose launches_before they
// carry, in time order; between equal times a free goes first (its memory may be
// what the allocation takes), then a mark. Right before the first launch of a
// step, frees and marks end the step before it and allocations begin the step:
// they go in that order, so that a step's copies make what the step uses. Frees
// after the step's iteration mark begin the step too (`after_mark`).
std::vector<Event> events_in_order(const Trace& trace, std::span<const uint64_t> bounds,
                                   const std::vector<bool>& after_mark) {
    struct Keyed {
        uint64_t launches_before;
        bool begins_step;
        uint64_t time_ns;
        int rank;
        Event event;
    };
    std::vector<Keyed> keyed;
    keyed.reserve(trace.allocs.size() + trace.frees.size() + trace.iterations.size());
    for (size_t i = 0; i < trace.frees.size(); ++i)
        keyed.push_back(
            {trace.frees[i].launches_before, after_mark[i], trace.frees[i].time_ns, 0, {OpKind::Free, i}});
    for (size_t i = 0; i < trace.iterations.size(); ++i)
        keyed.push_back(
            {trace.iterations[i].launches_before, false, trace.iterations[i].time_ns, 1, {OpKind::Mark, i}});
    for (size_t i = 0; i < trace.allocs.size(); ++i) {
        const uint64_t before = trace.allocs[i].launches_before;
        keyed.push_back({before, at_bound(bounds, before), trace.allocs[i].time_ns, 2, {OpKind::Alloc, i}});
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
        if (a.launches_before != b.launches_before) return a.launches_before < b.launches_before;
        if (a.begins_step != b.begins_step) return b.begins_step;
        if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
        return a.rank < b.rank;
    });
    std::vector<Event> merged;
    merged.reserve(keyed.size() + trace.launches.size());
    size_t next = 0;
    for (size_t i = 0; i < trace.launches.size(); ++i) {
        while (next < keyed.size() && keyed[next].launches_before <= i) merged.push_back(keyed[next++].event);
        merged.push_back({OpKind::Launch, i});
    }
    while (next < keyed.size()) merged.push_back(keyed[next++].event);
    return merged;
}

// Where each step begins among the events: after everything recorded before
// its first launch but the allocations (and frees after its mark) that begin
// it. `bounds` ascend.
std::vector<size_t> positions_of_bounds(const Trace& trace, const std::vector<Event>& events,
                                        std::span<const uint64_t> bounds, const std::vector<bool>& after_mark) {
    auto begins_at_or_after = [&](const Event& e, uint64_t bound) {
        switch (e.kind) {
        case OpKind::Launch: return e.index >= bound;
        case OpKind::Alloc: return trace.allocs[e.index].launches_before >= bound;
        case OpKind::Free: {
            const uint64_t before = trace.frees[e.index].launches_before;
            return before > bound || (before == bound && after_mark[e.index]);
        }
        case OpKind::Mark: return trace.iterations[e.index].launches_before > bound;
        case OpKind::StepBoundary: break;
        }
        return false;
    };
    std::vector<size_t> positions;
    size_t at = 0;
    for (uint64_t bound : bounds) {
        while (at < events.size() && !begins_at_or_after(events[at], bound)) ++at;
        positions.push_back(at);
    }
    return positions;
}

// The host time at which the step starting at launch `bound` began: its first
// launch, or the iteration mark at the end of the trace.
std::optional<uint64_t> time_of_bound(const Trace& trace, uint64_t bound) {
    if (bound < trace.launches.size()) return trace.launches[bound].time_ns;
    for (const Iteration& mark : trace.iterations)
        if (mark.launches_before == bound) return mark.time_ns;
    return std::nullopt;
}

class PlanBuilder {
public:
    PlanBuilder(const Trace& trace, const PlanOptions& options) : trace_(trace), scale_(options.scale) {
        plan_.kernel_max_touches.assign(trace.kernel_names.size(), 0);
    }

    void emit(const Event& event, std::optional<uint64_t> step_start_ns) {
        switch (event.kind) {
        case OpKind::Alloc: alloc(trace_.allocs[event.index]); break;
        case OpKind::Free: free(trace_.frees[event.index]); break;
        case OpKind::Mark: plan_.ops.push_back({OpKind::Mark, 0}); break;
        case OpKind::Launch: launch(trace_.launches[event.index], step_start_ns); break;
        case OpKind::StepBoundary: break;
        }
    }

    void boundary() {
        plan_.ops.push_back({OpKind::StepBoundary, static_cast<uint32_t>(plan_.steps.size())});
    }
    void begin_step(std::optional<uint64_t> recorded_ns, bool copy) {
        boundary();
        plan_.steps.push_back({plan_.launches.size(), 0, recorded_ns, copy});
    }
    void end_step() { plan_.steps.back().launches = plan_.launches.size() - plan_.steps.back().first_launch; }

    // Before a copy of the last step: a recorded allocation that the step frees
    // but made before it now names the instance of its partner, which the step
    // before made.
    void carry_over(const std::vector<std::pair<uint32_t, uint32_t>>& freed_and_partner) {
        for (const auto& [freed, partner] : freed_and_partner) {
            auto it = live_.find(partner);
            if (it != live_.end()) live_[freed] = it->second;
        }
    }

    Plan finish() {
        resolve_streams();
        return std::move(plan_);
    }

private:
    struct LiveAllocation {
        uint32_t slot;
        uint64_t recorded_bytes;
    };
    struct LastUse {
        uint32_t launch;
        uint32_t stream;
    };

    uint64_t scaled(uint64_t value) const {
        if (scale_ == 1.0) return value;
        return static_cast<uint64_t>(std::llround(static_cast<double>(value) * scale_));
    }
    // Sizes stay whole 32-bit words, the kernel's touches.
    uint64_t scaled_bytes(uint64_t bytes) const {
        if (scale_ == 1.0) return bytes;
        return std::max<uint64_t>(4, (scaled(bytes) + 3) & ~uint64_t{3});
    }

    void alloc(const Alloc& a) {
        if (!is_managed(a.kind)) {
            ++plan_.skipped_allocations;
            return;
        }
        const uint32_t slot = plan_.slots++;
        const uint64_t bytes = scaled_bytes(a.size);
        live_[a.id] = {slot, a.size};
        slot_bytes_.push_back(bytes);
        last_use_.push_back(std::nullopt);
        live_bytes_ += bytes;
        plan_.peak_live_bytes = std::max(plan_.peak_live_bytes, live_bytes_);
        const AllocCall call = a.kind == AllocKind::Pooled ? AllocCall::StreamOrdered : AllocCall::Plain;
        plan_.ops.push_back({OpKind::Alloc, static_cast<uint32_t>(plan_.allocs.size())});
        plan_.allocs.push_back({slot, bytes, call, 0});
    }

    void free(const Free& f) {
        auto it = live_.find(f.id);
        if (it == live_.end()) return; // not managed, or never made: the library saw nothing either
        const uint32_t slot = it->second.slot;
        live_.erase(it);
        live_bytes_ -= slot_bytes_[slot];
        const AllocCall call = plan_.allocs[alloc_op_of(slot)].call;
        const auto& last = last_use_[slot];
        plan_.ops.push_back({OpKind::Free, static_cast<uint32_t>(plan_.frees.size())});
        plan_.frees.push_back({slot, call, last ? last->stream : kUnknownStream});
    }

    // Slots are handed out in the order of the alloc ops.
    size_t alloc_op_of(uint32_t slot) const { return slot; }

    uint32_t stream_index(uint64_t handle) {
        auto [it, inserted] = stream_of_handle_.try_emplace(handle, static_cast<uint32_t>(plan_.streams.size()));
        if (inserted) {
            plan_.streams.push_back(handle);
            for (auto& row : waited_) row.push_back(kNone);
            waited_.emplace_back(plan_.streams.size(), kNone);
        }
        return it->second;
    }

    void launch(const Launch& l, std::optional<uint64_t> step_start_ns) {
        const uint32_t index = static_cast<uint32_t>(plan_.launches.size());
        LaunchOp op;
        op.kernel_id = l.kernel_id;
        op.stream = stream_index(l.stream);
        op.duration_ns = scaled(l.duration_ns);
        if (step_start_ns) op.not_before_ns = scaled(l.time_ns > *step_start_ns ? l.time_ns - *step_start_ns : 0);
        op.first_touch = static_cast<uint32_t>(plan_.touches.size());
        op.first_wait = static_cast<uint32_t>(plan_.waits.size());
        if (trace_.has_accesses_of(l)) {
            for (const Access& a : trace_.accesses_of(l)) {
                auto it = live_.find(a.alloc_id);
                if (it == live_.end() || a.offset >= it->second.recorded_bytes) {
                    ++plan_.skipped_accesses;
                    continue;
                }
                const uint32_t slot = it->second.slot;
                const uint64_t bytes = slot_bytes_[slot];
                const uint64_t recorded_length = a.length ? a.length : it->second.recorded_bytes - a.offset;
                const uint64_t offset = std::min(scale_ == 1.0 ? a.offset : scaled(a.offset) & ~uint64_t{3}, bytes - 1);
                const uint64_t length = std::min(scaled(recorded_length), bytes - offset);
                plan_.touches.push_back({slot, offset, length});
                order_after_other_streams(slot, op.stream, op);
                last_use_[slot] = LastUse{index, op.stream};
            }
        }
        op.touch_count = static_cast<uint32_t>(plan_.touches.size()) - op.first_touch;
        op.wait_count = static_cast<uint32_t>(plan_.waits.size()) - op.first_wait;
        if (op.kernel_id >= plan_.kernel_max_touches.size()) plan_.kernel_max_touches.resize(op.kernel_id + 1, 0);
        plan_.kernel_max_touches[op.kernel_id] = std::max(plan_.kernel_max_touches[op.kernel_id], op.touch_count);
        plan_.ops.push_back({OpKind::Launch, index});
        plan_.launches.push_back(op);
    }

    // A launch waits for the latest earlier launch of another stream that used
    // the same allocation, unless its stream already waited for that one or a
    // later launch of that stream: the order a program keeps between streams
    // with events wherever data passes from one to the other.
    void order_after_other_streams(uint32_t slot, uint32_t stream, LaunchOp& op) {
        const auto& last = last_use_[slot];
        if (!last || last->stream == stream) return;
        uint32_t& waited = waited_[stream][last->stream];
        if (waited != kNone && waited >= last->launch) return;
        waited = last->launch;
        plan_.waits.push_back(last->launch);
        ++plan_.launches[last->launch].waiters;
    }

    // A stream-ordered allocation is made on the stream of its first use, and a
    // free without a use on the stream its allocation was made on.
    void resolve_streams() {
        std::vector<uint32_t> first_use(plan_.slots, kUnknownStream);
        for (const LaunchOp& l : plan_.launches)
            for (uint32_t t = 0; t < l.touch_count; ++t) {
                uint32_t& first = first_use[plan_.touches[l.first_touch + t].slot];
                if (first == kUnknownStream) first = l.stream;
            }
        for (AllocOp& a : plan_.allocs) a.stream = first_use[a.slot] == kUnknownStream ? 0 : first_use[a.slot];
        for (FreeOp& f : plan_.frees)
            if (f.stream == kUnknownStream) f.stream = plan_.allocs[alloc_op_of(f.slot)].stream;
        if (plan_.streams.empty()) plan_.streams.push_back(0);
    }

    static constexpr uint32_t kUnknownStream = UINT32_MAX;
    static constexpr uint32_t kNone = UINT32_MAX;

    const Trace& trace_;
    double scale_;
    Plan plan_;
    std::unordered_map<uint32_t, LiveAllocation> live_; // recorded id -> its instance now
    std::vector<uint64_t> slot_bytes_;
    std::vector<std::optional<LastUse>> last_use_; // by slot
    uint64_t live_bytes_ = 0;
    std::unordered_map<uint64_t, uint32_t> stream_of_handle_;
    std::vector<std::vector<uint32_t>> waited_; // [stream][other stream]: the latest launch of it waited for
};

// The recorded allocations that the step [begin, end) of `events` frees though
// they were made before it, each with an allocation of the step of the same
// size that outlives it and takes its place in the next copy. `closing_mark`:
// whether an iteration mark ends the step (for the refusal's wording).
std::vector<std::pair<uint32_t, uint32_t>> carried_allocations(const Trace& trace, const std::vector<Event>& events,
                                                               size_t begin, size_t end, bool closing_mark) {
    std::vector<size_t> made;     // trace.allocs indices, in order
    std::vector<uint32_t> freed;  // recorded ids, in order
    for (size_t at = begin; at < end; ++at) {
        const Event& e = events[at];
        if (e.kind == OpKind::Alloc && is_managed(trace.allocs[e.index].kind)) made.push_back(e.index);
        if (e.kind == OpKind::Free) freed.push_back(trace.frees[e.index].id);
    }
    std::unordered_map<uint32_t, size_t> made_here;
    for (size_t i : made) made_here[trace.allocs[i].id] = i;
    std::unordered_map<uint32_t, uint64_t> size_of;
    for (const Alloc& a : trace.allocs)
        if (is_managed(a.kind)) size_of[a.id] = a.size;
    std::vector<bool> freed_here(made.size(), false);
    for (uint32_t id : freed)
        if (auto it = made_here.find(id); it != made_here.end())
            freed_here[std::find(made.begin(), made.end(), it->second) - made.begin()] = true;

    std::vector<bool> taken(made.size(), false);
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    for (uint32_t id : freed) {
        if (made_here.count(id) || !size_of.count(id)) continue;
        size_t partner = made.size();
        for (size_t m = 0; m < made.size(); ++m) {
            if (taken[m] || freed_here[m] || trace.allocs[made[m]].size != size_of[id]) continue;
            partner = m;
            break;
        }
        if (partner == made.size())
            throw PlanError("the last step frees allocation " + std::to_string(id) + " (" +
                            std::to_string(size_of[id]) +
                            " bytes), made before it, and makes no allocation of that size that outlives it: "
                            "its copies would free memory that no longer exists" +
                            (closing_mark ? std::string()
                                          : std::string(" (with no iteration mark at its end, the step is cut from the "
                                                        "kernel sequence and may not begin or end where the "
                                                        "program's does)")));
        taken[partner] = true;
        pairs.emplace_back(id, trace.allocs[made[partner]].id);
    }
    return pairs;
}

} // namespace

Plan make_plan(const Trace& trace, std::span<const uint64_t> bounds, const PlanOptions& options) {
    if (!(options.scale > 0.0 && options.scale <= 1.0)) throw PlanError("the scale must be more than 0 and at most 1");
    const bool has_steps = bounds.size() >= 2;
    if (options.extra_steps > 0 && !has_steps) throw PlanError("the trace has no whole step to repeat");
    const std::vector<bool> after_mark = frees_after_marks(trace, bounds);
    const std::vector<Event> events = events_in_order(trace, bounds, after_mark);
    PlanBuilder builder(trace, options);
    auto emit_range = [&](size_t begin, size_t end, std::optional<uint64_t> step_start_ns) {
        for (size_t at = begin; at < end; ++at) builder.emit(events[at], step_start_ns);
    };
    auto recorded = [&](size_t k) -> std::optional<uint64_t> {
        const auto start = time_of_bound(trace, bounds[k]);
        const auto end = time_of_bound(trace, bounds[k + 1]);
        if (!start || !end || *end < *start) return std::nullopt;
        return static_cast<uint64_t>(std::llround(static_cast<double>(*end - *start) * options.scale));
    };

    if (!has_steps) {
        emit_range(0, events.size(), std::nullopt);
        Plan plan = builder.finish();
        plan.prologue_launches = plan.launches.size();
        return plan;
    }
    const std::vector<size_t> at = positions_of_bounds(trace, events, bounds, after_mark);
    const size_t last = bounds.size() - 2;
    std::vector<std::pair<uint32_t, uint32_t>> carried;
    if (options.extra_steps > 0) {
        const bool closing_mark = std::any_of(trace.iterations.begin(), trace.iterations.end(),
                                              [&](const Iteration& m) { return m.launches_before == bounds[last + 1]; });
        carried = carried_allocations(trace, events, at[last], at[last + 1], closing_mark);
    }

    emit_range(0, at[0], std::nullopt);
    const uint64_t prologue_launches = bounds[0];
    for (size_t k = 0; k <= last; ++k) {
        builder.begin_step(recorded(k), false);
        emit_range(at[k], at[k + 1], time_of_bound(trace, bounds[k]));
        builder.end_step();
    }
    // A copy is compared with the step it copies, or where the trace ends with that
    // step (its end unrecorded) with the latest step whose time is known.
    std::optional<uint64_t> copied_ns;
    for (size_t k = last + 1; k-- > 0 && !copied_ns;) copied_ns = recorded(k);
    for (uint32_t c = 0; c < options.extra_steps; ++c) {
        builder.carry_over(carried);
        builder.begin_step(copied_ns, true);
        emit_range(at[last], at[last + 1], time_of_bound(trace, bounds[last]));
        builder.end_step();
    }
    builder.boundary();
    emit_range(at[last + 1], events.size(), std::nullopt);
    Plan plan = builder.finish();
    plan.prologue_launches = prologue_launches;
    return plan;
}

} // namespace uvmp::replay

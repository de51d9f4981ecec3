// belady: the offline optimum's shape, from perfect knowledge of the trace.
// The lower bound that the learned policy is measured against.
#include "core/model/chunk_next_uses.h"
#include "core/model/chunk_schedule.h"
#include "core/policy/lookahead.h"

#include <algorithm>
#include <stdexcept>

namespace uvmp {
namespace {

class BeladyPolicy final : public LookaheadPolicy {
public:
    // The chunks never used again share one key, ranked by id in the queue's sorted run.
    BeladyPolicy(const ChunkSchedule& schedule, LookaheadConfig config)
        : LookaheadPolicy(config, ChunkNextUses::kNever), schedule_(schedule), schedule_future_(schedule.next_uses()),
          next_use_(schedule.chunk_slots(), ChunkNextUses::kNever),
          reused_before_(schedule.chunk_slots(), ChunkNextUses::kNeverStored) {}

    std::string_view name() const override { return "belady"; }

protected:
    bool begin_launch(const LaunchView& launch, const Residency& residency) override {
        if (launch.step >= schedule_.launch_count() || residency.chunk_slots() > next_use_.size())
            throw std::logic_error("belady: the launches planned are not the ones of its schedule");
        launch_pieces_ = schedule_future_.pieces(launch.step);
        return true;
    }

    std::optional<std::span<const ChunkRange>> future_ranges(uint64_t step, const Residency&) override {
        if (step >= schedule_.launch_count()) return std::nullopt;
        if (!schedule_future_.reuses_ids()) return schedule_.launch_ranges(step);
        // Looking ahead often asks for the launch it stopped at last time.
        if (step != future_step_) {
            keep_chunks_still_held_at(step, schedule_.launch_ranges(step), future_);
            future_step_ = step;
        }
        return future_;
    }

    uint64_t eviction_key(ChunkId chunk, const Residency&) const override { return next_use_[chunk]; }

    // Ranges come in ascending order, as the launch's pieces do.
    void on_touch(ChunkRange range, uint64_t) override {
        for_each_piece_in(range, [&](ChunkId first, ChunkId last, uint64_t next) {
            std::fill(next_use_.begin() + first, next_use_.begin() + last + 1, next);
        });
    }

    // A piece's chunks share their next use: one key for them all.
    void note_launch_keys(ChunkRange range, const Residency&) override {
        for_each_piece_in(range, [&](ChunkId first, ChunkId last, uint64_t next) { note_key({first, last}, next); });
    }

    // An allocation appeared with these chunks: the schedule's next allocation
    // event with chunks, whose first uses they take.
    void forget_chunks(ChunkRange chunks) override {
        const auto events = schedule_.events();
        while (next_event_ < events.size() && events[next_event_].chunk_count == 0) ++next_event_;
        if (next_event_ == events.size() || events[next_event_].first_chunk != chunks.first ||
            events[next_event_].chunk_count != chunks.last - chunks.first + 1)
            throw std::logic_error("belady: the allocations made are not the ones of its schedule");
        for (const ChunkNextUses::FirstUse& u : schedule_future_.first_uses(next_event_++)) {
            std::fill(next_use_.begin() + u.first, next_use_.begin() + u.last + 1, u.next_use());
            std::fill(reused_before_.begin() + u.first, reused_before_.begin() + u.last + 1, u.reused_before);
        }
    }

private:
    // The chunks of `ranges` whose ids no other allocation has by launch `step`:
    // what that launch touches in the others is not the memory they hold now.
    void keep_chunks_still_held_at(uint64_t step, std::span<const ChunkRange> ranges, std::vector<ChunkRange>& kept) {
        kept.clear();
        for (const ChunkRange& r : ranges) {
            for (ChunkId c = r.first; c <= r.last;) {
                ChunkId end = c;
                const bool held = reused_before_[c] > step;
                while (end < r.last && (reused_before_[end + 1] > step) == held) ++end;
                if (held) kept.push_back({c, end});
                if (end == r.last) break;
                c = end + 1;
            }
        }
    }

    // The parts of the current launch's pieces within `range`, in order.
    template <class F>
    void for_each_piece_in(ChunkRange range, F&& f) const {
        size_t k = std::partition_point(launch_pieces_.begin(), launch_pieces_.end(),
                                        [&](const ChunkNextUses::Piece& p) { return p.last < range.first; }) -
                   launch_pieces_.begin();
        for (; k < launch_pieces_.size() && launch_pieces_[k].first <= range.last; ++k) {
            const ChunkNextUses::Piece& p = launch_pieces_[k];
            f(std::max(p.first, range.first), std::min(p.last, range.last), p.next_use());
        }
    }

    const ChunkSchedule& schedule_;
    const ChunkNextUses& schedule_future_;
    std::vector<uint64_t> next_use_;
    // The launch before which each chunk's id goes to another allocation.
    std::vector<uint32_t> reused_before_;
    std::span<const ChunkNextUses::Piece> launch_pieces_; // the current launch's
    size_t next_event_ = 0; // the schedule's next event that forget_chunks looks at

    std::vector<ChunkRange> future_; // with ids reused: future_step_'s ranges still held
    uint64_t future_step_ = ChunkNextUses::kNever;
};

} // namespace

std::unique_ptr<Policy> make_belady_policy(const ChunkSchedule& schedule, LookaheadConfig config) {
    return std::make_unique<BeladyPolicy>(schedule, config);
}

} // namespace uvmp

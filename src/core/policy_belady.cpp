// belady: the offline optimum's shape, from perfect knowledge of the trace.
// The lower bound that the learned policy is measured against.
#include "core/policy_chunk_schedule.h"
#include "core/policy_lookahead.h"

#include <algorithm>
#include <stdexcept>

namespace uvmp {
namespace {

class BeladyPolicy final : public LookaheadPolicy {
public:
    // The chunks never used again share one key, ranked by id in the queue's sorted run.
    BeladyPolicy(const ChunkSchedule& schedule, LookaheadConfig config)
        : LookaheadPolicy(config, ChunkSchedule::kNever), schedule_(schedule), next_use_(schedule.chunk_slots()) {
        for (ChunkId c = 0; c < next_use_.size(); ++c) next_use_[c] = schedule.first_use(c);
    }

    std::string_view name() const override { return "belady"; }

protected:
    bool begin_launch(const LaunchView& launch, const Residency& residency) override {
        if (launch.step >= schedule_.launch_count() || residency.chunk_slots() > next_use_.size())
            throw std::logic_error("belady: the launches planned are not the ones of its schedule");
        launch_pieces_ = schedule_.pieces(launch.step);
        return true;
    }

    std::optional<std::span<const ChunkRange>> future_ranges(uint64_t step, const Residency&) override {
        if (step >= schedule_.launch_count()) return std::nullopt;
        // Looking ahead often asks for the launch it stopped at last time.
        if (step != future_step_) {
            schedule_.launch_ranges(step, future_);
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

private:
    // The parts of the current launch's pieces within `range`, in order.
    template <class F>
    void for_each_piece_in(ChunkRange range, F&& f) const {
        size_t k = std::partition_point(launch_pieces_.begin(), launch_pieces_.end(),
                                        [&](const ChunkSchedule::Piece& p) { return p.last < range.first; }) -
                   launch_pieces_.begin();
        for (; k < launch_pieces_.size() && launch_pieces_[k].first <= range.last; ++k) {
            const ChunkSchedule::Piece& p = launch_pieces_[k];
            f(std::max(p.first, range.first), std::min(p.last, range.last), p.next_use());
        }
    }

    const ChunkSchedule& schedule_;
    std::vector<uint64_t> next_use_;
    std::span<const ChunkSchedule::Piece> launch_pieces_; // the current launch's

    std::vector<ChunkRange> future_;
    uint64_t future_step_ = ChunkSchedule::kNever;
};

} // namespace

std::unique_ptr<Policy> make_belady_policy(const ChunkSchedule& schedule, LookaheadConfig config) {
    return std::make_unique<BeladyPolicy>(schedule, config);
}

} // namespace uvmp

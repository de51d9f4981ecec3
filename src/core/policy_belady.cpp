// belady: the offline optimum's shape, from perfect knowledge of the trace.
// The lower bound that the learned policy is measured against.
#include "core/policy_chunk_schedule.h"
#include "core/policy_lookahead.h"

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
        piece_ = 0;
        return true;
    }

    std::optional<std::span<const ChunkId>> future_chunks(uint64_t step, const Residency&) override {
        if (step >= schedule_.launch_count()) return std::nullopt;
        // Looking ahead often asks for the launch it stopped at last time.
        if (step != future_step_) {
            future_.clear();
            schedule_.append_chunks(step, future_);
            future_step_ = step;
        }
        return future_;
    }

    uint64_t eviction_key(ChunkId chunk, const Residency&) const override { return next_use_[chunk]; }

    // Chunks come in ascending order, as the launch's pieces do.
    void on_touch(ChunkId chunk, uint64_t, size_t) override {
        while (launch_pieces_[piece_].last < chunk) ++piece_;
        next_use_[chunk] = launch_pieces_[piece_].next_use();
    }

private:
    const ChunkSchedule& schedule_;
    std::vector<uint64_t> next_use_;
    // The current launch's pieces, and the one holding the chunk last touched.
    std::span<const ChunkSchedule::Piece> launch_pieces_;
    size_t piece_ = 0;
    std::vector<ChunkId> future_;
    uint64_t future_step_ = ChunkSchedule::kNever;
};

} // namespace

std::unique_ptr<Policy> make_belady_policy(const ChunkSchedule& schedule, LookaheadConfig config) {
    return std::make_unique<BeladyPolicy>(schedule, config);
}

} // namespace uvmp

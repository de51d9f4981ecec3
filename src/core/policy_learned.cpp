// learned: belady on the future that the predictor expects, using only what
// was seen so far. Beyond what it has looked ahead at, or when the prediction
// failed, chunks are ranked least recently used first, as demand-lru does.
#include "core/policy_lookahead.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <utility>

namespace uvmp {
namespace {

constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
// Keys at or above this are chunks with no predicted use; older ones rank higher.
// Forgetting the future raises many chunks there at once, and a launch's chunks
// go to its far end: the eviction queue keeps them in a sorted run.
constexpr uint64_t kUnpredicted = uint64_t{1} << 62;

class LearnedPolicy final : public LookaheadPolicy {
public:
    LearnedPolicy(PredictorConfig predictor, LookaheadConfig config, const LoopSeed* seed)
        : LookaheadPolicy(config, kUnpredicted), predictor_(predictor) {
        if (seed) predictor_.load_loop(*seed);
    }

    std::string_view name() const override { return "learned"; }
    std::optional<double> prediction_hit_rate() const override { return predictor_.hit_rate(); }

protected:
    bool begin_launch(const LaunchView& launch, const Residency& residency) override {
        current_step_ = launch.step;
        if (chunk_uses_.size() < residency.chunk_slots()) {
            chunk_uses_.resize(residency.chunk_slots());
            is_listed_.resize(residency.chunk_slots(), false);
        }
        predictor_.observe(launch.kernel_id, launch.accesses);
        drop_past_uses();
        return predictor_.continued();
    }

    std::optional<std::span<const ChunkRange>> future_ranges(uint64_t step, const Residency& residency) override {
        // Right after a miss the predictor's guess of where the program is can
        // be wrong, and acting on it moves many times the working set (the
        // first step's one-off set-up launches cause most misses). Demand
        // paging until predictions have held for a while.
        if (!predictor_.trusted()) return std::nullopt;
        const Predictor::Step* predicted = predictor_.predict(step - current_step_);
        if (!predicted) return std::nullopt;
        // Looking ahead restarts after every failed prediction and visits the
        // same launches again: keep their chunk ranges until an allocation
        // comes or goes.
        if (cached_layout_ != residency.layout_version()) {
            range_cache_.clear();
            cached_ranges_.clear();
            cached_layout_ = residency.layout_version();
        }
        auto [entry, added] = range_cache_.try_emplace(predicted->extent_hash);
        if (added) {
            residency.launch_ranges(predictor_.accesses(*predicted), range_scratch_);
            entry->second = {cached_ranges_.size(), range_scratch_.size()};
            cached_ranges_.insert(cached_ranges_.end(), range_scratch_.begin(), range_scratch_.end());
        }
        return std::span<const ChunkRange>(cached_ranges_.data() + entry->second.first, entry->second.second);
    }

    uint64_t eviction_key(ChunkId chunk, const Residency& residency) const override { return key_of(chunk, residency); }

    void on_touch(ChunkRange range, uint64_t step) override {
        for (ChunkId c = range.first; c <= range.last; ++c) {
            ChunkUses& uses = chunk_uses_[c];
            // Mostly the first predicted use is still ahead, or there is none.
            // (One dropped from uses_ never is: only uses before the current launch are dropped.)
            if (uses.head != kNone && uses.head_step <= step) pass_use(uses, step);
        }
    }

    void note_launch_keys(ChunkRange range, const Residency& residency) override {
        // The chunks of a tensor mostly share their key: noted as one run.
        ChunkId run_first = range.first;
        uint64_t run_key = key_of(run_first, residency);
        for (ChunkId c = range.first + 1; c <= range.last; ++c) {
            const uint64_t key = key_of(c, residency);
            if (key == run_key) continue;
            note_key({run_first, c - 1}, run_key);
            run_first = c;
            run_key = key;
        }
        note_key({run_first, range.last}, run_key);
    }

    void on_future_uses(ChunkRange chunks, uint64_t step) override {
        for (ChunkId chunk = chunks.first; chunk <= chunks.last; ++chunk) {
            ChunkUses& uses = chunk_uses_[chunk];
            const bool had_prediction = uses.head_step > current_step_;
            // Looking ahead again over launches it has seen (after an eviction sent
            // it back) finds uses already recorded.
            if (had_prediction && uses.tail_step >= step) continue;
            const uint64_t entry = uses_base_ + uses_.size();
            uses_.push_back({step, kNone});
            if (had_prediction) {
                uses_[uses.tail - uses_base_].next = entry;
            } else {
                uses.head = entry;
                uses.head_step = step;
                if (!is_listed_[chunk]) {
                    is_listed_[chunk] = true;
                    listed_.push_back(chunk);
                }
            }
            uses.tail = entry;
            uses.tail_step = step;
        }
    }

    void forget_future() override {
        for (ChunkId chunk : listed_) {
            is_listed_[chunk] = false;
            ChunkUses& uses = chunk_uses_[chunk];
            // Lists that ran out, or whose uses all went to history, stay as they are.
            if (uses.tail == kNone || uses.tail < uses_base_) continue;
            key_changed(chunk);
            uses = ChunkUses{};
        }
        listed_.clear();
        uses_base_ += uses_.size();
        uses_.clear();
        uses_front_ = 0;
    }

private:
    // Future uses found by looking ahead, in launch order; per chunk a list
    // through `next`, from ChunkUses::head to ChunkUses::tail. Indices are
    // absolute: uses_base_ is the index of uses_[0].
    struct PredictedUse {
        uint64_t step;
        uint64_t next;
    };

    // A chunk's list with the steps of its ends, so that looking ahead and
    // ranking read one record and not the uses themselves.
    struct ChunkUses {
        uint64_t head = kNone;
        uint64_t tail = kNone;
        uint64_t head_step = 0; // 0: none (a predicted use comes after some launch)
        uint64_t tail_step = 0;
    };

    uint64_t key_of(ChunkId chunk, const Residency& residency) const {
        const uint64_t step = predicted_use(chunk);
        if (step != kNone) return step;
        return kUnpredicted + (kUnpredicted - 1 - std::min(residency.last_use(chunk), kUnpredicted - 1));
    }

    // The use at or before `step` was the first predicted one: the next predicted use moves up.
    void pass_use(ChunkUses& uses, uint64_t step) const {
        uint64_t entry = uses.head;
        while (entry != kNone && (entry < uses_base_ || uses_[entry - uses_base_].step <= step))
            entry = entry < uses_base_ ? kNone : uses_[entry - uses_base_].next;
        if (entry == kNone) {
            uses = ChunkUses{};
        } else {
            uses.head = entry;
            uses.head_step = uses_[entry - uses_base_].step;
        }
    }

    uint64_t predicted_use(ChunkId chunk) const {
        // A use at or before the current launch did not happen: no prediction.
        const uint64_t step = chunk_uses_[chunk].head_step;
        return step > current_step_ ? step : kNone;
    }

    // Uses up to the current launch are history; drop them now and then.
    void drop_past_uses() {
        while (uses_front_ < uses_.size() && uses_[uses_front_].step < current_step_) ++uses_front_;
        // Only when most are history: what stays is moved, and the less of it the better.
        if (uses_front_ > 4096 && uses_front_ * 4 > uses_.size() * 3) {
            const uint64_t new_base = uses_base_ + uses_front_;
            // A list whose first use went unused still leads on to later ones: skip
            // what is dropped now, as on_touch would, so that when uses are dropped
            // changes nothing. (Only listed chunks have lists in uses_.)
            for (ChunkId chunk : listed_) {
                ChunkUses& uses = chunk_uses_[chunk];
                while (uses.head != kNone && uses.head >= uses_base_ && uses.head < new_base)
                    uses.head = uses_[uses.head - uses_base_].next;
            }
            uses_.erase(uses_.begin(), uses_.begin() + static_cast<std::ptrdiff_t>(uses_front_));
            uses_base_ = new_base;
            uses_front_ = 0;
        }
    }

    Predictor predictor_;
    uint64_t current_step_ = 0;
    // Chunk ranges of predicted launches by extent hash: (start, count) in cached_ranges_.
    std::unordered_map<uint64_t, std::pair<size_t, size_t>> range_cache_;
    std::vector<ChunkRange> cached_ranges_;
    std::vector<ChunkRange> range_scratch_;
    uint64_t cached_layout_ = UINT64_MAX;
    std::vector<PredictedUse> uses_;
    uint64_t uses_base_ = 0;
    size_t uses_front_ = 0;
    std::vector<ChunkUses> chunk_uses_;
    // Chunks that started a list since the future was last forgotten, each once
    // (a steady loop starts one per chunk every iteration and never forgets):
    // forgetting visits them, not every use.
    std::vector<ChunkId> listed_;
    std::vector<bool> is_listed_;
};

} // namespace

std::unique_ptr<Policy> make_learned_policy(PredictorConfig predictor, LookaheadConfig config, const LoopSeed* seed) {
    return std::make_unique<LearnedPolicy>(predictor, config, seed);
}

} // namespace uvmp

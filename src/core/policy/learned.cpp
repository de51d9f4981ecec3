// learned: belady on the future that the predictor expects, using only what
// was seen so far. Beyond what it has looked ahead at, or when the prediction
// failed, chunks are ranked least recently used first, as demand-lru does.
#include "core/policy/launch_range_cache.h"
#include "core/policy/lookahead.h"

#include <algorithm>
#include <limits>

namespace uvmp {
namespace {

constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
// Keys at or above this are chunks with no predicted use; older ones rank higher.
// Forgetting the future raises many chunks there at once, and a launch's chunks
// go to its far end: the eviction queue keeps them in a sorted run.
constexpr uint64_t kUnpredicted = uint64_t{1} << 62;
// Allocations smaller than this are evicted last among chunks with no predicted use.
constexpr uint64_t kSmallChunkBytes = uint64_t{1} << 20;

class LearnedPolicy final : public LookaheadPolicy {
public:
    LearnedPolicy(PredictorConfig predictor, LookaheadConfig config, const LoopSeed* seed)
        : LookaheadPolicy(config, kUnpredicted), predictor_(predictor), blocks_reuse_in_place_(config.blocks_reuse_in_place) {
        if (seed) predictor_.load_loop(*seed);
    }

    std::string_view name() const override { return "learned"; }
    std::optional<double> prediction_hit_rate() const override { return predictor_.hit_rate(); }

protected:
    bool begin_launch(const LaunchView& launch, const Residency& residency) override {
        current_step_ = launch.step;
        budget_chunks_ = residency.budget_bytes() / residency.chunk_bytes();
        grow_to(residency.chunk_slots());
        residency_ = &residency;
        predictor_.observe(launch.kernel_id, launch.accesses, state_of_);
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
        // Keyed by what the launch is expected to touch (what stands in for what included).
        uint64_t key = 0;
        const auto expected = predictor_.expected_accesses(*predicted, step - current_step_, access_scratch_, key);
        if (const auto cached = range_cache_.find(key, residency.layout_version())) return cached;
        residency.launch_ranges(expected, range_scratch_);
        return range_cache_.store(key, residency.layout_version(), range_scratch_);
    }

    uint64_t eviction_key(ChunkId chunk, const Residency& residency) const override { return key_of(chunk, residency); }

    // A program that allocates anew inside its loop (every free seen, as with a
    // stream-ordered pool) brings fresh memory into the budget that the
    // predictor does not foresee: each byte swapped in ahead of its use is then
    // swapped out again for a fresh allocation, and the next uses found through
    // stand-ins rank its chunks no better than recency does. Such a program is
    // served by fetching ahead into free room only, and by evicting the least
    // recently used chunks first.
    bool swaps_to_fetch_ahead() const override { return !allocates_in_loop_; }
    // Fresh chunks counted over windows of launches: a program that caches its
    // memory still allocates now and then, far less than its budget a window.
    void note_fresh_chunks(ChunkRange chunks) {
        if (!blocks_reuse_in_place_ || allocates_in_loop_ || !predictor_.trusted()) return;
        if (current_step_ >= window_start_ + kAllocationWindow) {
            window_start_ = current_step_;
            window_chunks_ = 0;
        }
        window_chunks_ += chunks.last - chunks.first + 1;
        if (window_chunks_ * 4 < budget_chunks_) return;
        allocates_in_loop_ = true;
        keys_changed_all();
    }

    void on_touch(ChunkRange range, uint64_t step) override {
        for (ChunkId c = range.first; c <= range.last;) {
            const ChunkId first = run_of_[c];
            const ChunkId last = std::min(run_last_[first], range.last);
            const UseList& list = lists_[first];
            // Mostly the first predicted use is still ahead, or there is none.
            // (One dropped from uses_ never is: only uses before the current launch are dropped.)
            if (list.head != kNone && list.head_step <= step) {
                isolate({c, last});
                pass_use(lists_[c], step);
            }
            c = last + 1;
        }
    }

    void note_launch_keys(ChunkRange range, const Residency& residency) override { note_keys_by_run(range, residency); }
    void note_fetched_keys(ChunkRange range, const Residency& residency) override { note_keys_by_run(range, residency); }

    void on_future_uses(ChunkRange chunks, uint64_t step) override {
        for (ChunkId c = chunks.first; c <= chunks.last;) {
            const ChunkId first = run_of_[c];
            ChunkId last = std::min(run_last_[first], chunks.last);
            const bool had_prediction = has_prediction(lists_[first]);
            if (!had_prediction) {
                // Runs side by side that all start a list now become one run.
                while (last < chunks.last && !has_prediction(lists_[last + 1]))
                    last = std::min(run_last_[last + 1], chunks.last);
                start_list({c, last}, step);
            } else if (lists_[first].tail_step < step) {
                // (Looking ahead again over launches it has seen, after an eviction
                // sent it back, finds uses already recorded: those are left.)
                isolate({c, last});
                append_use(lists_[c], step);
            }
            c = last + 1;
        }
    }

    void forget_chunks(ChunkRange chunks) override {
        note_fresh_chunks(chunks);
        grow_to(chunks.last + 1);
        // The runs around them keep their lists; theirs are the old memory's.
        cut_around(chunks);
        for (ChunkId c = chunks.first; c <= chunks.last; ++c) {
            run_of_[c] = c;
            run_last_[c] = c;
            lists_[c] = UseList{};
        }
    }

    void forget_future() override {
        for (ChunkId chunk : listed_) {
            is_listed_[chunk] = false;
            // A run's first chunk stands for it (all chunks of a run with a live list are listed).
            if (run_of_[chunk] != chunk) continue;
            UseList& list = lists_[chunk];
            // Lists that ran out, or whose uses all went to history, stay as they are.
            if (list.tail == kNone || list.tail < uses_base_) continue;
            for (ChunkId c = chunk; c <= run_last_[chunk]; ++c) key_changed(c);
            list = UseList{};
        }
        listed_.clear();
        uses_base_ += uses_.size();
        uses_.clear();
        uses_front_ = 0;
    }

private:
    // Future uses found by looking ahead, in launch order; per list a chain
    // through `next`, from UseList::head to UseList::tail. Indices are
    // absolute: uses_base_ is the index of uses_[0].
    struct PredictedUse {
        uint64_t step;
        uint64_t next;
    };

    // A run's chain with the steps of its ends, so that looking ahead and
    // ranking read one record and not the uses themselves.
    struct UseList {
        uint64_t head = kNone;
        uint64_t tail = kNone;
        uint64_t head_step = 0; // 0: none (a predicted use comes after some launch)
        uint64_t tail_step = 0;
    };

    bool has_prediction(const UseList& list) const { return list.head_step > current_step_; }

    // New chunk ids start as runs of their own.
    void grow_to(size_t slots) {
        for (ChunkId c = static_cast<ChunkId>(run_of_.size()); c < slots; ++c) {
            run_of_.push_back(c);
            run_last_.push_back(c);
        }
        lists_.resize(run_of_.size());
        is_listed_.resize(run_of_.size(), 0);
    }

    uint64_t key_of(ChunkId chunk, const Residency& residency) const {
        if (allocates_in_loop_) return unpredicted_key(chunk, residency);
        const uint64_t step = lists_[run_of_[chunk]].head_step;
        return step > current_step_ ? step : unpredicted_key(chunk, residency);
    }

    // An allocation of one chunk, shorter than kSmallChunkBytes (not the short
    // last chunk of a larger one, which goes with the rest).
    static bool is_small_allocation(ChunkId chunk, const Residency& residency) {
        return residency.allocation_last_chunk(chunk) == chunk && residency.chunk_offset(chunk) == 0 &&
               residency.chunk_size(chunk) < kSmallChunkBytes;
    }

    // A use at or before the current launch did not happen: ranked by recency,
    // but for small chunks, which rank as if just used. A move costs the driver
    // some 40 us whatever its size, in which the link carries 0.7-2 MB: moving a
    // small tensor (a bias, its optimizer state) out and back frees almost
    // nothing of the budget for two calls' time.
    static uint64_t unpredicted_key(ChunkId chunk, const Residency& residency) {
        if (is_small_allocation(chunk, residency)) return kUnpredicted;
        return kUnpredicted + (kUnpredicted - 1 - std::min(residency.last_use(chunk), kUnpredicted - 1));
    }

    void note_keys_by_run(ChunkRange range, const Residency& residency) {
        for (ChunkId c = range.first; c <= range.last;) {
            const ChunkId first = run_of_[c];
            const ChunkId last = std::min(run_last_[first], range.last);
            if (has_prediction(lists_[first])) {
                note_key({c, last}, lists_[first].head_step);
            } else {
                // Chunks used together rank alike.
                for (ChunkId k = c; k <= last;) {
                    const uint64_t key = unpredicted_key(k, residency);
                    ChunkId end = k;
                    while (end < last && unpredicted_key(end + 1, residency) == key) ++end;
                    note_key({k, end}, key);
                    k = end + 1;
                }
            }
            c = last + 1;
        }
    }

    // The use at or before `step` was the first predicted one: the next predicted use moves up.
    void pass_use(UseList& list, uint64_t step) const {
        uint64_t entry = list.head;
        while (entry != kNone && (entry < uses_base_ || uses_[entry - uses_base_].step <= step))
            entry = entry < uses_base_ ? kNone : uses_[entry - uses_base_].next;
        if (entry == kNone) {
            list = UseList{};
        } else {
            list.head = entry;
            list.head_step = uses_[entry - uses_base_].step;
        }
    }

    void append_use(UseList& list, uint64_t step) {
        const uint64_t entry = uses_base_ + uses_.size();
        uses_.push_back({step, kNone});
        uses_[list.tail - uses_base_].next = entry;
        list.tail = entry;
        list.tail_step = step;
    }

    // The chunks in `range`, of any runs, become one run whose list is `step` alone.
    void start_list(ChunkRange range, uint64_t step) {
        cut_around(range);
        run_last_[range.first] = range.last;
        std::fill(run_of_.begin() + range.first, run_of_.begin() + range.last + 1, range.first);
        for (ChunkId c = range.first; c <= range.last; ++c) {
            if (is_listed_[c]) continue;
            is_listed_[c] = true;
            listed_.push_back(c);
        }
        const uint64_t entry = uses_base_ + uses_.size();
        uses_.push_back({step, kNone});
        lists_[range.first] = {entry, entry, step, step};
    }

    // Makes `range`, which lies in one run, a run of its own; the parts of
    // that run around it get copies of its list.
    void isolate(ChunkRange range) {
        split_before(range.first);
        if (range.last + 1 < run_of_.size()) split_before(range.last + 1);
    }

    void split_before(ChunkId chunk) {
        const ChunkId first = run_of_[chunk];
        if (first == chunk) return;
        cut_before(chunk);
        lists_[chunk] = copy_of(lists_[first]);
    }

    // Runs end before `range` and after it; the parts outside keep their runs'
    // lists. The chunks inside are left to the caller, their lists unset.
    void cut_around(ChunkRange range) {
        if (range.last + 1 < run_of_.size() && run_of_[range.last + 1] != range.last + 1) {
            const ChunkId owner = run_of_[range.last + 1];
            cut_before(range.last + 1);
            // A run that also goes on before the range keeps its list there: the
            // part after needs a chain of its own.
            lists_[range.last + 1] = owner < range.first ? copy_of(lists_[owner]) : lists_[owner];
        }
        if (run_of_[range.first] != range.first) cut_before(range.first);
    }

    // Ends the run holding `chunk` before it; the rest becomes a run with no list set.
    void cut_before(ChunkId chunk) {
        const ChunkId first = run_of_[chunk];
        const ChunkId last = run_last_[first];
        run_last_[first] = chunk - 1;
        run_last_[chunk] = last;
        std::fill(run_of_.begin() + chunk, run_of_.begin() + last + 1, chunk);
    }

    UseList copy_of(const UseList& list) {
        if (list.head == kNone) return list;
        UseList copy = list;
        uint64_t previous = kNone;
        for (uint64_t entry = list.head; entry != kNone; entry = uses_[entry - uses_base_].next) {
            const uint64_t added = uses_base_ + uses_.size();
            uses_.push_back({uses_[entry - uses_base_].step, kNone});
            if (previous == kNone) copy.head = added;
            else uses_[previous - uses_base_].next = added;
            previous = added;
        }
        copy.tail = previous;
        return copy;
    }

    // Uses up to the current launch are history; drop them now and then.
    void drop_past_uses() {
        while (uses_front_ < uses_.size() && uses_[uses_front_].step < current_step_) ++uses_front_;
        // Only when most are history: what stays is moved, and the less of it the better.
        if (uses_front_ > 4096 && uses_front_ * 4 > uses_.size() * 3) {
            const uint64_t new_base = uses_base_ + uses_front_;
            // A list whose first use went unused still leads on to later ones: skip
            // what is dropped now, as on_touch would, so that when uses are dropped
            // changes nothing. (Only runs with listed chunks have lists in uses_.)
            for (ChunkId chunk : listed_) {
                if (run_of_[chunk] != chunk) continue;
                UseList& list = lists_[chunk];
                while (list.head != kNone && list.head >= uses_base_ && list.head < new_base)
                    list.head = uses_[list.head - uses_base_].next;
            }
            // A list whose uses all go now leaves nothing to forget: its chunks
            // leave listed_, which otherwise grows with every allocation a
            // program ever makes when it allocates anew each step.
            std::erase_if(listed_, [&](ChunkId chunk) {
                const UseList& list = lists_[run_of_[chunk]];
                const bool spent = list.tail == kNone || list.tail < new_base;
                if (spent) is_listed_[chunk] = false;
                return spent;
            });
            uses_.erase(uses_.begin(), uses_.begin() + static_cast<std::ptrdiff_t>(uses_front_));
            uses_base_ = new_base;
            uses_front_ = 0;
        }
    }

    Predictor predictor_;
    // Liveness lets buffers allocated anew each step stand in for the last step's.
    // Made once: the residency model is the current launch's.
    const Residency* residency_ = nullptr;
    const Predictor::StateOf state_of_ = [this](uint32_t alloc_id) {
        using State = Predictor::AllocState;
        return residency_->is_live(alloc_id) ? State::Live : residency_->was_removed(alloc_id) ? State::Freed : State::Unknown;
    };
    uint64_t current_step_ = 0;
    const bool blocks_reuse_in_place_;
    // Fresh blocks came while predictions were trusted (see swaps_to_fetch_ahead).
    bool allocates_in_loop_ = false;
    static constexpr uint64_t kAllocationWindow = 4096;
    uint64_t window_start_ = 0;
    uint64_t window_chunks_ = 0;
    uint64_t budget_chunks_ = 0;
    LaunchRangeCache range_cache_;
    std::vector<ChunkRange> range_scratch_;
    std::vector<trace::Access> access_scratch_;
    std::vector<PredictedUse> uses_;
    uint64_t uses_base_ = 0;
    size_t uses_front_ = 0;
    // Adjacent chunks with the same predicted uses (the chunks of a tensor, mostly)
    // share one list: they form a run, split where a launch or a look ahead
    // covers only part of it. Per chunk the first chunk of its run; per run, at
    // its first chunk, its last chunk and its list.
    std::vector<ChunkId> run_of_;
    std::vector<ChunkId> run_last_;
    std::vector<UseList> lists_;
    // Chunks that started a list since the future was last forgotten, each once
    // (a steady loop starts one per chunk every iteration and never forgets):
    // forgetting visits them, not every use.
    std::vector<ChunkId> listed_;
    std::vector<uint8_t> is_listed_;
};

} // namespace

std::unique_ptr<Policy> make_learned_policy(PredictorConfig predictor, LookaheadConfig config, const LoopSeed* seed) {
    return std::make_unique<LearnedPolicy>(predictor, config, seed);
}

} // namespace uvmp

// Learns the launch sequence of a program online and predicts the launches that
// come next. Only what has been seen so far is used, so the same object serves
// the preloaded library and the simulator's `learned` policy.
//
// A launch is identified by its signature: the kernel id and where each access
// starts. While learning, every launch is appended to a history; the current
// launch is located in it by following the previous match one step on, or,
// when that fails, by re-synchronising: among the earlier launches with the
// same signature (else the same kernel) the one whose preceding kernels best
// match the live ones wins.
//
// The same launch of the next iteration need not be identical: allocators hand
// small buffers (scalars, statistics) different offsets from step to step. A
// launch therefore also counts as the predicted one when its kernel is the
// predicted kernel and at least half of its accesses name allocations the
// prediction names, or allocations standing in for them (below), whether or
// not the two lists have the same length.
//
// Some programs allocate their buffers anew every step (no caching allocator,
// or one that releases memory between steps): the same launch of the next
// step names other allocation ids. When a predicted access names an
// allocation that has been freed, and the live launch names a live one at the
// same place in its list (same offset), the live one takes the freed one's
// place: it stands in for it in later predictions of the same iteration (by
// the next, the program will have allocated anew), until another takes the
// place in turn or the learned one comes back. Once a loop is frozen, a live
// allocation also takes the place of one not freed yet (a program may free the
// last step's buffer only after making the new one). Without liveness (observe
// with no callback) nothing stands in; before a loop is frozen an allocation
// still in use is never replaced, so that in a program's first step one buffer
// is not taken for another.
//
// Once a run of consecutive correct predictions
// covers a whole period (the distance between the live launch and its match),
// the most recent period is frozen into a loop and the history dropped.
#pragma once

#include "core/trace/format/model.h"

#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

namespace uvmp {

struct LoopSeed;

struct PredictorConfig {
    // Preceding launches compared when re-synchronising.
    uint32_t context_length = 8;
    // A loop is frozen only after at least this many consecutive hits, so that a
    // kernel repeated a few times inside an iteration is not taken for the loop.
    uint32_t min_confirm_hits = 8;
    // Predictions are trusted once this many launches in a row were predicted,
    // or a whole period of them when the loop is shorter.
    uint32_t trust_hits = 32;
    // Learning stops (predictions continue) once the history holds this many launches:
    // about 250 bytes each, so at most about 64 MiB for a program that never repeats,
    // while loops of up to about 130 000 launches are still found.
    uint64_t max_history = 1u << 18;
    // Candidates examined per re-synchronisation, most recent first.
    uint32_t max_candidates = 64;
};

class Predictor {
public:
    struct Step {
        uint32_t kernel_id = 0;
        uint64_t signature = 0;
        // Also covers the accesses' lengths, which the signature leaves out:
        // equal extent hashes mean equal chunk lists.
        uint64_t extent_hash = 0;
        uint32_t first_access = 0;
        uint32_t access_count = 0;
    };

    explicit Predictor(PredictorConfig config = {});

    // Starts from a loop learned in an earlier run: frozen, not yet located.
    void load_loop(const LoopSeed& seed);

    // What an allocation id names now. Unknown covers memory the caller does not
    // track: it is never taken for freed.
    enum class AllocState : uint8_t { Unknown, Live, Freed };
    using StateOf = std::function<AllocState(uint32_t alloc_id)>;

    // Feeds the live launch. True when it was the predicted one. With `state_of`,
    // live allocations may stand in for freed ones (see above).
    bool observe(uint32_t kernel_id, std::span<const trace::Access> accesses, const StateOf& state_of = {});

    // The launch predicted `ahead` (>= 1) launches after the last observed one,
    // or nullptr when nothing is known that far.
    const Step* predict(uint64_t ahead) const;
    // The step's accesses as learned.
    std::span<const trace::Access> accesses(const Step& step) const;
    // What the launch predicted `ahead` launches on (`step`, from predict) is
    // expected to touch: its accesses with each freed allocation replaced by what
    // stands in for it, where that still holds there. A stand-in taken at some
    // launch holds for less than a loop after it: by the same place in the next
    // iteration the program has allocated anew, and the one standing in now will
    // be gone. Uses `scratch` when something is replaced. `key` gets a hash of the
    // result: the step's extent_hash when nothing is replaced.
    std::span<const trace::Access> expected_accesses(const Step& step, uint64_t ahead,
                                                     std::vector<trace::Access>& scratch, uint64_t& key) const;
    // Allocations standing in for others.
    size_t stand_in_count() const { return stand_in_count_; }

    bool located() const { return located_; }
    // True when the last observed launch was the predicted continuation of the
    // one before: predictions made before it still hold, shifted by one.
    bool continued() const { return continued_; }
    bool frozen() const { return frozen_; }
    // Located, and the recent launches all came as predicted: worth acting on.
    bool trusted() const;
    // Launches per loop once frozen, else 0.
    uint64_t period() const { return frozen_ ? steps_.size() : 0; }

    uint64_t predictions() const { return predictions_; }
    uint64_t hits() const { return hits_; }
    uint64_t resyncs() const { return resyncs_; }
    // Hits over launches for which a prediction existed; 0 before any.
    double hit_rate() const { return predictions_ ? static_cast<double>(hits_) / static_cast<double>(predictions_) : 0.0; }

    // Kernel and where each access starts. Lengths are left out: they are
    // inferred (access_extents.h), and an inference from another window of
    // launches must not make the same launch look different.
    static uint64_t signature_of(uint32_t kernel_id, std::span<const trace::Access> accesses);
    static uint64_t extent_hash_of(uint64_t signature, std::span<const trace::Access> accesses);

private:
    uint64_t next_position(uint64_t position) const;
    bool has_next(uint64_t position) const;
    void resync(uint32_t kernel_id, uint64_t signature);
    uint32_t context_score(uint64_t candidate) const;
    bool resembles(const Step& expected, std::span<const trace::Access> accesses, const StateOf& state_of) const;
    struct StandIn {
        uint32_t alloc_id = kNoStandIn;
        uint64_t since = 0; // the launch (counted from 0) where it took the place
    };
    static constexpr uint32_t kNoStandIn = UINT32_MAX;
    // What the allocation at `place`, learned as `alloc_id`, names now.
    uint32_t stand_in(uint32_t place, uint32_t alloc_id) const;
    std::span<const uint32_t> places(const Step& step) const;
    void add_places(std::span<const trace::Access> accesses);
    // Launches from the current one to where the program repeats it: the loop's
    // length, or while learning the distance back to the launch's match.
    uint64_t repeat_distance() const;
    // Whether the live access takes the place of the predicted one, whose
    // allocation (or what stood in for it) has been freed.
    // `place` is the known access's allocation's (see places_).
    bool replaces(uint32_t place, const trace::Access& known, const trace::Access& live, const StateOf& state_of) const;
    void note_stand_ins(const Step& expected, std::span<const trace::Access> accesses, const StateOf& state_of);
    void append(uint32_t kernel_id, uint64_t signature, std::span<const trace::Access> accesses);
    void push_step(uint32_t kernel_id, uint64_t signature, std::span<const trace::Access> accesses);
    void maybe_freeze();
    void unfreeze();
    // Makes the most recent kept loop holding this launch's kernel the current
    // one, located at the launch; false when no kept loop holds it.
    bool switch_to_kept_loop(uint32_t kernel_id, uint64_t signature);
    void keep_current_loop();
    void rebuild_index();

    PredictorConfig config_;
    // The history while learning, the loop once frozen.
    std::vector<Step> steps_;
    std::vector<trace::Access> step_accesses_;
    struct Loop {
        std::vector<Step> steps;
        std::vector<trace::Access> accesses;
    };
    static constexpr size_t kKeptLoops = 4;
    std::vector<Loop> kept_loops_; // left earlier, most recent last
    // Where each signature and each kernel last occurs in steps_, and per step
    // the occurrence before it: candidates, most recent first, without a list
    // per signature (a program that allocates anew every step makes a new
    // signature every launch).
    static constexpr uint32_t kNoPosition = UINT32_MAX;
    struct Earlier {
        uint32_t same_signature = kNoPosition;
        uint32_t same_kernel = kNoPosition;
    };
    std::vector<Earlier> earlier_;
    // Per learned access (beside step_accesses_), its allocation's place: the
    // learned allocations numbered from 0, so that what stands in for one is a
    // table entry and not a hash look-up, which every predicted launch made for
    // each of its accesses.
    std::vector<uint32_t> places_;
    std::unordered_map<uint32_t, uint32_t> place_of_id_;
    // By place: the live allocation standing in for the learned one. Renumbered
    // and cleared when the loop is replaced.
    std::vector<StandIn> stand_ins_;
    size_t stand_in_count_ = 0;
    std::unordered_map<uint64_t, uint32_t> latest_of_signature_;
    std::unordered_map<uint32_t, uint32_t> latest_of_kernel_;
    void index_step(uint32_t position);
    // Kernels of the most recent live launches: a ring of context_length
    // entries; recent_count_ counts every launch ever pushed.
    std::vector<uint32_t> recent_;
    uint64_t recent_count_ = 0;
    uint32_t recent_kernel(uint64_t back) const;

    bool frozen_ = false;
    bool learning_ = true;
    bool located_ = false;
    bool continued_ = false;
    uint64_t position_ = 0;
    uint64_t consecutive_hits_ = 0;
    uint64_t predictions_ = 0;
    uint64_t hits_ = 0;
    uint64_t resyncs_ = 0;
};

} // namespace uvmp

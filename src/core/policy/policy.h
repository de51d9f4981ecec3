// What to move around one kernel launch. A policy sees each launch in order,
// decides which chunks to evict, which of the launch's chunks fault in on demand
// and which chunks to fetch ahead for later launches, and updates the residency
// model to the state those moves lead to. The executor (online) or the
// simulator (offline) then carries the moves out, evictions first.
//
// Invariants every policy keeps: a pinned chunk (needed by the current or a
// running kernel) is never evicted; resident bytes stay within the budget unless
// the launch's own chunks alone exceed it.
#pragma once

#include "core/learn/predictor.h"
#include "core/model/residency.h"
#include "core/trace/format/model.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uvmp {

class ChunkSchedule;
struct LoopSeed;

struct LaunchView {
    uint64_t step = 0; // launch index in the program, counting from 0
    uint32_t kernel_id = 0;
    std::span<const trace::Access> accesses;
    // The chunks the accesses touch: ascending ranges, none overlapping
    // (Residency::launch_ranges, or finer).
    std::span<const ChunkRange> ranges;
};

// A run of adjacent chunks of one allocation: one transfer call.
struct ChunkSpan {
    ChunkId first = 0;
    uint32_t count = 0;
};

struct Plan {
    std::vector<ChunkSpan> evict;    // GPU -> host, before anything else
    std::vector<ChunkSpan> demand;   // the launch's chunks that fault in while it runs
    std::vector<ChunkSpan> prefetch; // host -> GPU ahead of use, most urgent first

    void clear();
    // Appends a chunk, extending the last span when it is the next chunk of the
    // same allocation, so that transfers come out as large contiguous pieces.
    static void add(std::vector<ChunkSpan>& spans, ChunkId chunk, const Residency& residency);
    // The same for first..last, cut where an allocation ends.
    static void add(std::vector<ChunkSpan>& spans, ChunkRange range, const Residency& residency);
    static uint64_t bytes(std::span<const ChunkSpan> spans, const Residency& residency);
    // Evictions come out in the policy's order of victims, scattered over memory;
    // their order does not matter, so they are sorted and adjacent ones merged
    // into as few transfer calls as possible.
    void coalesce_evictions(const Residency& residency);
};

class Policy {
public:
    virtual ~Policy() = default;
    virtual std::string_view name() const = 0;
    // Plans the moves around one launch and applies them to `residency`. The
    // launch's chunks are pinned by the caller for the duration of the call.
    virtual void plan(const LaunchView& launch, Residency& residency, Plan& out) = 0;
    // The residency model just handed these chunks to a new allocation. With
    // reused ids (ChunkIds::Reused) they may have been a removed allocation's:
    // whatever the policy knew of them is about other memory. Called after
    // Residency::add_allocation, before the next plan.
    virtual void on_allocation_added(ChunkRange chunks) {}
    // Share of launches whose successor was predicted correctly, for policies that predict.
    virtual std::optional<double> prediction_hit_rate() const { return std::nullopt; }
    // Whether the plan's demand chunks are to be fetched too, beside the kernel that
    // faults on them (a prefetch is 6-7x faster than faulting), rather than left to the
    // faults alone as unified memory would on its own.
    virtual bool fetches_demand() const { return true; }
    // Whether plan() reads the residency model's recency list (lru_front). The
    // model keeps it only for policies that do (Residency::keep_recency_order).
    virtual bool reads_recency_order() const { return true; }
};

enum class PolicyKind { DemandLru, Belady, Learned };

std::optional<PolicyKind> parse_policy_kind(std::string_view name);
std::string_view policy_kind_name(PolicyKind kind);
// Whether the policy reads when each chunk is touched next (ChunkSchedule::next_uses).
bool reads_next_uses(PolicyKind kind);

struct LookaheadConfig {
    // How far past the current launch prefetching may reach.
    uint64_t max_lookahead_launches = 4096;
    // The program's memory comes in blocks of the library's pool, placed over
    // dead memory in place (core/model/reuse_in_place.h): a fresh block enters
    // the budget when it is made, which the predictor does not foresee. Once
    // such a program allocates in its loop, learned fetches ahead only into free
    // room and evicts the least recently used first (see learned.cpp).
    bool blocks_reuse_in_place = false;
};

// No prefetching; a launch's missing chunks fault in; least recently used chunks go first.
std::unique_ptr<Policy> make_demand_lru_policy();
// Perfect knowledge of the future from the whole trace: fetches ahead as far as
// the budget allows and evicts the chunk whose next use is farthest. `schedule`
// must outlive the policy and describe exactly the launches that will be planned.
std::unique_ptr<Policy> make_belady_policy(const ChunkSchedule& schedule, LookaheadConfig config = {});
// Predicts the future from the launches seen so far (Predictor) and behaves like
// belady on the prediction; with no prediction it behaves like demand-lru.
// `seed`, when given, is a loop learned in an earlier run to start from.
std::unique_ptr<Policy> make_learned_policy(PredictorConfig predictor = {}, LookaheadConfig config = {},
                                            const LoopSeed* seed = nullptr);

} // namespace uvmp

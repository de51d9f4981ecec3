// What the host homes came to in a run (UVMP_HOST_HOMES): the choice, when it
// was used, what routing did with it and what remote trials changed. Set a few
// times a run, read at exit: a lock, not counters. For the stats file and the
// exit summary; not in the C API's struct.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace uvmp {

struct HostHomeChoice {
    std::string source;          // "the run's own steps", or the trace's path
    uint64_t step_allocations = 0; // managed allocations live in the learned step
    uint64_t candidates = 0;     // of them, those the home order ranks (tolerated remote)
    uint64_t chosen = 0;         // homed on the host
    uint64_t chosen_bytes = 0;
    uint64_t swapped_bytes = 0;  // what migration must move a step with the choice
    uint64_t all_gpu_swapped_bytes = 0;
    uint64_t kernels_judged = 0; // by the timing prior
    uint64_t kernels_streaming = 0; // of them, judged to tolerate remote operands by their rate (tried ones apart)
    uint64_t kernels_tried = 0;     // judged tolerant to be tried remote: every launch of them waited
    uint64_t waited_launches = 0;  // learned in the run: launches that waited for moves as they began
    uint64_t kinds_from_waits = 0; // launch kinds timed only on those, their durations less the wait
    double streaming_gbps = 0;     // the line the kernels were judged by (named GB/s)
    double simulated_ms = 0;     // the learned step simulated with the choice
    double all_gpu_ms = 0;       // and with every home on the GPU
    bool used = false;           // whether routing follows it (it pays enough)
    // A layout planned for the learned step (UVMP_STEP_LAYOUT): the step
    // simulated with it and with blocks placed as they come (0: not weighed),
    // and its arena where it was chosen (0: not chosen).
    double layout_ms = 0;
    double placed_as_they_come_ms = 0;
    uint64_t layout_arena_bytes = 0;
};

struct HostHomeRouting {
    uint64_t host = 0;      // allocations routed to the host
    uint64_t matched = 0;   // allocations that found their entry of the learned sequence
    uint64_t unmatched = 0; // that found none (homed on the GPU)
    uint64_t resyncs = 0;   // matches found past the current position
    uint64_t laid_out = 0;  // blocks placed where the step's layout put them
    uint64_t displaced = 0; // blocks the layout placed whose place was taken (placed as they came)
};

// What a remote trial measured (core/placement/remote_trial.h): the launches
// of the judged step that named host-homed data, what they named (each launch
// once) and what they took past their kinds' local times.
struct HostHomeTrial {
    uint64_t launches = 0;
    // Naming host-homed data but left out: no duration came, no local time.
    uint64_t launches_untimed = 0;
    uint64_t launches_without_local = 0;
    uint64_t kinds = 0;
    uint64_t kinds_slowed = 0; // past their local time plus two trips
    uint64_t named_bytes = 0;
    double past_local_ms = 0;
    double trips = 0; // past_local_ms over one trip of named_bytes at the remote read rate
    // The kernels whose rate under pressure kept allocations on the GPU, with
    // that rate and the one of the judged step (0: not timed there), in named
    // GB/s, against the streaming line.
    struct KeptKernel {
        uint32_t kernel = 0;
        uint64_t allocations = 0;
        uint64_t bytes = 0;
        double learned_gbps = 0;
        double trial_gbps = 0;
    };
    std::vector<KeptKernel> kept_on_gpu;
    double streaming_gbps = 0;
};

class HostHomeFigures {
public:
    void chosen(HostHomeChoice choice);
    // Routing by learned homes began before launch `launch`.
    void used_from(uint64_t launch);
    // Remote trials gave `entries` of the learned step, `bytes` a step, back
    // their GPU home; `reverted`: the steps after sent them back to the host.
    void given_back(uint64_t entries, uint64_t bytes, bool reverted);
    void routed(const HostHomeRouting& routing);
    // Allocations made before the learned step homed where they lie: on the
    // host (to_host), or back on the GPU after a remote trial.
    void homed_in_place(uint64_t allocations, uint64_t bytes, bool to_host);
    void trial_judged(const HostHomeTrial& trial);

    // The stats file's keys (host_homes_learned, ..., host_homes: {...}).
    void add_json(nlohmann::ordered_json& j) const;
    // A line for the exit summary, or nothing when homes were never used.
    std::optional<std::string> summary_line() const;
    void reset();

private:
    mutable std::mutex mutex_;
    std::optional<HostHomeChoice> choice_;
    std::optional<uint64_t> used_from_launch_;
    uint64_t given_back_ = 0;
    uint64_t given_back_bytes_ = 0;
    bool given_back_reverted_ = false;
    HostHomeRouting routing_;
    uint64_t in_place_to_host_ = 0, in_place_to_host_bytes_ = 0;
    uint64_t in_place_to_gpu_ = 0, in_place_to_gpu_bytes_ = 0;
    std::optional<HostHomeTrial> trial_;
};

} // namespace uvmp

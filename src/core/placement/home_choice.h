// Which allocations of a learned step live on the host, read and written
// remotely by the GPU, rather than on the GPU with migration keeping the
// budget. Measured on the H200 (docs/design.md, "Tiers"): a byte swapped out
// and back by migration costs about S/15 + S/49 seconds a GB-step (eviction
// pays host page population), a byte that lives on the host costs only its
// remote trips (about 52 GB/s written, 51 GB/s read), and a GEMM reading a
// remote operand runs many times slower. So a host home pays where every
// reader of an allocation streams it (learned from kernel timings, not from
// names), and only as far as it lowers the peak that migration must cover.
//
// The choice is made in two parts. An order: greedily, among the allocations
// live at the step's peak of GPU-homed live bytes whose host home lowers that
// peak, the one that saves the most swap a second of its remote trips (one read
// once before one read many times), until the peak fits the budget or none
// lowers it. Then how much of the order to take: by default the prefix with the
// least estimated step time,
//   max(compute + the remote trips of the host-homed allocations,
//       S / evict + S / fetch), S = what the peak still exceeds the budget by,
// since migration runs beside the kernels while remote trips lengthen them;
// the simulator can instead try prefixes on the trace (core/homesearch/home_search.h).
// A wrong choice costs speed, never a result: remote access is coherent.
#pragma once

#include "core/rates/link_rates.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace uvmp::placement {

enum class Home : uint8_t {
    Gpu,  // resident where the budget allows; migration moves it (policies of core/policy)
    Host, // host pages the GPU reads and writes remotely: never on the GPU, never evicted
};

// One allocation of the step, in the order the step makes them.
struct StepAllocation {
    uint64_t bytes = 0;
    // Live over launches [first_launch, last_launch] of the step (both included);
    // one made before the step and kept spans the whole step.
    uint32_t first_launch = 0;
    uint32_t last_launch = 0;
    // How many launches of the step name it.
    uint32_t uses = 0;
    // Whether every launch that names it runs about as fast with it remote
    // (learned from kernel timings). Only such allocations may get a host home.
    bool remote_tolerant = false;
};

// The rates of the device in use (core/rates): remote writes and reads for the
// trips, fetches and evictions for the swap. A default one is the reference's.
using Rates = rates::LinkRates;

// The allocations in the order their host homes pay, each with what the step
// comes to once it and those before it are homed on the host.
struct HomeOrder {
    struct Step {
        size_t index = 0;           // into the step's allocations
        uint64_t swapped_bytes = 0; // the peak's excess over the budget that is left
        double remote_seconds = 0;  // trips of the allocations taken so far
        uint64_t host_bytes = 0;    // their bytes
    };
    std::vector<Step> steps;
    uint64_t all_gpu_swapped_bytes = 0;
};

struct HomeChoice {
    std::vector<Home> homes; // one per allocation, in the step's order
    size_t taken = 0;        // how much of the order is homed on the host
    // The estimate above, for the chosen homes and for all on the GPU.
    double estimated_seconds = 0;
    double all_gpu_seconds = 0;
    // Peak excess of GPU-homed live bytes over the budget: what migration must move.
    uint64_t swapped_bytes = 0;
    uint64_t all_gpu_swapped_bytes = 0;
    uint64_t host_bytes = 0; // bytes of host-homed allocations
};

// The first write goes out at the remote write rate and every later use reads
// it back at the remote read rate.
double remote_seconds(const StepAllocation& allocation, const Rates& rates);

// `launches`: the step's launch count; every allocation's interval must lie
// within it (std::invalid_argument otherwise).
HomeOrder host_home_order(std::span<const StepAllocation> allocations, uint32_t launches, uint64_t budget_bytes,
                          const Rates& rates = {});
// The estimate above. `compute_seconds`: the step's kernel time with every operand local.
double estimated_step_seconds(double compute_seconds, double remote_seconds, uint64_t swapped_bytes,
                              const Rates& rates);
// The first `taken` allocations of `order` on the host, the rest on the GPU.
HomeChoice choice_of(std::span<const StepAllocation> allocations, const HomeOrder& order, size_t taken,
                     const Rates& rates, double compute_seconds);
// How much of the order has the least estimate.
size_t least_estimate_prefix(const HomeOrder& order, const Rates& rates, double compute_seconds);
// The prefix of the order with the least estimate.
HomeChoice choose_homes(std::span<const StepAllocation> allocations, uint32_t launches, uint64_t budget_bytes,
                        const Rates& rates = {}, double compute_seconds = 0);

// Carries a step's choice to later steps: the n-th allocation a later step
// makes gets the home of the n-th of the learned step when their sizes agree
// (addresses differ from step to step; order and size do not in a training
// loop), else the GPU, the home that never slows a reader.
class StepHomes {
public:
    StepHomes() = default;
    StepHomes(std::span<const StepAllocation> learned, std::span<const Home> homes);
    Home home_of(uint32_t ordinal_in_step, uint64_t bytes) const;
    size_t size() const { return sizes_.size(); }

private:
    std::vector<uint64_t> sizes_;
    std::vector<Home> homes_;
};

} // namespace uvmp::placement

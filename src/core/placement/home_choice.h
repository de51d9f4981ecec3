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
// The choice is greedy on one estimate of the step's moving time:
//   sum over host-homed allocations of their remote trips
//   + S / evict + S / fetch, S = the most the GPU-homed live bytes exceed the
//     budget at any launch of the step,
// taking at each round the allocation that lowers it most, until none does.
// A wrong choice costs speed, never a result: remote access is coherent.
#pragma once

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

struct Rates {
    double remote_write_gbps = 52.6;
    double remote_read_gbps = 51.2;
    double fetch_gbps = 49.0;
    double evict_gbps = 15.0;
};

struct HomeChoice {
    std::vector<Home> homes; // one per allocation, in the step's order
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
HomeChoice choose_homes(std::span<const StepAllocation> allocations, uint32_t launches, uint64_t budget_bytes,
                        const Rates& rates = {});

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

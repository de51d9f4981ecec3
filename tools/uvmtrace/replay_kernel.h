// The replay's synthetic kernel (replay_kernel.ptx.in): a function for each
// recorded kernel, and the parameter words of a launch.
#pragma once

#include "replay_driver.h"

#include <cstdint>
#include <span>
#include <vector>

namespace uvmp::tools {

// One entry of the embedded module: its name and how many accesses its
// parameter holds (generated with the module: replay_kernel.cmake).
struct ReplayKernelEntry {
    const char* name;
    uint32_t slots;
};
std::span<const ReplayKernelEntry> replay_kernel_entries(); // by slots, ascending
const char* replay_kernel_ptx();

// The most accesses one launch can pass.
uint32_t replay_kernel_max_slots();

// Words that are not pointers carry this bit, which no device address has.
inline constexpr uint64_t kReplayWordTag = uint64_t{1} << 63;

struct ReplayAccess {
    uint64_t pointer;
    uint64_t bytes;
};

// The parameter of one launch: `words` holds the entry's 2 + 2 * slots words.
// Words past the accesses must be zero; `used_before` is how many words the
// last launch through the same buffer filled, so that only those are cleared.
// Returns the words it filled.
size_t fill_replay_words(std::span<uint64_t> words, size_t used_before, uint64_t duration_ns,
                         std::span<const ReplayAccess> accesses);

// Distinct functions for distinct recorded kernels: the library numbers kernels
// by function, and its learned policy tells launches apart by kernel. Each
// recorded kernel gets a copy of the module of its own.
class ReplayKernels {
public:
    explicit ReplayKernels(const ReplayDriver& driver) : driver_(driver) {}

    struct Function {
        CUfunction function;
        uint32_t slots;
    };
    // The function for recorded kernel `kernel_id` whose launches pass at most
    // `max_accesses`, loaded on first use.
    const Function& function(uint32_t kernel_id, uint32_t max_accesses);

private:
    const ReplayDriver& driver_;
    std::vector<Function> by_kernel_;
};

} // namespace uvmp::tools

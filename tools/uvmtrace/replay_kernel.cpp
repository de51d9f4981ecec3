#include "replay_kernel.h"

#include <fmt/format.h>

#include <algorithm>

namespace uvmp::tools {

uint32_t replay_kernel_max_slots() { return replay_kernel_entries().back().slots; }

size_t fill_replay_words(std::span<uint64_t> words, size_t used_before, uint64_t duration_ns,
                         std::span<const ReplayAccess> accesses) {
    const size_t used = 2 + 2 * accesses.size();
    words[0] = kReplayWordTag | accesses.size();
    words[1] = kReplayWordTag | duration_ns;
    for (size_t i = 0; i < accesses.size(); ++i) {
        words[2 + 2 * i] = accesses[i].pointer;
        words[3 + 2 * i] = kReplayWordTag | accesses[i].bytes;
    }
    if (used_before > used) std::fill(words.begin() + used, words.begin() + used_before, 0);
    return used;
}

const ReplayKernels::Function& ReplayKernels::function(uint32_t kernel_id, uint32_t max_accesses) {
    if (kernel_id < by_kernel_.size() && by_kernel_[kernel_id].function) return by_kernel_[kernel_id];
    const auto entries = replay_kernel_entries();
    const auto entry = std::find_if(entries.begin(), entries.end(),
                                    [&](const ReplayKernelEntry& e) { return e.slots >= max_accesses; });
    if (entry == entries.end())
        throw DriverError(fmt::format("kernel {} passes {} accesses in a launch; the replay's kernel takes at most {}",
                                      kernel_id, max_accesses, replay_kernel_max_slots()));
    CUmodule module = nullptr;
    driver_.check(driver_.cuModuleLoadData(&module, replay_kernel_ptx()),
                  fmt::format("loading the replay kernel for kernel {}", kernel_id));
    CUfunction function = nullptr;
    driver_.check(driver_.cuModuleGetFunction(&function, module, entry->name),
                  fmt::format("finding {} in the replay kernel", entry->name));
    if (kernel_id >= by_kernel_.size()) by_kernel_.resize(kernel_id + 1, Function{nullptr, 0});
    by_kernel_[kernel_id] = Function{function, entry->slots};
    return by_kernel_[kernel_id];
}

} // namespace uvmp::tools

// The chunk ranges of launches the learned policy looks ahead at, by a key
// that stands for what the launch touches (Predictor::expected_accesses). Looking
// ahead restarts after every failed prediction and visits the same launches
// again, and a steady loop visits each once per iteration: its ranges are
// worked out once while no allocation comes or goes.
#pragma once

#include "core/model/residency.h"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace uvmp {

class LaunchRangeCache {
public:
    // The ranges stored under `key` while the layout was `layout_version`
    // (Residency::layout_version), if any. Valid until the next call.
    std::optional<std::span<const ChunkRange>> find(uint64_t key, uint64_t layout_version);
    // Stores a copy of `ranges` under `key` for that layout and returns it.
    std::span<const ChunkRange> store(uint64_t key, uint64_t layout_version, std::span<const ChunkRange> ranges);

private:
    // Open addressing: a slot of another generation is empty, so that a new
    // layout (every few launches in a job that allocates anew each step) empties
    // the table without touching it.
    struct Slot {
        uint64_t key = 0;
        uint32_t generation = 0;
        uint32_t count = 0;
        size_t first = 0; // in ranges_
    };
    void start(uint64_t layout_version);
    Slot& probe(uint64_t key);
    void grow();

    std::vector<Slot> slots_;
    size_t used_ = 0;
    uint32_t generation_ = 1;
    uint64_t layout_version_ = UINT64_MAX;
    std::vector<ChunkRange> ranges_;
};

} // namespace uvmp

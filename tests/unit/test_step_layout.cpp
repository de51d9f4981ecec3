#include "core/pool/step_layout.h"

#include <catch2/catch.hpp>

#include <random>
#include <vector>

using namespace uvmp::pool;

namespace {
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kChunk = 2 * kMiB;

// Whether two blocks' lifetimes on the circle of `period` positions meet.
bool alive_at(const LayoutBlock& b, uint64_t position, uint64_t period) {
    const uint64_t freed = std::max(b.freed, b.made + 1);
    return (position >= b.made && position < freed) || (freed > period && position < freed - period);
}

// No two planned blocks alive at one position overlap in the arena, every
// offset is chunk-aligned and the arena holds every planned block.
void check_layout(const std::vector<LayoutBlock>& blocks, const StepLayout& layout, uint64_t period) {
    REQUIRE(layout.offsets.size() == blocks.size());
    for (size_t i = 0; i < blocks.size(); ++i) {
        if (!layout.offsets[i]) continue;
        CHECK(*layout.offsets[i] % kChunk == 0);
        CHECK(*layout.offsets[i] + blocks[i].bytes <= layout.arena_bytes);
    }
    for (uint64_t p = 0; p < period; ++p)
        for (size_t i = 0; i < blocks.size(); ++i) {
            if (!layout.offsets[i] || !alive_at(blocks[i], p, period)) continue;
            for (size_t j = i + 1; j < blocks.size(); ++j) {
                if (!layout.offsets[j] || !alive_at(blocks[j], p, period)) continue;
                const uint64_t a = *layout.offsets[i], b = *layout.offsets[j];
                INFO("blocks " << i << " and " << j << " at position " << p);
                CHECK((a + blocks[i].bytes <= b || b + blocks[j].bytes <= a));
            }
        }
}
} // namespace

TEST_CASE("step layout: blocks alive together lie apart, blocks that never meet share memory") {
    // A forward pass saving three activations, a backward pass freeing them in
    // reverse, and a gradient made at the end and freed early in the next step.
    const std::vector<LayoutBlock> blocks = {
        {8 * kMiB, 0, 9},  {8 * kMiB, 1, 8},  {8 * kMiB, 2, 7},
        {16 * kMiB, 3, 4}, // a temporary between forward and backward
        {4 * kMiB, 9, 12}, // made late, freed in the next step (position 2 of it)
    };
    const uint64_t period = 10;
    const StepLayout layout = plan_step_layout(blocks, period, kChunk);
    check_layout(blocks, layout, period);
    CHECK(layout.planned == blocks.size());
    // At positions 3 the three activations and the temporary are alive: 40 MiB.
    CHECK(layout.peak_live_bytes == 40 * kMiB);
    CHECK(layout.arena_bytes == 40 * kMiB);
}

TEST_CASE("step layout: small blocks, blocks never freed and blocks living a whole step are left to the pool") {
    const std::vector<LayoutBlock> blocks = {
        {kChunk / 2, 0, 1},                   // under a chunk
        {4 * kMiB, 1, LayoutBlock::kNotFreed}, // never freed
        {4 * kMiB, 2, 12},                    // freed a whole step later: would meet its next instance
        {4 * kMiB, 3, 5},
    };
    const StepLayout layout = plan_step_layout(blocks, 10, kChunk);
    CHECK_FALSE(layout.offsets[0]);
    CHECK_FALSE(layout.offsets[1]);
    CHECK_FALSE(layout.offsets[2]);
    REQUIRE(layout.offsets[3]);
    CHECK(*layout.offsets[3] == 0);
    CHECK(layout.planned == 1);
    CHECK(layout.arena_bytes == 4 * kMiB);
}

TEST_CASE("step layout: sizes round up to chunks, and at most max_blocks are planned, the largest") {
    const std::vector<LayoutBlock> blocks = {
        {3 * kMiB, 0, 5}, // four MiB in the arena
        {9 * kMiB, 1, 6},
        {5 * kMiB, 2, 7},
    };
    const StepLayout all = plan_step_layout(blocks, 8, kChunk);
    CHECK(all.arena_bytes == (4 + 10 + 6) * kMiB);
    check_layout(blocks, all, 8);
    const StepLayout two = plan_step_layout(blocks, 8, kChunk, 2);
    CHECK(two.planned == 2);
    CHECK_FALSE(two.offsets[0]);
    CHECK(two.offsets[1]);
    CHECK(two.offsets[2]);
}

TEST_CASE("step layout: random steps are laid out without overlap, near their peak") {
    std::mt19937_64 random(7);
    for (int round = 0; round < 20; ++round) {
        const uint64_t period = 200;
        std::vector<LayoutBlock> blocks;
        for (int i = 0; i < 120; ++i) {
            LayoutBlock b;
            b.bytes = (1 + random() % 64) * kMiB;
            b.made = random() % period;
            b.freed = b.made + 1 + random() % (period - 1);
            blocks.push_back(b);
        }
        const StepLayout layout = plan_step_layout(blocks, period, kChunk);
        check_layout(blocks, layout, period);
        CHECK(layout.arena_bytes >= layout.peak_live_bytes);
        // Greedy by size stays within a small factor of the least arena on such steps.
        CHECK(layout.arena_bytes <= layout.peak_live_bytes * 3 / 2);
    }
}

TEST_CASE("step layout: bad input is refused") {
    const std::vector<LayoutBlock> made_late = {{4 * kMiB, 10, 11}};
    CHECK_THROWS_AS(plan_step_layout(made_late, 10, kChunk), std::invalid_argument);
    CHECK_THROWS_AS(plan_step_layout({}, 0, kChunk), std::invalid_argument);
    CHECK_THROWS_AS(plan_step_layout({}, 10, 3 * kMiB), std::invalid_argument);
    CHECK(plan_step_layout({}, 10, kChunk).arena_bytes == 0);
}

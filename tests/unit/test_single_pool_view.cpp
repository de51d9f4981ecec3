// The reserved figure frameworks read (core/pool/single_pool_view.h): one
// training-like sequence of allocations and frees, run once with every block
// in the GPU book and once with a share of them homed in a host book from the
// third step on, must read the same within 5%; the books' reserved bytes
// summed do not.
#include "core/pool/single_pool_view.h"
#include "pool_test_support.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace uvmp::pool;
using namespace uvmp::pool::testing;

namespace {

constexpr uint64_t GiB = 1ull << 30;
constexpr PoolTag kTag = 7;

PoolConfig gpt2_config() {
    PoolConfig c;
    c.slab_bytes = 1 * GiB;
    c.chunk_bytes = 2 * MiB;
    c.alignment = 512;
    c.release_after_ns = ~0ull; // a framework's pool keeps what it mapped
    return c;
}

// A GPU book and a host book of one device, the view over both, and the
// blocks live in each.
struct TwoHomes {
    PoolTest gpu_side, host_side;
    PoolBook gpu{gpt2_config(), gpu_side.slabs, gpu_side.fences};
    PoolBook host{gpt2_config(), host_side.slabs, host_side.fences};
    SinglePoolView view{2 * MiB};
    uint64_t now = 0;
    // What the books hold together, and its high mark (the former figure).
    uint64_t books_high = 0;

    struct Live {
        uint64_t address;
        bool on_host;
    };

    uint64_t held() const { return gpu.figures().reserved + host.figures().reserved; }

    Live allocate(uint64_t bytes, bool on_host) {
        PoolBook& book = on_host ? host : gpu;
        const std::optional<Block> block = book.allocate(bytes, kS1, kTag, ++now);
        REQUIRE(block);
        view.allocated(block->size);
        books_high = std::max(books_high, held());
        return {block->address, on_host};
    }
    void free(const Live& live) {
        PoolBook& book = live.on_host ? host : gpu;
        const std::optional<uint64_t> size = book.free(live.address, kS1, 0, ++now);
        REQUIRE(size);
        view.freed(*size);
    }
};

struct Figures {
    uint64_t reserved, reserved_high, books, books_high;
};

// GPT-2 small in fp32, scaled: parameters of many sizes, per layer activations
// kept for the backward pass, short-lived temporaries, gradients and Adam's
// two states made at the first step. From step `host_from` on, every third
// layer's activations and the optimizer's states live on the host (the states
// move there: freed on the GPU, made again on the host).
Figures train(TwoHomes& pool, int host_from) {
    std::mt19937_64 rng(47);
    const uint64_t hidden = 768 * 4, tokens = 4 * 512;
    std::vector<uint64_t> param_sizes{50257 * hidden, 1024 * hidden};
    for (int layer = 0; layer < 12; ++layer)
        for (uint64_t s : {hidden, hidden, 3 * 768 * hidden, 3 * hidden, 768 * hidden, hidden, hidden, hidden,
                           4 * 768 * hidden, 4 * hidden, 4 * 768 * hidden, hidden})
            param_sizes.push_back(s);
    std::vector<TwoHomes::Live> params, grads, states;
    for (uint64_t s : param_sizes) params.push_back(pool.allocate(s, false));

    for (int step = 0; step < 6; ++step) {
        const bool homes = host_from >= 0 && step >= host_from;
        if (homes && step == host_from) {
            for (auto& s : states) pool.free(s);
            std::vector<TwoHomes::Live> moved;
            for (size_t i = 0; i < 2 * param_sizes.size(); ++i)
                moved.push_back(pool.allocate(param_sizes[i % param_sizes.size()], true));
            states = std::move(moved);
        }
        std::vector<TwoHomes::Live> saved;
        for (int layer = 0; layer < 12; ++layer) {
            const bool on_host = homes && layer % 3 == 0;
            for (uint64_t s : {tokens * hidden, tokens * 3 * hidden, uint64_t{4 * 12 * 512 * 512 * 4}, tokens * hidden,
                               tokens * 4 * hidden, tokens * hidden})
                saved.push_back(pool.allocate(s, on_host));
            // Temporaries of odd sizes, freed at once.
            const auto scratch = pool.allocate(512 + rng() % (8 * MiB), false);
            pool.free(scratch);
        }
        const auto logits = pool.allocate(tokens * 50257 * 4, false);
        if (step == 0)
            for (uint64_t s : param_sizes) grads.push_back(pool.allocate(s, false));
        pool.free(logits);
        while (!saved.empty()) {
            const auto temp = pool.allocate(saved.back().address % 3 == 0 ? tokens * hidden : tokens * 4 * hidden,
                                            false);
            pool.free(saved.back());
            saved.pop_back();
            pool.free(temp);
        }
        if (step == 0)
            for (size_t i = 0; i < 2 * param_sizes.size(); ++i)
                states.push_back(pool.allocate(param_sizes[i % param_sizes.size()], false));
    }
    return {pool.view.reserved(pool.held()), pool.view.reserved_high(pool.held()), pool.held(), pool.books_high};
}

bool within(uint64_t figure, uint64_t reference, double share) {
    return std::fabs(static_cast<double>(figure) - static_cast<double>(reference)) <=
           share * static_cast<double>(reference);
}

} // namespace

TEST_CASE("pool view: host homes learned mid-run leave the reserved figures as all-GPU", "[pool]") {
    TwoHomes all_gpu, some_host;
    const Figures gpu = train(all_gpu, -1);
    const Figures mixed = train(some_host, 2);
    REQUIRE(some_host.host.figures().slabs > 0);
    CHECK(within(mixed.reserved, gpu.reserved, 0.05));
    CHECK(within(mixed.reserved_high, gpu.reserved_high, 0.05));
    // Never past what the books hold, never short of what is live.
    CHECK(gpu.reserved <= gpu.books);
    CHECK(gpu.reserved >= all_gpu.view.live());
    CHECK(gpu.reserved_high >= gpu.reserved);
    // What the figure was: both books' slabs, free space included.
    CHECK_FALSE(within(mixed.books_high, gpu.books_high, 0.05));
}

TEST_CASE("pool view: reserved follows the live high mark, trims and resets", "[pool]") {
    SinglePoolView view(2 * MiB);
    const uint64_t held = 1 * GiB;
    view.allocated(100 * MiB + 1);
    CHECK(view.reserved(held) == 102 * MiB); // rounded to what a pool maps
    view.allocated(50 * MiB);
    view.freed(150 * MiB + 1);
    // Freed bytes stay cached, as in a pool that keeps what it mapped.
    CHECK(view.live() == 0);
    CHECK(view.reserved(held) == 152 * MiB);
    CHECK(view.reserved(100 * MiB) == 100 * MiB); // the books gave slabs back
    view.allocated(20 * MiB);
    CHECK(view.reserved(held) == 152 * MiB);
    view.trimmed(0);
    CHECK(view.reserved(held) == 20 * MiB);
    CHECK(view.reserved_high(held) == 152 * MiB);
    view.reset_high(held);
    CHECK(view.reserved_high(held) == 20 * MiB);
    view.allocated(10 * MiB);
    CHECK(view.reserved_high(held) == 30 * MiB);
    view.trimmed(64 * MiB); // nothing beyond 64 MiB is cached
    CHECK(view.reserved(held) == 30 * MiB);
    view.freed(1 * GiB); // a free it never saw made does not wrap
    CHECK(view.live() == 0);
    CHECK_THROWS_AS(SinglePoolView(3 * MiB), std::invalid_argument);
}

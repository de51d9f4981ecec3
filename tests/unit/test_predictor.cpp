#include "core/learn/predictor.h"

#include <catch2/catch.hpp>

#include <set>
#include <vector>

using namespace uvmp;

namespace {

// Launch k of a loop body: kernel k, reading allocation k.
std::vector<trace::Access> access_of(uint32_t k) { return {{k, 0, 0}}; }

void feed(Predictor& p, uint32_t kernel) {
    const auto a = access_of(kernel);
    p.observe(kernel, a);
}

} // namespace

TEST_CASE("predictor: learns a loop and predicts ahead", "[predictor]") {
    Predictor p;
    const uint32_t period = 5;
    for (int iteration = 0; iteration < 6; ++iteration)
        for (uint32_t k = 0; k < period; ++k) feed(p, k);
    REQUIRE(p.located());
    CHECK(p.frozen());
    CHECK(p.period() == period);
    // Last seen: kernel 4; next come 0, 1, ... and wrap around.
    for (uint64_t ahead = 1; ahead <= 12; ++ahead) {
        const Predictor::Step* step = p.predict(ahead);
        REQUIRE(step != nullptr);
        CHECK(step->kernel_id == (ahead - 1) % period);
        CHECK(p.accesses(*step)[0].alloc_id == step->kernel_id);
    }
    // Every launch after the first iteration, except the one that located the
    // loop, was predicted.
    CHECK(p.predictions() == 6 * period - period - 1);
    CHECK(p.hits() == p.predictions());
    CHECK(p.hit_rate() == Approx(1.0));
}

TEST_CASE("predictor: the same kernel with other buffers is another launch", "[predictor]") {
    Predictor p;
    const std::vector<trace::Access> a{{1, 0, 0}}, b{{2, 0, 0}};
    for (int i = 0; i < 20; ++i) {
        p.observe(9, a);
        p.observe(9, b);
    }
    CHECK(p.period() == 2);
    REQUIRE(p.predict(1));
    CHECK(p.accesses(*p.predict(1))[0].alloc_id == 1);
}

TEST_CASE("predictor: re-synchronises after a divergence", "[predictor]") {
    Predictor p;
    const uint32_t period = 6;
    for (int iteration = 0; iteration < 4; ++iteration)
        for (uint32_t k = 0; k < period; ++k) feed(p, k);
    REQUIRE(p.frozen());
    const uint64_t hits_before = p.hits();

    // The program skips ahead: 0 1 then 4 5 (2 and 3 left out).
    feed(p, 0);
    feed(p, 1);
    CHECK(p.continued());
    feed(p, 4); // predicted 2: a miss, found again at 4
    CHECK_FALSE(p.continued());
    CHECK(p.located());
    CHECK(p.resyncs() >= 1);
    REQUIRE(p.predict(1));
    CHECK(p.predict(1)->kernel_id == 5);
    feed(p, 5);
    CHECK(p.continued());
    for (uint32_t k = 0; k < period; ++k) feed(p, k);
    CHECK(p.hits() == hits_before + 2 + 1 + period);
    CHECK(p.predictions() == p.hits() + 1);
}

TEST_CASE("predictor: a launch never seen means no prediction, then it learns again", "[predictor]") {
    Predictor p;
    for (int iteration = 0; iteration < 5; ++iteration)
        for (uint32_t k = 0; k < 4; ++k) feed(p, k);
    REQUIRE(p.frozen());
    feed(p, 100);
    CHECK_FALSE(p.located());
    CHECK(p.predict(1) == nullptr);
    CHECK_FALSE(p.frozen());
    // A new loop 100, 101, 102 is learned after enough repeats.
    for (int iteration = 0; iteration < 6; ++iteration)
        for (uint32_t k = 100; k < 103; ++k) feed(p, k);
    CHECK(p.frozen());
    CHECK(p.period() == 3);
    CHECK(p.continued());
}

TEST_CASE("predictor: context picks the right occurrence of a repeated launch", "[predictor]") {
    // Kernel 7 on buffer 7 appears twice per iteration: after 1 and after 3.
    Predictor p;
    const std::vector<uint32_t> body{1, 7, 2, 3, 7, 4};
    for (int iteration = 0; iteration < 4; ++iteration)
        for (uint32_t k : body) feed(p, k);
    REQUIRE(p.frozen());
    // Jump: 3 then 7 out of order, the predictor must place us at the second 7.
    feed(p, 1);
    feed(p, 3); // miss
    feed(p, 7); // predicted 7 after 3: a hit thanks to the re-sync at 3
    CHECK(p.continued());
    REQUIRE(p.predict(1));
    CHECK(p.predict(1)->kernel_id == 4);
}

TEST_CASE("predictor: a launch whose small buffers moved still counts as predicted", "[predictor]") {
    Predictor p;
    const uint32_t period = 10;
    // Kernel k reads allocation k and a scalar in allocation 99 whose offset
    // changes every iteration, as a caching allocator's small blocks do.
    for (uint32_t iteration = 0; iteration < 6; ++iteration)
        for (uint32_t k = 0; k < period; ++k) {
            const std::vector<trace::Access> a{{k, 0, 0}, {99, 512 * (iteration * period + k), 0}};
            p.observe(k, a);
        }
    CHECK(p.frozen());
    CHECK(p.period() == period);
    CHECK(p.trusted());
    CHECK(p.hit_rate() > 0.9);
}

TEST_CASE("predictor: predictions are trusted only after a run of hits", "[predictor]") {
    PredictorConfig config;
    config.trust_hits = 4;
    Predictor p(config);
    const uint32_t period = 20;
    for (uint32_t k = 0; k < period; ++k) feed(p, k);
    CHECK_FALSE(p.trusted());
    for (uint32_t k = 0; k < 4; ++k) feed(p, k);
    CHECK_FALSE(p.trusted()); // located at the first repeat, three hits since
    feed(p, 4);
    CHECK(p.trusted());
    feed(p, 77); // a kernel never seen: lost
    CHECK_FALSE(p.trusted());
}

TEST_CASE("predictor: training resumes its loop after an evaluation pass", "[predictor]") {
    Predictor p;
    const uint32_t train = 20, eval = 7;
    auto run_train = [&](int iterations) {
        for (int i = 0; i < iterations; ++i)
            for (uint32_t k = 0; k < train; ++k) feed(p, k);
    };
    run_train(5);
    REQUIRE(p.frozen());
    // Evaluation: kernels the training loop never ran.
    for (int i = 0; i < 3; ++i)
        for (uint32_t k = 0; k < eval; ++k) feed(p, 100 + k);
    CHECK(p.period() == eval); // learned in turn
    // Back to training: located again at its first launch, trusted within a loop.
    const uint64_t hits_before = p.hits();
    run_train(1);
    CHECK(p.frozen());
    CHECK(p.period() == train);
    CHECK(p.hits() - hits_before >= train - 1);
    run_train(2);
    CHECK(p.trusted());
    const Predictor::Step* next = p.predict(1);
    REQUIRE(next);
    CHECK(next->kernel_id == 0);
}

namespace {

// A step: `layers` forward launches, kernel k reading weights k (allocation k,
// kept) and writing a buffer allocated for this step only; then as many
// backward launches, kernel 100 + k reading that buffer again. The buffers are
// freed at the end of the step.
struct FreshBuffers {
    uint32_t layers = 6;
    std::set<uint32_t> live, freed;

    uint32_t period() const { return 2 * layers; }
    uint32_t buffer(uint32_t step, uint32_t k) const { return 1000 + step * layers + k; }
    std::vector<trace::Access> accesses(uint32_t step, uint32_t launch) const {
        const uint32_t k = launch < layers ? launch : period() - 1 - launch;
        return {{k, 0, 0}, {buffer(step, k), 0, 0}};
    }
    uint32_t kernel(uint32_t launch) const { return launch < layers ? launch : 100 + period() - 1 - launch; }
    void allocate(uint32_t step) {
        for (uint32_t k = 0; k < layers; ++k) live.insert(buffer(step, k));
    }
    void observe(Predictor& p, uint32_t step, uint32_t launch, bool with_liveness) const {
        if (with_liveness) p.observe(kernel(launch), accesses(step, launch), [this](uint32_t id) { return state_of(id); });
        else p.observe(kernel(launch), accesses(step, launch));
    }
    void run_step(Predictor& p, uint32_t step, bool with_liveness) {
        allocate(step);
        for (uint32_t launch = 0; launch < period(); ++launch) observe(p, step, launch, with_liveness);
        for (uint32_t k = 0; k < layers; ++k) {
            live.erase(buffer(step, k));
            freed.insert(buffer(step, k));
        }
    }
    Predictor::AllocState state_of(uint32_t id) const {
        if (id < layers || live.count(id)) return Predictor::AllocState::Live;
        return freed.count(id) ? Predictor::AllocState::Freed : Predictor::AllocState::Unknown;
    }
};

} // namespace

TEST_CASE("predictor: buffers allocated anew each step stand in for the last step's", "[predictor]") {
    FreshBuffers program;
    Predictor p;
    for (uint32_t step = 0; step < 8; ++step) program.run_step(p, step, true);
    CHECK(p.frozen());
    CHECK(p.period() == program.period());
    CHECK(p.trusted());
    CHECK(p.hit_rate() > 0.8);

    // Step 8, after its first two launches (forward 0 and 1): their buffers
    // have been seen and stand in for the last step's.
    const uint32_t step = 8;
    program.allocate(step);
    for (uint32_t launch = 0; launch < 2; ++launch) {
        program.observe(p, step, launch, true);
        CHECK(p.continued());
    }
    CHECK(p.stand_in_count() >= 2);
    std::vector<trace::Access> scratch;
    uint64_t key = 0;
    // The backward launch reading buffer 1 comes second to last in the step
    // (the last observed launch is at 1): the buffer seen this step stands in there.
    const uint64_t to_backward_1 = program.period() - 3;
    const Predictor::Step* backward = p.predict(to_backward_1);
    REQUIRE(backward);
    REQUIRE(backward->kernel_id == 101);
    CHECK(p.accesses(*backward)[1].alloc_id != program.buffer(step, 1));
    CHECK(p.expected_accesses(*backward, to_backward_1, scratch, key)[1].alloc_id == program.buffer(step, 1));
    CHECK(p.expected_accesses(*backward, to_backward_1, scratch, key)[0].alloc_id == 1); // the weights stay themselves
    CHECK(key != backward->extent_hash);
    // Forward launch 1 of the next step: by then the program has allocated anew,
    // and this step's buffer will be gone. Nothing stands in; the freed one is named.
    const Predictor::Step* next_forward = p.predict(program.period());
    REQUIRE(next_forward);
    REQUIRE(next_forward->kernel_id == 1);
    const auto expected = p.expected_accesses(*next_forward, program.period(), scratch, key);
    CHECK(program.state_of(expected[1].alloc_id) == Predictor::AllocState::Freed);
    CHECK(key == next_forward->extent_hash);
    // Forward launch 2 of this step: its buffer has not been used yet, so nothing stands in either.
    const Predictor::Step* next = p.predict(1);
    REQUIRE(next);
    REQUIRE(next->kernel_id == 2);
    CHECK(program.state_of(p.expected_accesses(*next, 1, scratch, key)[1].alloc_id) == Predictor::AllocState::Freed);
}

TEST_CASE("predictor: without liveness, or for memory it does not know, nothing stands in", "[predictor]") {
    FreshBuffers blind;
    Predictor without;
    for (uint32_t step = 0; step < 8; ++step) blind.run_step(without, step, false);
    // Half of each launch's buffers match: counted as predicted, but nothing is replaced.
    std::vector<trace::Access> scratch;
    uint64_t key = 0;
    const Predictor::Step* next = without.predict(1);
    REQUIRE(next);
    CHECK(without.expected_accesses(*next, 1, scratch, key)[1].alloc_id == without.accesses(*next)[1].alloc_id);
    CHECK(without.stand_in_count() == 0);

    // Every buffer of another step is Unknown, not Freed (memory the caller
    // does not track): a live buffer never takes the place of one.
    Predictor p;
    FreshBuffers program;
    for (uint32_t step = 0; step < 8; ++step) {
        for (uint32_t launch = 0; launch < program.period(); ++launch) {
            p.observe(program.kernel(launch), program.accesses(step, launch), [&](uint32_t id) {
                const bool this_step = id >= program.buffer(step, 0) && id < program.buffer(step + 1, 0);
                return id < program.layers || this_step ? Predictor::AllocState::Live : Predictor::AllocState::Unknown;
            });
        }
    }
    CHECK(p.stand_in_count() == 0);
}

TEST_CASE("predictor: a launch naming one allocation more than learned still counts, through what stands in", "[predictor]") {
    // Every launch names only buffers made anew each step: forward k writes
    // buffer k, backward k reads buffers k and k + 1. In one later step a
    // backward launch also names an allocation it did not name before (a
    // pointer argument that lands in live memory that step only).
    constexpr uint32_t layers = 6;
    std::set<uint32_t> live, freed;
    const auto buffer = [](uint32_t step, uint32_t k) { return 1000 + step * (layers + 1) + k; };
    const auto state_of = [&](uint32_t id) {
        if (live.count(id)) return Predictor::AllocState::Live;
        return freed.count(id) ? Predictor::AllocState::Freed : Predictor::AllocState::Unknown;
    };
    Predictor p;
    const auto run_step = [&](uint32_t step, bool extra_access) {
        for (uint32_t k = 0; k <= layers; ++k) live.insert(buffer(step, k));
        for (uint32_t k = 0; k < layers; ++k) {
            const std::vector<trace::Access> forward{{buffer(step, k), 0, 0}};
            p.observe(k, forward, state_of);
        }
        for (uint32_t k = layers; k-- > 0;) {
            std::vector<trace::Access> backward{{buffer(step, k), 0, 0}, {buffer(step, k + 1), 0, 0}};
            if (extra_access && k == 2) backward.insert(backward.begin(), {buffer(step, 5), 4096, 0});
            p.observe(100 + k, backward, state_of);
            if (extra_access) CHECK(p.continued());
        }
        for (uint32_t k = 0; k <= layers; ++k) {
            live.erase(buffer(step, k));
            freed.insert(buffer(step, k));
        }
    };
    for (uint32_t step = 0; step < 8; ++step) run_step(step, false);
    REQUIRE(p.frozen());
    REQUIRE(p.trusted());
    const uint64_t resyncs = p.resyncs();
    run_step(8, true);
    CHECK(p.frozen());
    CHECK(p.trusted());
    CHECK(p.resyncs() == resyncs);
    CHECK(p.period() == 2 * layers);
}

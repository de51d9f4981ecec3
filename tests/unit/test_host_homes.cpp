#include "core/placement/host_homes.h"
#include "core/placement/timing_prior.h"
#include "core/homesearch/home_search.h"
#include "core/model/chunk_schedule.h"

#include "trace_fixtures.h"

#include <catch2/catch.hpp>

#include <stdexcept>

using namespace uvmp;
using namespace uvmp::placement;
using uvmp::trace::fixtures::add_alloc;
using uvmp::trace::fixtures::add_free;
using uvmp::trace::fixtures::add_launch;
using uvmp::trace::fixtures::add_launch_naming;

namespace {
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;


// Three steps of five launches over 2 GiB of weights (id 1). Each step makes a
// 1 GiB activation that a streaming kernel (2: 1 GiB in 0.5 ms, 2 TB/s) writes
// and reads back, and a 1 GiB one that a GEMM-like kernel (3: 1 GiB in 5 ms,
// 0.2 TB/s) reads; both live over the step's peak.
trace::Trace three_steps(std::vector<uint64_t>& bounds) {
    trace::Trace t;
    add_alloc(t, 1, 2 * kGiB, 0, trace::AllocKind::Pooled);
    for (uint32_t step = 0; step < 3; ++step) {
        const uint64_t base = t.launches.size();
        bounds.push_back(base);
        const uint32_t streamed = 10 + 10 * step, reread = 11 + 10 * step;
        add_alloc(t, streamed, kGiB, base, trace::AllocKind::Pooled);
        add_alloc(t, reread, kGiB, base, trace::AllocKind::Pooled);
        add_launch_naming(t, 2, {streamed}, 500'000);
        add_launch_naming(t, 3, {reread}, 5'000'000);
        add_launch_naming(t, 3, {1, reread}, 15'000'000); // 3 GiB in 15 ms: the same 0.2 TB/s
        add_launch_naming(t, 2, {streamed}, 500'000);
        add_free(t, streamed, base + 4);
        add_free(t, reread, base + 4);
        add_launch_naming(t, 4, {1}, 1'000); // too short to judge
    }
    bounds.push_back(t.launches.size());
    return t;
}
} // namespace

TEST_CASE("timing prior: streaming kernels tolerate, slow-per-byte ones do not, short ones are unjudged",
          "[placement]") {
    std::vector<uint64_t> bounds;
    const trace::Trace t = three_steps(bounds);
    const TimingPrior prior = TimingPrior::from_trace(t);
    CHECK(prior.kernels_judged() == 2);
    CHECK(prior.kernel_gbps(2).value() == Approx(2147.5).epsilon(0.01));
    CHECK(prior.verdict(2, 0) == Tolerance::Tolerant);
    CHECK(prior.verdict(3, 1) == Tolerance::Intolerant);
    CHECK(prior.verdict(4, 0) == Tolerance::Unknown);
    CHECK(prior.verdict(99, 0) == Tolerance::Unknown);
    TimingPriorConfig strict;
    strict.streaming_gbps = 3000;
    CHECK(TimingPrior::from_trace(t, strict).verdict(2, 0) == Tolerance::Intolerant);
}

TEST_CASE("timing prior: a kernel to try is judged tolerant whatever its rate", "[placement]") {
    std::vector<uint64_t> bounds;
    const trace::Trace t = three_steps(bounds);
    TimingPriorConfig trying;
    trying.kernels_to_try = {3, 4};
    const TimingPrior prior = TimingPrior::from_trace(t, trying);
    CHECK(prior.verdict(3, 1) == Tolerance::Tolerant); // 0.2 TB/s, a bound from below only
    CHECK(prior.verdict(4, 0) == Tolerance::Unknown);  // too short to judge: not tried
    CHECK(prior.kernels_judged() == 2);
    CHECK(prior.kernels_streaming() == 1);
    CHECK(prior.kernels_tried() == 1);
    // Kernel 2 streams at 2.1 TB/s: tried, it counts as tried alone.
    trying.kernels_to_try = {2, 3};
    const TimingPrior both = TimingPrior::from_trace(t, trying);
    CHECK(both.kernels_streaming() == 0);
    CHECK(both.kernels_tried() == 2);
    const TimingPrior plain = TimingPrior::from_trace(t);
    CHECK(plain.verdict(3, 1) == Tolerance::Intolerant);
    CHECK(plain.kernels_tried() == 0);
}

TEST_CASE("timing prior: a byte a kernel's parameters name twice counts once", "[placement]") {
    // A GEMM's parameters hold its operands' pointers in several places: counted
    // once each, 64 MiB moved in 200 us is 336 GB/s, under the streaming line;
    // counted as often as named (216 MiB), it would pass for a kernel streaming
    // 1.13 TB/s.
    trace::Trace t;
    add_alloc(t, 1, 32 * kMiB, 0);
    add_alloc(t, 2, 32 * kMiB, 0);
    const trace::Access a{1, 0, 0}, b{2, 0, 0}, a_head{1, 0, 8 * kMiB}, b_tail{2, 16 * kMiB, 0};
    const trace::Access repeated[] = {a, b, a, b, a_head, b_tail, a, b};
    for (int i = 0; i < 3; ++i) add_launch(t, 7, repeated, 200'000);
    const TimingPrior prior = TimingPrior::from_trace(t);
    CHECK(prior.kernel_gbps(7).value() == Approx(64.0 * kMiB / 200'000).epsilon(1e-6));
    CHECK(216.0 * kMiB / 200'000 > kDefaultStreamingGbps);
    CHECK(prior.verdict(7, 0) == Tolerance::Intolerant);
    // Extents of one allocation that overlap join; apart, they add up.
    trace::Trace u;
    add_alloc(u, 1, 32 * kMiB, 0);
    const trace::Access head{1, 0, 8 * kMiB}, middle{1, 4 * kMiB, 8 * kMiB}, tail{1, 24 * kMiB, 4 * kMiB};
    const trace::Access pieces[] = {head, middle, tail};
    for (int i = 0; i < 3; ++i) add_launch(u, 9, pieces, 1'000'000);
    CHECK(TimingPrior::from_trace(u).kernel_gbps(9).value() == Approx(16.0 * kMiB / 1'000'000).epsilon(1e-6));
}

TEST_CASE("host homes: the streamed activation of every step lives on the host, its launches pay the trips",
          "[placement]") {
    std::vector<uint64_t> bounds;
    const trace::Trace t = three_steps(bounds);
    const TimingPrior prior = TimingPrior::from_trace(t);
    Rates rates;
    rates.remote_write_gbps = 50;
    rates.remote_read_gbps = 40;
    // Peak 4 GiB live against 3 GiB: one activation must go.
    const HostHomesOutcome out = with_host_homes(t, bounds, 3 * kGiB, prior, rates);
    CHECK(out.step_begin == 5);
    CHECK(out.step_end == 10);
    CHECK(out.choice.host_bytes == kGiB);
    CHECK(out.choice.swapped_bytes == 0);
    // Ids 10, 20 and 30, mapped by order and size. The first step also makes
    // the weights, kept into the learned step: homed by identity, they take no
    // place in the first step's sequence.
    CHECK(out.host_allocations == 3);
    for (const trace::Alloc& a : out.trace.allocs) {
        const bool streamed = a.id % 10 == 0 && a.id >= 10;
        CHECK((a.kind == trace::AllocKind::Host) == streamed);
    }
    // Each step: the first launch naming it writes 1 GiB, the second reads it.
    CHECK(out.step_remote_write_bytes == kGiB);
    CHECK(out.step_remote_read_bytes == kGiB);
    const double write_s = static_cast<double>(kGiB) / 50e9, read_s = static_cast<double>(kGiB) / 40e9;
    CHECK(out.step_remote_seconds == Approx(write_s + read_s));
    for (uint32_t step = 0; step < 3; ++step) {
        CHECK(out.trace.launches[5 * step].duration_ns == 500'000 + static_cast<uint64_t>(write_s * 1e9));
        CHECK(out.trace.launches[5 * step + 3].duration_ns == 500'000 + static_cast<uint64_t>(read_s * 1e9));
        CHECK(out.trace.launches[5 * step + 1].duration_ns == 5'000'000);
    }
}

TEST_CASE("host homes: nothing moves home where all fits, a step of other sizes keeps the GPU, no iteration refused",
          "[placement]") {
    std::vector<uint64_t> bounds;
    trace::Trace t = three_steps(bounds);
    const TimingPrior prior = TimingPrior::from_trace(t);
    const HostHomesOutcome fits = with_host_homes(t, bounds, 8 * kGiB, prior);
    CHECK(fits.host_allocations == 0);
    CHECK(fits.step_remote_seconds == 0);

    // The last step makes its activation a little larger: its order matches, its size does not.
    t.allocs[5].size = kGiB + 2 * kMiB;
    const HostHomesOutcome other = with_host_homes(t, bounds, 3 * kGiB, prior);
    CHECK(other.host_allocations == 2);
    CHECK(other.trace.allocs[5].kind == trace::AllocKind::Pooled);

    const std::vector<uint64_t> none{0};
    CHECK_THROWS_AS(with_host_homes(t, none, 3 * kGiB, prior), std::invalid_argument);
}

TEST_CASE("home search: the simulated step of each prefix tried, the fastest kept", "[placement][simulator]") {
    std::vector<uint64_t> bounds;
    const trace::Trace t = three_steps(bounds);
    const TimingPrior prior = TimingPrior::from_trace(t);
    SimConfig config;
    config.budget_bytes = 3 * kGiB;
    config.policy = PolicyKind::Learned;
    const SearchedHomes searched = search_host_homes(t, bounds, config, prior, Rates{});
    // The order has the streamed activation alone: none of it, and all of it.
    REQUIRE(searched.tried.size() == 2);
    CHECK(searched.tried[0].taken == 0);
    CHECK(searched.tried[0].host_bytes == 0);
    CHECK(searched.tried[1].taken == 1);
    CHECK(searched.tried[1].host_bytes == kGiB);
    const auto fastest = std::min_element(searched.tried.begin(), searched.tried.end(),
                                          [](const auto& a, const auto& b) { return a.step_seconds < b.step_seconds; });
    CHECK(searched.result.step_seconds == fastest->step_seconds);
    CHECK(searched.homes.choice.taken == fastest->taken);
    // Each figure is the simulation of the trace its prefix makes.
    for (const SearchedHomes::Tried& tried : searched.tried) {
        const HostHomesOutcome homes = with_host_homes(t, bounds, config.budget_bytes, prior, Rates{}, tried.taken);
        const ChunkSchedule schedule(homes.trace, config.chunk_bytes);
        CHECK(simulate(homes.trace, schedule, bounds, config).step_seconds == tried.step_seconds);
    }
    // A 1 GiB eviction and fetch cost more than two trips of 1 GiB beside 21 ms of kernels: the host wins.
    CHECK(searched.homes.choice.taken == 1);
}

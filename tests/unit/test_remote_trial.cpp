#include "core/placement/remote_trial.h"

#include "trace_fixtures.h"

#include <catch2/catch.hpp>

#include <set>

using namespace uvmp;
using namespace uvmp::placement;
using uvmp::trace::fixtures::add_alloc;
using uvmp::trace::fixtures::add_launch_naming;

namespace {
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kUs = 1000, kMs = 1000 * kUs;

// Weights (1, 64 MiB) and two steps. Each step makes a streamed activation (8
// MiB), a GEMM operand (32 MiB) and a small buffer (1 MiB): ids 10-12 in the
// first step, all on the GPU, and 20-22 in the second, all on the host.
// Kernel 2 streams the activation twice, kernel 3 multiplies the weights by
// the operand, kernel 4 reads the small buffer. `remote_ns` gives the second
// step's durations, in that launch order.
trace::Trace local_then_remote(const uint64_t (&remote_ns)[4]) {
    trace::Trace t;
    add_alloc(t, 1, 64 * kMiB, 0);
    for (uint32_t step = 0; step < 2; ++step) {
        const uint32_t streamed = 10 + 10 * step, operand = 11 + 10 * step, small = 12 + 10 * step;
        const uint64_t base = t.launches.size();
        add_alloc(t, streamed, 8 * kMiB, base);
        add_alloc(t, operand, 32 * kMiB, base);
        add_alloc(t, small, kMiB, base);
        add_launch_naming(t, 2, {streamed}, step ? remote_ns[0] : 20 * kUs);
        add_launch_naming(t, 2, {streamed}, step ? remote_ns[1] : 20 * kUs);
        add_launch_naming(t, 3, {1, operand}, step ? remote_ns[2] : kMs);
        add_launch_naming(t, 4, {small}, step ? remote_ns[3] : 10 * kUs);
    }
    return t;
}

bool on_host(uint32_t id) { return id >= 20; }
} // namespace

TEST_CASE("remote trial: a re-reading kernel gives its remote operand back the GPU, streaming ones keep theirs",
          "[placement]") {
    // At 51.2 GB/s, a trip of 8 MiB takes 164 us, of 32 MiB 655 us, of 1 MiB 20 us.
    // The streaming kernel takes its local time plus a trip once, and 5 ms once
    // (it waited for something else); the GEMM 60 ms; the small reader 50 us
    // past its local time and two trips.
    const uint64_t remote_ns[4] = {190 * kUs, 5 * kMs, 60 * kMs, 101 * kUs};
    const trace::Trace t = local_then_remote(remote_ns);
    const TrialVerdict v = judge_remote_trial(t, 4, 8, on_host);
    CHECK(v.launches_judged == 4);
    CHECK(v.kinds_judged == 3);
    CHECK(v.kinds_slowed == 2);
    // The GEMM's 57.7 ms past its allowance outweigh the operand's GPU home
    // (32 MiB evicted at 15 GB/s and fetched at 49: 2.9 ms a step). The small
    // buffer's 50 us do not outweigh its 91 us.
    CHECK(v.gpu_again == std::vector<uint32_t>{21});
    CHECK(v.gpu_again_bytes == 32 * kMiB);
    CHECK(v.gpu_again_excess_seconds == Approx(60e-3 - 1e-3 - 2 * 32.0 * kMiB / 51.2e9).epsilon(1e-6));
    CHECK(v.excess_seconds == Approx(v.gpu_again_excess_seconds + (101e-6 - 10e-6 - 2 * 1.0 * kMiB / 51.2e9)));
}

TEST_CASE("remote trial: a kind's least excess is what each launch of it costs", "[placement]") {
    // Both streaming launches are slow: the least of the two falls on the activation, and
    // 2 x 4.65 ms outweigh its 0.73 ms GPU home.
    const uint64_t remote_ns[4] = {5 * kMs, 8 * kMs, kMs, 10 * kUs};
    const TrialVerdict v = judge_remote_trial(local_then_remote(remote_ns), 4, 8, on_host);
    CHECK(v.kinds_slowed == 1);
    CHECK(v.gpu_again == std::vector<uint32_t>{20});
    CHECK(v.gpu_again_excess_seconds == Approx(2 * (5e-3 - 20e-6 - 2 * 8.0 * kMiB / 51.2e9)).epsilon(1e-6));
}

TEST_CASE("remote trial: a launch naming two host-homed allocations splits its excess by their bytes",
          "[placement]") {
    trace::Trace t;
    add_alloc(t, 1, 16 * kMiB, 0);
    add_alloc(t, 2, 48 * kMiB, 0);
    add_launch_naming(t, 5, {1, 2}, kMs);
    add_alloc(t, 21, 16 * kMiB, 1);
    add_alloc(t, 22, 48 * kMiB, 1);
    add_launch_naming(t, 5, {21, 22}, 11 * kMs);
    const TrialVerdict v = judge_remote_trial(t, 1, 2, on_host);
    const double excess = 10e-3 - 2 * 64.0 * kMiB / 51.2e9;
    CHECK(v.excess_seconds == Approx(excess));
    // A quarter of its 7.4 ms (1.8 ms) falls on the 16 MiB (its GPU home: 1.5 ms),
    // three quarters (5.5 ms) on the 48 MiB (4.4 ms).
    CHECK(v.gpu_again == std::vector<uint32_t>{21, 22});
    TrialConfig dear;
    dear.rates.evict_gbps = 5; // a GPU home now costs 3.7 and 11.1 ms
    CHECK(judge_remote_trial(t, 1, 2, on_host, dear).gpu_again.empty());
}

TEST_CASE("remote trial: a kind never timed with its data in place is held to the streaming line", "[placement]") {
    // Kernel 6 stalled 40 ms locally on a 256 MiB operand (every launch of it
    // waited), and takes 50 ms reading it remote. Against the stall it passes
    // (50 < 40 + 2 x 5.2 ms); against 256 MiB at the default streaming line
    // (600 GB/s: 447 us) it is 39.1 ms past its allowance, which outweighs the
    // operand's GPU home (23.4 ms).
    // Kernel 7, timed locally, is judged by its own time beside it.
    trace::Trace t;
    add_alloc(t, 1, 256 * kMiB, 0);
    add_alloc(t, 2, 16 * kMiB, 0);
    add_launch_naming(t, 6, {1}, 40 * kMs);
    add_launch_naming(t, 7, {2}, 3 * kMs);
    add_alloc(t, 21, 256 * kMiB, 2);
    add_alloc(t, 22, 16 * kMiB, 2);
    add_launch_naming(t, 6, {21}, 50 * kMs);
    add_launch_naming(t, 7, {22}, 3 * kMs);
    CHECK(judge_remote_trial(t, 2, 4, on_host).gpu_again.empty());
    TrialConfig untimed;
    const trace::ManagedBytes managed(t);
    untimed.kinds_untimed = {trace::kind_of(t.launches[0], managed)};
    const TrialVerdict v = judge_remote_trial(t, 2, 4, on_host, untimed);
    CHECK(v.launches_judged == 2);
    CHECK(v.kinds_slowed == 1);
    CHECK(v.gpu_again == std::vector<uint32_t>{21});
    const double allowed = 256.0 * kMiB / (kDefaultStreamingGbps * 1e9) + 2 * 256.0 * kMiB / 51.2e9;
    CHECK(v.gpu_again_excess_seconds == Approx(50e-3 - allowed).epsilon(1e-4));
    // Without a streaming line the kind is not judged.
    untimed.streaming_gbps = 0;
    CHECK(judge_remote_trial(t, 2, 4, on_host, untimed).launches_judged == 1);
    // One that streams it remote passes, with no local launch to go by.
    trace::Trace streamed;
    add_alloc(streamed, 21, 256 * kMiB, 0);
    add_launch_naming(streamed, 6, {21}, 6 * kMs);
    TrialConfig streaming;
    streaming.kinds_untimed = {trace::kind_of(streamed.launches[0], trace::ManagedBytes(streamed))};
    const TrialVerdict s = judge_remote_trial(streamed, 0, 1, on_host, streaming);
    CHECK(s.launches_judged == 1);
    CHECK(s.gpu_again.empty());
}

TEST_CASE("remote trial: launches before the homes give local times to kinds naming weights homed since",
          "[placement]") {
    // The weights (id 1) went to the host with the homes, at launch 4: the GEMM
    // names them in both steps, and only its launch before the homes ran local.
    const uint64_t remote_ns[4] = {190 * kUs, 190 * kUs, 60 * kMs, 10 * kUs};
    const trace::Trace t = local_then_remote(remote_ns);
    const auto weights_too = [](uint32_t id) { return id == 1 || on_host(id); };
    const TrialVerdict unknown = judge_remote_trial(t, 4, 8, weights_too);
    CHECK(unknown.launches_judged == 3);
    CHECK(unknown.launches_without_local == 1);
    const TrialVerdict judged = judge_remote_trial(t, 4, 8, weights_too, {.homes_from = 4});
    CHECK(judged.launches_judged == 4);
    CHECK(judged.launches_without_local == 0);
    // 60 ms against 1 ms and two trips of 96 MiB: the weights and the operand
    // share the excess by their bytes, and both outweigh their GPU homes.
    CHECK(judged.gpu_again == std::vector<uint32_t>{1, 21});
}

TEST_CASE("remote trial: nothing judged without a local time, a timing or a host home", "[placement]") {
    trace::Trace t;
    add_alloc(t, 21, 16 * kMiB, 0);
    add_alloc(t, 2, 16 * kMiB, 0);
    add_launch_naming(t, 6, {21}, 50 * kMs); // never ran local
    add_launch_naming(t, 7, {2}, kMs);
    add_launch_naming(t, 7, {21}, 0); // untimed
    add_launch_naming(t, 7, {2}, 50 * kMs); // slow, but nothing of it is on the host
    const TrialVerdict v = judge_remote_trial(t, 0, 4, on_host);
    CHECK(v.launches_judged == 0);
    CHECK(v.kinds_judged == 0);
    // What was left out, and why: the caller waits for durations still to come.
    CHECK(v.launches_untimed == 1);
    CHECK(v.launches_without_local == 1);
    CHECK(v.gpu_again.empty());
    CHECK(judge_remote_trial(t, 3, 3, on_host).launches_judged == 0);
    CHECK(judge_remote_trial(t, 2, 99, on_host).launches_judged == 0);
}

TEST_CASE("remote trial: the trips a named byte cost, and the kinds that took longest", "[placement]") {
    // Past their local times: the streaming kind 170 us + 0 on 16 MiB named (two launches of 8), the
    // GEMM 59 ms on 32 MiB, the small reader 91 us on 1 MiB.
    const uint64_t remote_ns[4] = {190 * kUs, 20 * kUs, 60 * kMs, 101 * kUs};
    const TrialVerdict v = judge_remote_trial(local_then_remote(remote_ns), 4, 8, on_host);
    CHECK(v.named_bytes == 49 * kMiB);
    CHECK(v.past_local_seconds == Approx(170e-6 + 59e-3 + 91e-6));
    const double one_trip = 49.0 * kMiB / 51.2e9;
    CHECK(trips_of(v.past_local_seconds, v.named_bytes, 51.2) == Approx(v.past_local_seconds / one_trip));
    CHECK(trips_of(1.0, 0, 51.2) == 0);
    REQUIRE(v.slowest.size() == 3);
    CHECK((v.slowest[0].kernel == 3 && v.slowest[0].launches == 1 && v.slowest[0].named_bytes == 32 * kMiB));
    CHECK((v.slowest[1].kernel == 2 && v.slowest[1].launches == 2 && v.slowest[1].named_bytes == 16 * kMiB));
    CHECK(v.slowest[1].past_local_seconds == Approx(170e-6));
    CHECK(v.slowest[2].kernel == 4);
    // A kernel at exactly its local time plus one trip costs one trip a byte.
    trace::Trace t;
    add_alloc(t, 1, 64 * kMiB, 0);
    add_launch_naming(t, 7, {1}, kMs);
    add_alloc(t, 21, 64 * kMiB, 1);
    add_launch_naming(t, 7, {21}, kMs + static_cast<uint64_t>(64.0 * kMiB / 51.2));
    const TrialVerdict once = judge_remote_trial(t, 1, 2, on_host);
    CHECK(trips_of(once.past_local_seconds, once.named_bytes, 51.2) == Approx(1.0).epsilon(1e-6));
}

TEST_CASE("remote trial: launches no slower than their local times cost no trips", "[placement]") {
    // Every remote launch at its local time, the small reader faster than its own: nothing past.
    const uint64_t remote_ns[4] = {20 * kUs, 20 * kUs, kMs, 5 * kUs};
    const TrialVerdict v = judge_remote_trial(local_then_remote(remote_ns), 4, 8, on_host);
    CHECK(v.past_local_seconds < 0);
    CHECK(trips_of(v.past_local_seconds, v.named_bytes, 51.2) == 0);
    // Equal times fall in the order of their first launch.
    REQUIRE(v.slowest.size() == 3);
    CHECK(v.slowest[0].first_launch == 4);
    CHECK(v.slowest[1].first_launch == 6);
    CHECK(v.slowest[2].kernel == 4);
}

TEST_CASE("remote trial: kernels kept on the GPU are timed again on the judged step's launches naming no host data",
          "[placement]") {
    const uint64_t remote_ns[4] = {20 * kUs, 20 * kUs, 60 * kMs, 10 * kUs};
    trace::Trace t = local_then_remote(remote_ns);
    add_launch_naming(t, 5, {1}, kMs); // 8: in the judged step [4, 9), on the weights alone
    add_launch_naming(t, 6, {1}, kMs); // 9: after it
    const std::vector<uint32_t> kernels{3, 5, 6};
    const auto gbps = trial_step_gbps(t, 4, 9, on_host, kernels);
    REQUIRE(gbps.size() == 3);
    CHECK_FALSE(gbps[0].has_value()); // it named its host-homed operand there: no local time
    REQUIRE(gbps[1].has_value());
    CHECK(*gbps[1] == Approx(64.0 * kMiB / 1e6)); // 64 MiB in 1 ms, in GB/s
    CHECK_FALSE(gbps[2].has_value()); // not launched in the step
}

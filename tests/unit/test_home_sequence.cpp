#include "core/placement/home_sequence.h"
#include "core/homesearch/recorded_homes.h"
#include "core/trace/analysis/iteration_bounds.h"
#include "trace_fixtures.h"

#include <catch2/catch.hpp>

#include <optional>
#include <vector>

using namespace uvmp;
using namespace uvmp::placement;

namespace {
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
constexpr Home G = Home::Gpu;
constexpr Home H = Home::Host;

// A step of four allocations: 1 and 3 MiB live on the host.
std::vector<HomeEntry> four() { return {{kMiB, H}, {2 * kMiB, G}, {3 * kMiB, H}, {4 * kMiB, G}}; }

std::vector<Home> route(HomeSequence& sequence, const std::vector<uint64_t>& sizes) {
    std::vector<Home> homes;
    for (uint64_t bytes : sizes) homes.push_back(sequence.next(bytes));
    return homes;
}
} // namespace

TEST_CASE("home sequence: a step repeated exactly gets its homes every time", "[placement]") {
    HomeSequence sequence({}, four());
    for (int step = 0; step < 5; ++step)
        CHECK(route(sequence, {kMiB, 2 * kMiB, 3 * kMiB, 4 * kMiB}) == std::vector<Home>{H, G, H, G});
    CHECK(sequence.counts().matched == 20);
    CHECK(sequence.counts().unmatched == 0);
    CHECK(sequence.counts().resyncs == 0);
    CHECK(sequence.counts().host == 10);
}

TEST_CASE("home sequence: each answer names the step's entry it took, and an entry's home can be changed",
          "[placement]") {
    HomeSequence sequence({{8 * kMiB, G}}, four());
    std::optional<size_t> entry = 7;
    CHECK(sequence.next(8 * kMiB, &entry) == G);
    CHECK_FALSE(entry); // a prologue entry
    CHECK(sequence.next(kMiB, &entry) == H);
    CHECK(entry == 0u);
    CHECK(sequence.next(3 * kMiB, &entry) == H); // past a missing 2 MiB
    CHECK(entry == 2u);
    CHECK(sequence.next(5 * kMiB, &entry) == G);
    CHECK_FALSE(entry); // matched nothing
    sequence.set_home(2, G);
    sequence.set_home(99, H); // no such entry: nothing changes
    CHECK(route(sequence, {4 * kMiB, kMiB, 2 * kMiB, 3 * kMiB, 4 * kMiB}) == std::vector<Home>{G, H, G, G, G});
    sequence.set_home(2, H);
    CHECK(route(sequence, {kMiB, 2 * kMiB, 3 * kMiB}) == std::vector<Home>{H, G, H});
}

TEST_CASE("home sequence: the prologue comes once, then the step over and over", "[placement]") {
    HomeSequence sequence({{8 * kMiB, G}, {16 * kMiB, H}}, four());
    CHECK(sequence.in_prologue());
    CHECK(route(sequence, {8 * kMiB, 16 * kMiB}) == std::vector<Home>{G, H});
    CHECK_FALSE(sequence.in_prologue());
    for (int step = 0; step < 3; ++step)
        CHECK(route(sequence, {kMiB, 2 * kMiB, 3 * kMiB, 4 * kMiB}) == std::vector<Home>{H, G, H, G});
    CHECK(sequence.counts().unmatched == 0);
}

TEST_CASE("home sequence: an extra allocation in the middle gets the GPU and the step goes on", "[placement]") {
    HomeSequence sequence({}, four());
    CHECK(route(sequence, {kMiB, 2 * kMiB, 7 * kMiB, 3 * kMiB, 4 * kMiB}) == std::vector<Home>{H, G, G, H, G});
    CHECK(route(sequence, {kMiB, 2 * kMiB, 3 * kMiB, 4 * kMiB}) == std::vector<Home>{H, G, H, G});
    CHECK(sequence.counts().unmatched == 1);
    CHECK(sequence.counts().resyncs == 0);
}

TEST_CASE("home sequence: an allocation left out is skipped over by the window", "[placement]") {
    HomeSequence sequence({}, four());
    // The 2 MiB one is not made this step.
    CHECK(route(sequence, {kMiB, 3 * kMiB, 4 * kMiB}) == std::vector<Home>{H, H, G});
    CHECK(sequence.counts().resyncs == 1);
    CHECK(route(sequence, {kMiB, 2 * kMiB, 3 * kMiB, 4 * kMiB}) == std::vector<Home>{H, G, H, G});
}

TEST_CASE("home sequence: a step of other sizes gets the GPU, then the next step resynchronises", "[placement]") {
    HomeSequence sequence({}, four());
    CHECK(route(sequence, {kMiB, 2 * kMiB}) == std::vector<Home>{H, G});
    // A different step (evaluation, say): nothing of it matches.
    CHECK(route(sequence, {5 * kMiB, 6 * kMiB, 9 * kMiB}) == std::vector<Home>{G, G, G});
    CHECK(sequence.counts().unmatched == 3);
    // Training resumes with a new step: the first entry is found past the
    // position the cut-short step left.
    CHECK(route(sequence, {kMiB, 2 * kMiB, 3 * kMiB, 4 * kMiB}) == std::vector<Home>{H, G, H, G});
    CHECK(sequence.counts().resyncs == 1);
    CHECK(route(sequence, {kMiB, 2 * kMiB, 3 * kMiB, 4 * kMiB}) == std::vector<Home>{H, G, H, G});
}

TEST_CASE("home sequence: the start of the step is found beyond the window", "[placement]") {
    std::vector<HomeEntry> long_step{{kMiB, H}};
    for (uint64_t i = 0; i < 2 * HomeSequence::kWindow; ++i) long_step.push_back({(10 + i) * kMiB, G});
    HomeSequence sequence({}, long_step);
    CHECK(sequence.next(kMiB) == H);
    CHECK(sequence.next(10 * kMiB) == G);
    // Cut short far from the end: the next step's first allocation is out of the window's reach.
    CHECK(sequence.next(kMiB) == H);
    CHECK(sequence.position() == 1);
    CHECK(sequence.counts().resyncs == 1);
}

TEST_CASE("home sequence: a set-up unlike the recording's gives way to the step", "[placement]") {
    HomeSequence sequence({{100 * kMiB, H}}, four());
    for (uint64_t i = 0; i < HomeSequence::kWindow; ++i) CHECK(sequence.next((200 + i) * kMiB) == G);
    CHECK(sequence.in_prologue());
    CHECK(sequence.next(kMiB) == H);
    CHECK_FALSE(sequence.in_prologue());
    CHECK(route(sequence, {2 * kMiB, 3 * kMiB}) == std::vector<Home>{G, H});
}

TEST_CASE("home sequence: empty, every allocation gets the GPU", "[placement]") {
    HomeSequence sequence;
    CHECK(sequence.next(kMiB) == G);
    CHECK(sequence.counts().unmatched == 1);
}

namespace {
void add_alloc(trace::Trace& t, uint32_t id, uint64_t size, uint64_t launches_before) {
    t.allocs.push_back({id, 0, size, trace::AllocKind::Pooled, 0, 0, launches_before});
}

// Weights (id 1) made before a set-up launch and three marked steps; each step
// makes a 1 GiB activation a streaming kernel writes and reads, and a 1 GiB one
// a slow kernel re-reads.
trace::Trace marked_steps(bool timed) {
    using trace::fixtures::add_launch;
    using A = trace::Access;
    trace::Trace t;
    add_alloc(t, 1, 2 * kGiB, 0);
    add_launch(t, 4, std::vector<A>{{1, 0, 0}}, timed ? 1'000 : 0); // set-up, too short to judge
    for (uint32_t step = 0; step < 3; ++step) {
        const uint64_t base = t.launches.size();
        t.iterations.push_back({step, base, 0});
        const uint32_t streamed = 10 + 10 * step, reread = 11 + 10 * step;
        add_alloc(t, streamed, kGiB, base);
        add_alloc(t, reread, kGiB, base);
        add_launch(t, 2, std::vector<A>{{streamed, 0, 0}}, timed ? 500'000 : 0);
        add_launch(t, 3, std::vector<A>{{1, 0, 0}, {reread, 0, 0}}, timed ? 15'000'000 : 0);
        add_launch(t, 2, std::vector<A>{{streamed, 0, 0}}, timed ? 500'000 : 0);
        t.frees.push_back({streamed, 0, base + 3});
        t.frees.push_back({reread, 0, base + 3});
    }
    t.iterations.push_back({3, t.launches.size(), 0});
    return t;
}
} // namespace

TEST_CASE("recorded homes: the transform's homes as the prologue and the step of the recorded run", "[placement]") {
    const trace::Trace t = marked_steps(true);
    std::string why;
    const auto homes = recorded_homes(t, 3 * kGiB, 2 << 20, &why);
    REQUIRE(homes);
    CHECK(homes->step_begin == 4);
    CHECK(homes->step_end == 7);
    CHECK(homes->choice.host_bytes == kGiB);
    // Before the learned step (the second): the weights and the first step's pair.
    REQUIRE(homes->prologue.size() == 3);
    CHECK(homes->prologue[0].home == G);
    CHECK(homes->prologue[1].home == H);
    CHECK(homes->prologue[2].home == G);
    REQUIRE(homes->step.size() == 2);
    CHECK(homes->step[0].bytes == kGiB);
    CHECK(homes->step[0].home == H);
    CHECK(homes->step[1].home == G);
    CHECK(homes->host_entries() == 2);
    // The re-read activation of the step: its slow reader (kernel 3) keeps it on the GPU.
    REQUIRE(homes->kept_on_gpu.size() == 1);
    CHECK(homes->kept_on_gpu[0].kernel == 3);
    CHECK(homes->kept_on_gpu[0].allocations == 1);
    CHECK(homes->kept_on_gpu[0].bytes == kGiB);
    REQUIRE(homes->kept_on_gpu[0].kernel_gbps);
    CHECK(*homes->kept_on_gpu[0].kernel_gbps < kDefaultStreamingGbps);
    CHECK(homes->streaming_gbps == kDefaultStreamingGbps); // the line it was judged by
    // Chosen by simulating the recorded run: the host home shortens its step.
    CHECK(homes->simulated_step_seconds > 0);
    CHECK(homes->simulated_step_seconds < homes->all_gpu_step_seconds);
    CHECK(homes_pay(*homes));
    // A gain within what the simulator misses is not taken.
    RecordedHomes slight = *homes;
    slight.simulated_step_seconds = 0.95 * slight.all_gpu_step_seconds;
    CHECK_FALSE(homes_pay(slight));

    // Routed over a run that allocates as the recorded one did.
    HomeSequence sequence(homes->prologue, homes->step);
    std::vector<Home> got;
    for (const trace::Alloc& a : t.allocs) got.push_back(sequence.next(a.size));
    CHECK(got == std::vector<Home>{G, H, G, H, G, H, G});
}

TEST_CASE("recorded homes: the streaming rate (UVMP_STREAMING_GBPS) decides which readers tolerate the host",
          "[placement]") {
    // The streamed allocation's reader moves 1 GiB in 0.5 ms, about 2150 GB/s.
    std::string why;
    const auto strict = recorded_homes(marked_steps(true), 3 * kGiB, 2 << 20, &why, {}, HomeScope::LiveInStep,
                                       TimingPriorConfig{.streaming_gbps = 4000});
    REQUIRE(strict);
    CHECK(strict->host_entries() == 0);
    CHECK(strict->choice.host_bytes == 0);
    const auto lenient = recorded_homes(marked_steps(true), 3 * kGiB, 2 << 20, &why, {}, HomeScope::LiveInStep,
                                        TimingPriorConfig{.streaming_gbps = 2000});
    REQUIRE(lenient);
    CHECK(lenient->choice.host_bytes == kGiB);
}

TEST_CASE("recorded homes: refused without timing or without a full iteration, all fits: no host home",
          "[placement]") {
    std::string why;
    CHECK_FALSE(recorded_homes(marked_steps(false), 3 * kGiB, 2 << 20, &why));
    CHECK(why.find("UVMP_TRACE_TIMING") != std::string::npos);

    trace::Trace one = marked_steps(true);
    one.iterations.clear();
    one.launches.resize(3);
    CHECK_FALSE(recorded_homes(one, 3 * kGiB, 2 << 20, &why));
    CHECK(why.find("iteration") != std::string::npos);

    const auto roomy = recorded_homes(marked_steps(true), 16 * kGiB, 2 << 20, &why);
    REQUIRE(roomy);
    CHECK(roomy->host_entries() == 0);
}

TEST_CASE("home sequence: a run that learned its step from itself starts part of the way into it", "[placement]") {
    HomeSequence sequence({{8 * kMiB, H}}, four());
    sequence.start_in_step(6); // the step's third, two steps and a half in
    CHECK_FALSE(sequence.in_prologue());
    CHECK(route(sequence, {3 * kMiB, 4 * kMiB, kMiB, 2 * kMiB}) == std::vector<Home>{H, G, H, G});
    CHECK(sequence.counts().resyncs == 0);
    HomeSequence empty;
    empty.start_in_step(3);
    CHECK(empty.next(kMiB) == G);
}

TEST_CASE("recorded homes in the run: what the step makes, or all it reads, routed from where the run is",
          "[placement]") {
    // State made before the steps (an optimizer's) that every streaming launch
    // also reads: a host home for a trace learned beforehand, not for the run
    // that made it already, on the GPU.
    trace::Trace t = marked_steps(true);
    add_alloc(t, 2, kGiB, 0);
    for (trace::Launch& l : t.launches) {
        if (l.kernel_id != 2) continue;
        const auto old = t.accesses_of(l);
        std::vector<trace::Access> both(old.begin(), old.end());
        both.push_back({2, 0, 0});
        l.first_access = static_cast<uint32_t>(t.accesses.size());
        l.access_count = static_cast<uint32_t>(both.size());
        t.accesses.insert(t.accesses.end(), both.begin(), both.end());
    }
    std::string why;
    const auto before = recorded_homes(t, 3 * kGiB, 2 << 20, &why);
    const auto in_run = recorded_homes(t, 3 * kGiB, 2 << 20, &why, {}, HomeScope::MadeInStep);
    REQUIRE(before);
    REQUIRE(in_run);
    // The prologue: the weights, the first step's pair, then the state (made last).
    REQUIRE(before->prologue.size() == 4);
    CHECK(before->prologue[3].home == H);
    // Live in the step and homed on the host: what a run that learns from
    // itself with UVMP_EARLIER_HOMES moves there once, by its id.
    CHECK(before->earlier_host_ids == std::vector<uint32_t>{2});
    CHECK(before->earlier_host_bytes == kGiB);
    REQUIRE(in_run->prologue.size() == 4);
    CHECK(in_run->prologue[3].home == G);
    CHECK(in_run->earlier_host_ids.empty());
    CHECK(in_run->earlier_host_bytes == 0);
    REQUIRE(in_run->step.size() == 2);
    CHECK(in_run->step[0].home == H);
    CHECK(in_run->step[1].home == G);

    // The step's own homes pay: a run learning from itself keeps the state
    // made before the step on the GPU even where it may widen its search.
    const auto own_first = homes_in_run(t, iteration_bounds(t), 3 * kGiB, 2 << 20, &why, {}, {}, LayoutChoice::Off, true);
    REQUIRE(own_first);
    CHECK(homes_used(*own_first));
    CHECK(own_first->earlier_host_ids.empty());

    // The run has made the prologue's allocations and three more: routing
    // starts at the step's second entry.
    HomeSequence sequence(in_run->prologue, in_run->step);
    sequence.start_in_step(3);
    CHECK(route(sequence, {kGiB, kGiB, kGiB}) == std::vector<Home>{G, H, G});
}

TEST_CASE("recorded homes in the run: weights over the budget that each step streams once live on the host",
          "[placement]") {
    // A decode loop: four 1 GiB weights made before the steps, each read once a
    // step by a kernel that streams it (1 GiB in 0.5 ms), and a small
    // allocation a step. Under 3 GiB the weights cannot all stay: homed only
    // from what the step makes, nothing can go to the host and the weights
    // swap; homed from all the step reads, some of them live on the host.
    using trace::fixtures::add_launch;
    using A = trace::Access;
    trace::Trace t;
    for (uint32_t w = 1; w <= 4; ++w) add_alloc(t, w, kGiB, 0);
    for (uint32_t step = 0; step < 4; ++step) {
        const uint64_t base = t.launches.size();
        t.iterations.push_back({step, base, 0});
        const uint32_t token = 100 + step;
        add_alloc(t, token, 2 * kMiB, base);
        for (uint32_t w = 1; w <= 4; ++w) add_launch(t, 5, std::vector<A>{{w, 0, 0}, {token, 0, 0}}, 500'000);
        t.frees.push_back({token, 0, base + 4});
    }
    t.iterations.push_back({4, t.launches.size(), 0});
    std::string why;
    const auto step_only = recorded_homes(t, 3 * kGiB, 2 << 20, &why, {}, HomeScope::MadeInStep);
    const auto all_read = recorded_homes(t, 3 * kGiB, 2 << 20, &why, {}, HomeScope::LiveInStep);
    REQUIRE(step_only);
    REQUIRE(all_read);
    CHECK(step_only->earlier_host_ids.empty());
    CHECK_FALSE(homes_pay(*step_only));
    CHECK(all_read->earlier_host_bytes >= kGiB);
    CHECK(all_read->earlier_host_ids.size() == all_read->earlier_host_bytes / kGiB);
    CHECK(homes_pay(*all_read));
    CHECK(all_read->simulated_step_seconds < step_only->simulated_step_seconds);

    // A run learning from itself widens the search only because the step's own gave nothing.
    const std::vector<uint64_t> bounds = iteration_bounds(t);
    const auto in_run = homes_in_run(t, bounds, 3 * kGiB, 2 << 20, &why, {}, {}, LayoutChoice::Off, true);
    REQUIRE(in_run);
    CHECK(in_run->earlier_host_ids == all_read->earlier_host_ids);
    const auto without = homes_in_run(t, bounds, 3 * kGiB, 2 << 20, &why, {}, {}, LayoutChoice::Off, false);
    REQUIRE(without);
    CHECK(without->earlier_host_ids.empty());
    CHECK_FALSE(homes_used(*without));
}

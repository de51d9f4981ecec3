#include "core/trace/analysis/step_comparison.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace uvmp;

namespace {

// A trace whose kernels are named `names`; launches are added with launch().
struct TraceBuilder {
    trace::Trace trace;

    explicit TraceBuilder(std::vector<std::string> names) { trace.kernel_names = std::move(names); }

    void alloc(uint32_t id, uint64_t size) {
        trace::Alloc a;
        a.id = id;
        a.address = uint64_t{id} << 32;
        a.size = size;
        a.kind = trace::AllocKind::Pooled;
        trace.allocs.push_back(a);
    }
    // A launch of `kernel` running `duration_ns`, naming the whole of each of `allocs`.
    void launch(uint32_t kernel, uint64_t duration_ns, std::vector<uint32_t> allocs = {}) {
        trace::Launch l;
        l.seq = trace.launches.size();
        l.kernel_id = kernel;
        l.time_ns = l.seq * 1'000'000;
        l.duration_ns = duration_ns;
        l.first_access = static_cast<uint32_t>(trace.accesses.size());
        l.access_count = static_cast<uint32_t>(allocs.size());
        for (uint32_t id : allocs) trace.accesses.push_back({id, 0, 0});
        trace.launches.push_back(l);
    }
};

} // namespace

TEST_CASE("step comparison: kernels matched by name, the most grown first", "[step-comparison]") {
    // Kernel ids differ between the traces; names do not.
    TraceBuilder base({"gemm", "add"});
    base.alloc(1, 100);
    for (int step = 0; step < 2; ++step) {
        base.launch(0, 5'000);
        base.launch(1, 1'000, {1});
        base.launch(1, 1'000, {1});
    }
    TraceBuilder run({"add", "gemm", "copy"});
    run.alloc(7, 400);
    run.alloc(8, 600);
    run.launch(1, 5'500);
    run.launch(0, 9'000, {7, 8});
    run.launch(0, 4'000, {7});
    run.launch(2, 300);

    const StepComparison c = compare_steps(base.trace, {3, 6}, run.trace, {0, 4});
    CHECK(c.base.kernel_ns == 7'000);
    CHECK(c.base.timed_launches == 3);
    CHECK(c.run.kernel_ns == 18'800);
    REQUIRE(c.kernels.size() == 3);
    CHECK(c.kernels[0].kernel == "add");
    CHECK(c.kernels[0].base_launches == 2);
    CHECK(c.kernels[0].run_launches == 2);
    CHECK(c.kernels[0].base_ns == 2'000);
    CHECK(c.kernels[0].run_ns == 13'000);
    CHECK(c.kernels[0].grown_ns() == 11'000);
    CHECK(c.kernels[0].run_named_bytes == 1'400); // 400 + 600, then 400
    CHECK(c.kernels[1].kernel == "gemm");
    CHECK(c.kernels[1].grown_ns() == 500);
    // A kernel of the run alone grows by all its time.
    CHECK(c.kernels[2].kernel == "copy");
    CHECK(c.kernels[2].base_launches == 0);
    CHECK(c.kernels[2].grown_ns() == 300);
}

TEST_CASE("step comparison: a kernel the run no longer launches shrinks by its time", "[step-comparison]") {
    TraceBuilder base({"a", "b"});
    base.launch(0, 1'000);
    base.launch(1, 2'000);
    TraceBuilder run({"a"});
    run.launch(0, 1'000);
    const StepComparison c = compare_steps(base.trace, {0, 2}, run.trace, {0, 1});
    REQUIRE(c.kernels.size() == 2);
    CHECK(c.kernels[0].kernel == "a");
    CHECK(c.kernels[0].grown_ns() == 0);
    CHECK(c.kernels[1].kernel == "b");
    CHECK(c.kernels[1].grown_ns() == -2'000);
    CHECK(c.kernels[1].run_launches == 0);
}

TEST_CASE("step comparison: a step outside its trace is refused", "[step-comparison]") {
    TraceBuilder t({"a"});
    t.launch(0, 1'000);
    CHECK_THROWS_AS(compare_steps(t.trace, {0, 2}, t.trace, {0, 1}), std::invalid_argument);
    CHECK_THROWS_AS(compare_steps(t.trace, {0, 1}, t.trace, {1, 0}), std::invalid_argument);
}

TEST_CASE("step comparison: the last step with every launch timed, its call time known", "[step-comparison]") {
    std::vector<StepTime> steps(4);
    for (size_t k = 0; k < steps.size(); ++k) {
        steps[k].launches = {4 * k, 4 * k + 4};
        steps[k].timed_launches = 4;
        steps[k].call_ns = 1'000;
    }
    steps[2].timed_launches = 3;
    steps[3].call_ns = 0; // the last step: no launch after it
    CHECK(last_timed_step(steps) == 1);
    steps[1].timed_launches = 0;
    CHECK(last_timed_step(steps) == 0);
    // Without a timed step that a launch ends, the last timed one.
    steps[0].call_ns = 0;
    CHECK(last_timed_step(steps) == 3);
    steps[3].timed_launches = 1;
    CHECK(last_timed_step(steps) == 0);
    steps[0].timed_launches = 0;
    CHECK_FALSE(last_timed_step(steps));
    CHECK_FALSE(last_timed_step({}));
}

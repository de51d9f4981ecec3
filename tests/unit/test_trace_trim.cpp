#include "core/replay/replay_plan.h"
#include "core/sim/simulator.h"
#include "core/trace/format/reader.h"
#include "core/trace/edit/trim.h"
#include "trace_fixtures.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <stdexcept>

using namespace uvmp;

namespace {

// Four steps of a pooled job (marked unless `marks` is off), and a slab given
// back after its teardown.
trace::Trace job_with_slab_release(bool marks = true) {
    trace::Trace t = trace::fixtures::pooled_job(4, marks);
    const trace::Slab& first = t.slabs.front();
    t.slabs.push_back({trace::SlabAction::Released, first.id, first.base, first.size, 0, t.frees.back().time_ns + 1,
                       t.launches.size()});
    return t;
}

std::set<uint32_t> pooled_ids(const trace::Trace& t) {
    std::set<uint32_t> ids;
    for (const trace::Alloc& a : t.allocs)
        if (a.kind == trace::AllocKind::Pooled) ids.insert(a.id);
    return ids;
}

} // namespace

TEST_CASE("trace trim: the first steps, as if the job had stopped after them", "[trim]") {
    trace::Trace t = job_with_slab_release();
    const std::vector<uint64_t> bounds = iteration_bounds(t);
    REQUIRE(bounds.size() == 5);
    const uint64_t closing_ns = t.iterations[2].time_ns;
    trace::keep_first_steps(t, bounds, 2);

    CHECK(t.launches.size() == bounds[2]);
    CHECK(iteration_bounds(t) == std::vector<uint64_t>(bounds.begin(), bounds.begin() + 3));
    REQUIRE(t.iterations.size() == 3); // the closing mark of step 2 stays
    CHECK(t.iterations.back().time_ns == closing_ns);
    uint64_t accesses = 0;
    for (const trace::Launch& l : t.launches) accesses += l.access_count;
    CHECK(t.accesses.size() == accesses);
    for (const trace::Alloc& a : t.allocs) CHECK(a.launches_before <= bounds[2]);
    for (const trace::Move& m : t.moves) CHECK(m.launches_before <= bounds[2]);

    // Every kept block is freed once: the model and the loss the dropped step freed,
    // after the closing mark, in order.
    std::multiset<uint32_t> freed;
    for (const trace::Free& f : t.frees) freed.insert(f.id);
    CHECK(std::set<uint32_t>(freed.begin(), freed.end()) == pooled_ids(t));
    CHECK(freed.size() == pooled_ids(t).size());
    uint64_t last_ns = closing_ns, teardown = 0;
    for (const trace::Free& f : t.frees) {
        if (f.launches_before < bounds[2] || f.time_ns <= closing_ns) continue;
        ++teardown;
        CHECK(f.launches_before == bounds[2]);
        CHECK(f.time_ns >= last_ns);
        last_ns = f.time_ns;
    }
    CHECK(teardown == 3 * 4 + 1);
    // The slab given back after the end is given back after the cut.
    REQUIRE(t.slabs.back().action == trace::SlabAction::Released);
    CHECK(t.slabs.back().launches_before == bounds[2]);
    CHECK(t.slabs.back().time_ns >= last_ns);

    // Written and read back, its last step can be copied.
    const std::string path = trace::fixtures::scratch_path("trim-first-steps.uvmt");
    trace::write_trace_file(t, path);
    const trace::Trace read = trace::read_trace_file(path);
    CHECK(read.launches.size() == t.launches.size());
    CHECK(read.frees.size() == t.frees.size());
    const replay::Plan plan = replay::make_plan(read, iteration_bounds(read), {1.0, 1});
    CHECK(plan.steps.size() == 3);
}

TEST_CASE("trace trim: keeping every step keeps the trace", "[trim]") {
    trace::Trace t = job_with_slab_release();
    const trace::Trace original = t;
    trace::keep_first_steps(t, iteration_bounds(t), 4);
    CHECK(t.launches.size() == original.launches.size());
    CHECK(t.accesses.size() == original.accesses.size());
    CHECK(t.allocs.size() == original.allocs.size());
    CHECK(t.moves.size() == original.moves.size());
    CHECK(t.iterations.size() == original.iterations.size());
    REQUIRE(t.frees.size() == original.frees.size());
    for (size_t i = 0; i < t.frees.size(); ++i) {
        CHECK(t.frees[i].id == original.frees[i].id);
        CHECK(t.frees[i].time_ns == original.frees[i].time_ns);
        CHECK(t.frees[i].launches_before == original.frees[i].launches_before);
    }
    REQUIRE(t.slabs.size() == original.slabs.size());
    CHECK(t.slabs.back().time_ns == original.slabs.back().time_ns);
}

TEST_CASE("trace trim: without marks, at the detected steps, no step, or too many, refused", "[trim]") {
    trace::Trace t = job_with_slab_release(false);
    const std::vector<uint64_t> bounds = iteration_bounds(t);
    REQUIRE(bounds.size() >= 3);
    CHECK_THROWS_AS(trace::keep_first_steps(t, bounds, 0), std::invalid_argument);
    CHECK_THROWS_AS(trace::keep_first_steps(t, bounds, bounds.size()), std::invalid_argument);
    trace::keep_first_steps(t, bounds, 1);
    CHECK(t.launches.size() == bounds[1]);
    const std::set<uint32_t> kept = pooled_ids(t);
    for (const trace::Free& f : t.frees) CHECK(kept.count(f.id) == 1);
}

TEST_CASE("trace trim: path options keep their file names only", "[trim]") {
    trace::Header header;
    header.options = {{"trace_out", "/home/someone/out/job.uvmt"},
                      {"stats_file", "runs/job.stats.json"},
                      {"log_file", ""},
                      {"framework_settings", "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync/x"},
                      {"policy", "none"},
                      {"not_an_option", "/a/b"}};
    trace::strip_option_directories(header);
    CHECK(header.options["trace_out"] == "job.uvmt");
    CHECK(header.options["stats_file"] == "job.stats.json");
    CHECK(header.options["log_file"].empty());
    CHECK(header.options["framework_settings"] == "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync/x");
    CHECK(header.options["policy"] == "none");
    CHECK(header.options["not_an_option"] == "b"); // an option of a newer library: an absolute path
}

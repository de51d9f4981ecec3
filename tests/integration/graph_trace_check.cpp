// graph_trace_check capture|nodes TRACE: whether the library's trace of
// graph_test's scenario says what the program did: the kernels launched into
// the capture marked as captured, each graph launch recorded with its replay,
// and each replayed launch with the access set of its node. Prints "graph trace
// as expected: ..." and exits 0, or names the first difference and exits 1.
#include "core/trace/format/reader.h"
#include "core/trace/analysis/summary.h"

#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace uvmp::trace;

struct Step {
    std::string kernel;
    std::vector<Access> accesses;
};

std::string describe(std::span<const Access> accesses) {
    std::string text;
    for (const Access& a : accesses)
        text += "{" + std::to_string(a.alloc_id) + "+" + std::to_string(a.offset) + ":" + std::to_string(a.length) + "}";
    return text.empty() ? "{}" : text;
}

bool same(std::span<const Access> got, const std::vector<Access>& want) {
    if (got.size() != want.size()) return false;
    for (size_t i = 0; i < got.size(); ++i)
        if (got[i].alloc_id != want[i].alloc_id || got[i].offset != want[i].offset || got[i].length != want[i].length)
            return false;
    return true;
}

class Checker {
public:
    explicit Checker(const Trace& trace) : trace_(trace) {}

    bool expect(bool ok, const std::string& what) {
        if (!ok && failure_.empty()) failure_ = what;
        return ok;
    }
    const std::string& failure() const { return failure_; }

    std::string kernel(uint32_t id) const { return id < trace_.kernel_names.size() ? trace_.kernel_names[id] : "?"; }

    void captured(const std::vector<Step>& want) {
        const auto& got = trace_.captured_launches;
        if (!expect(got.size() == want.size(), "captured launches: " + std::to_string(got.size()) + ", expected " +
                                                   std::to_string(want.size())))
            return;
        for (size_t i = 0; i < got.size(); ++i) {
            expect(kernel(got[i].kernel_id) == want[i].kernel, "captured launch " + std::to_string(i) + " runs " +
                                                                   kernel(got[i].kernel_id));
            expect(same(trace_.accesses_of(got[i]), want[i].accesses),
                   "captured launch " + std::to_string(i) + " accesses " + describe(trace_.accesses_of(got[i])) +
                       ", expected " + describe(want[i].accesses));
            expect(got[i].capture_id != 0, "captured launch " + std::to_string(i) + " names its capture");
        }
    }

    // Graph launch g replays `want(g)`, with `skipped` nodes left unplanned.
    template <typename Want>
    void replays(size_t count, uint32_t skipped, Want&& want) {
        const auto& graphs = trace_.graph_launches;
        if (!expect(graphs.size() == count, "graph launches: " + std::to_string(graphs.size()) + ", expected " +
                                                std::to_string(count)))
            return;
        size_t replayed = 0;
        const ReplayIndex index(trace_);
        for (size_t g = 0; g < graphs.size(); ++g) {
            const GraphLaunch& launch = graphs[g];
            const std::vector<Step> steps = want(g);
            const std::string name = "graph launch " + std::to_string(g);
            expect(launch.graph_id == 1 && launch.flags == 0, name + " is a launch of graph 1 that ran");
            expect(launch.nodes_skipped == skipped, name + " skipped " + std::to_string(launch.nodes_skipped) +
                                                        " nodes, expected " + std::to_string(skipped));
            if (!expect(launch.replayed == steps.size(), name + " replayed " + std::to_string(launch.replayed)))
                continue;
            for (size_t k = 0; k < steps.size(); ++k) {
                const uint64_t seq = launch.launches_before + k;
                const Launch* found = nullptr;
                for (const Launch& l : trace_.launches)
                    if (l.seq == seq) found = &l;
                const std::string step = name + " step " + std::to_string(k);
                if (!expect(found != nullptr, step + ": no launch record of seq " + std::to_string(seq))) continue;
                expect(index.graph_launch_of(seq) == &launch, step + " is not found as part of its graph launch");
                expect(kernel(found->kernel_id) == steps[k].kernel, step + " runs " + kernel(found->kernel_id) +
                                                                        ", expected " + steps[k].kernel);
                expect(same(trace_.accesses_of(*found), steps[k].accesses),
                       step + " accesses " + describe(trace_.accesses_of(*found)) + ", expected " +
                           describe(steps[k].accesses));
                ++replayed;
            }
        }
        expect(trace_.launches.size() == replayed, "launch records: " + std::to_string(trace_.launches.size()) +
                                                       ", all of them replays: " + std::to_string(replayed));
    }

private:
    const Trace& trace_;
    std::string failure_;
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3 || (std::string(argv[1]) != "capture" && std::string(argv[1]) != "nodes")) {
        std::fprintf(stderr, "usage: %s capture|nodes TRACE\n", argv[0]);
        return 2;
    }
    const bool capture = std::string(argv[1]) == "capture";
    Trace trace;
    try {
        trace = read_trace_file(argv[2]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    std::vector<uint32_t> managed;
    for (const Alloc& a : trace.allocs)
        if (is_managed(a.kind)) managed.push_back(a.id);
    Checker check(trace);
    if (check.expect(managed.size() == 2, "managed allocations: " + std::to_string(managed.size()))) {
        const uint32_t a = managed[0], b = managed[1];
        if (capture) {
            const std::vector<Step> steps = {{"_Z5firstPfi", {{a, 0, 0}}}, {"_Z6second4View", {{b, 256, 0}}}};
            check.captured(steps);
            check.replays(3, 0, [&](size_t) { return steps; });
        } else {
            constexpr uint64_t kBytes = 4096 * 4;
            check.captured({{"_Z4readPj", {{b, 0, 0}}}, {"_Z4fillPj", {{a, 0, 0}}}});
            check.replays(3, 2, [&](size_t g) {
                return std::vector<Step>{{"[graph memset node]", {{a, 0, kBytes}}},
                                         {"_Z4fillPj", {{g < 2 ? a : b, 0, 0}}},
                                         {"[graph memcpy node]", {{a, 0, kBytes}, {b, 0, kBytes}}},
                                         {"_Z4readPj", {{b, 0, 0}}}};
            });
        }
    }
    if (!check.failure().empty()) {
        std::printf("graph trace differs: %s\n", check.failure().c_str());
        return 1;
    }
    std::printf("graph trace as expected: %zu graph launches, %zu replayed launches, %zu captured launches\n",
                trace.graph_launches.size(), trace.launches.size(), trace.captured_launches.size());
    return 0;
}

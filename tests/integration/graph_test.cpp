// Captures CUDA graphs and launches them on the fake driver, reached through
// dlopen("libcuda.so.1") by either route a program takes; see usage().
#include "check_list.h"
#include "graph_entry_points.h"
#include "graph_scenarios.h"

#include <dlfcn.h>

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

using namespace uvmp_integration;

namespace {

int usage(const char* program) {
    std::fprintf(stderr,
                 "usage: %s dlsym|procaddress capture|nodes planned|unwalked|passthrough\n"
                 "  capture      two kernels over two allocations, captured and launched three times\n"
                 "  nodes        set, copy, child-graph and unknown nodes, and a kernel node changed\n"
                 "  planned      the library must plan every graph launch\n"
                 "  unwalked     the library cannot walk the graph: launches pass through unplanned\n"
                 "  passthrough  no library: the same results\n",
                 program);
    return 2;
}

std::optional<GraphExpectation> parse(std::string_view text) {
    if (text == "planned") return GraphExpectation::planned;
    if (text == "unwalked") return GraphExpectation::unwalked;
    if (text == "passthrough") return GraphExpectation::passthrough;
    return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) return usage(argv[0]);
    const std::string route = argv[1];
    const std::string_view scenario = argv[2];
    const auto expectation = parse(argv[3]);
    if ((route != "dlsym" && route != "procaddress") || (scenario != "capture" && scenario != "nodes") ||
        !expectation)
        return usage(argv[0]);
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == nullptr) {
        std::fprintf(stderr, "cannot dlopen libcuda.so.1: %s\n", dlerror());
        return 2;
    }
    CheckList checks;
    std::vector<std::string> missing;
    const GraphEntryPoints entry_points = resolve_graph_entry_points(driver, route, missing);
    for (const std::string& name : missing) checks.expect(false, "resolved " + name);
    if (missing.empty()) {
        if (scenario == "capture") run_graph_capture_scenario(entry_points, *expectation, checks);
        else run_graph_nodes_scenario(entry_points, *expectation, checks);
    }
    return checks.exit_status();
}

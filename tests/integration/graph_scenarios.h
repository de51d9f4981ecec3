// Programs that capture CUDA graphs and launch them, run with the library
// preloaded (which must see every graph launch as the kernels it runs) and
// without it (which must give the same results).
#pragma once

#include "check_list.h"
#include "graph_entry_points.h"

namespace uvmp_integration {

enum class GraphExpectation {
    planned,     // the library walks the graph and plans each launch of it
    unwalked,    // the library cannot walk the graph: its launches pass through unplanned
    passthrough, // no library, or one switched off
};

// Two kernels over two allocations captured into a graph, launched three times
// (twice through cuGraphLaunch, once through its _ptsz variant).
void run_graph_capture_scenario(const GraphEntryPoints& driver, GraphExpectation expectation, CheckList& checks);

// A graph of a set, a kernel, a copy, a child graph of a kernel, and nodes of
// kinds nothing is planned for (a host node, one of no known kind), launched
// twice, then once more after a kernel node's argument is changed in the
// executable graph.
void run_graph_nodes_scenario(const GraphEntryPoints& driver, GraphExpectation expectation, CheckList& checks);

}  // namespace uvmp_integration

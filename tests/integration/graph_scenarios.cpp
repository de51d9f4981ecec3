#include "graph_scenarios.h"

#include "library_api.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

namespace uvmp_integration {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

std::string result_text(CUresult result) { return std::to_string(static_cast<int>(result)); }

void expect_success(CheckList& checks, CUresult result, const std::string& what) {
    checks.expect(result == CUDA_SUCCESS, what + " returned " + result_text(result));
}

// __global__ void second(View v): a pointer inside a struct passed by value.
struct View {
    CUdeviceptr data;
    int count;
    int unused;
};

// Lets the library's worker and mover finish their moves before the summary.
void pause_if_asked() {
    if (const char* ms = std::getenv("GRAPH_TEST_PAUSE_MS"))
        std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
}

// What the library's counters must say of the graphs, or that it is absent.
void check_library_stats(GraphExpectation expectation, std::uint64_t launches, std::uint64_t steps_per_launch,
                         std::uint64_t captured, CheckList& checks) {
    const auto stats = find_library_api().stats();
    if (expectation == GraphExpectation::passthrough) {
        checks.expect(!stats || stats->graph_launches == 0, "the library counted no graph launch");
        return;
    }
    checks.expect(stats.has_value(), "uvmp_get_stats is found and succeeds");
    if (!stats) return;
    checks.expect_eq("stats.allocs_converted", stats->allocs_converted, 2);
    checks.expect_eq("stats.launches_captured", stats->launches_captured, captured);
    checks.expect_eq("stats.graph_launches", stats->graph_launches, launches);
    const bool walked = expectation == GraphExpectation::planned;
    checks.expect_eq("stats.graph_launches_unknown", stats->graph_launches_unknown, walked ? 0 : launches);
    checks.expect_eq("stats.graph_steps_replayed", stats->graph_steps_replayed,
                     walked ? launches * steps_per_launch : 0);
}

struct Buffers {
    CUdeviceptr a = 0;
    CUdeviceptr b = 0;
};

// cuInit and the scenario's two allocations.
Buffers start(const GraphEntryPoints& d, std::uint64_t bytes, CheckList& checks) {
    expect_success(checks, d.init(0), "cuInit");
    Buffers buffers;
    expect_success(checks, d.mem_alloc(&buffers.a, bytes), "cuMemAlloc_v2(A)");
    expect_success(checks, d.mem_alloc(&buffers.b, bytes), "cuMemAlloc_v2(B)");
    return buffers;
}

// Everything a scenario made, destroyed, every call checked.
void finish(const GraphEntryPoints& d, CUgraphExec exec, std::initializer_list<CUgraph> graphs, const Buffers& buffers,
            std::initializer_list<CUstream> streams, CheckList& checks) {
    expect_success(checks, d.exec_destroy(exec), "cuGraphExecDestroy");
    for (CUgraph graph : graphs) expect_success(checks, d.graph_destroy(graph), "cuGraphDestroy");
    expect_success(checks, d.mem_free(buffers.a), "cuMemFree_v2(A)");
    expect_success(checks, d.mem_free(buffers.b), "cuMemFree_v2(B)");
    for (CUstream stream : streams) expect_success(checks, d.stream_destroy(stream), "cuStreamDestroy_v2");
}

}  // namespace

void run_graph_capture_scenario(const GraphEntryPoints& d, GraphExpectation expectation, CheckList& checks) {
    const Buffers buffers = start(d, 4 * kMiB, checks);
    CUdeviceptr a = buffers.a, b = buffers.b;
    const size_t first_offsets[] = {0, 8}, first_sizes[] = {8, 4};
    CUfunction first = d.make_function("_Z5firstPfi", 2, first_offsets, first_sizes);
    const size_t second_offsets[] = {0}, second_sizes[] = {sizeof(View)};
    // Launched by its CUkernel handle, as the runtime's lazy loading does.
    auto second = reinterpret_cast<CUfunction>(d.make_kernel("_Z6second4View", 1, second_offsets, second_sizes));
    CUstream stream = nullptr;
    expect_success(checks, d.stream_create(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

    expect_success(checks, d.begin_capture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture_v2");
    int count = 1024;
    void* first_params[] = {&a, &count};
    expect_success(checks, d.launch_kernel(first, 4, 1, 1, 256, 1, 1, 0, stream, first_params, nullptr),
                   "cuLaunchKernel(first) during capture");
    View view{b + 256, count, 0};
    void* second_params[] = {&view};
    expect_success(checks, d.launch_kernel(second, 4, 1, 1, 256, 1, 1, 0, stream, second_params, nullptr),
                   "cuLaunchKernel(second) during capture");
    CUgraph graph = nullptr;
    expect_success(checks, d.end_capture(stream, &graph), "cuStreamEndCapture");
    const fakecuda_counts captured = d.counters();
    checks.expect_eq("launches captured by the driver", captured.captured_launches, 2);
    checks.expect_eq("kernels run during the capture", captured.launch_kernel, 0);

    CUgraphExec exec = nullptr;
    expect_success(checks, d.instantiate(&exec, graph, 0), "cuGraphInstantiate");
    for (int i = 0; i < 3; ++i) {
        auto launch = i < 2 ? d.graph_launch : d.graph_launch_per_thread;
        expect_success(checks, launch(exec, stream), std::string(i < 2 ? "cuGraphLaunch" : "cuGraphLaunch_ptsz") +
                                                         " #" + std::to_string(i + 1));
    }
    expect_success(checks, d.stream_synchronize(stream), "cuStreamSynchronize");

    // What the program sees: every launch ran both kernels with the captured arguments.
    const fakecuda_counts ran = d.counters();
    checks.expect_eq("graph launches the driver ran", ran.graph_launches, 3);
    checks.expect_eq("kernel nodes the driver ran", ran.graph_kernel_runs, 6);
    checks.expect_eq("launches the driver refused", ran.launches_failed, 0);
    View last{};
    checks.expect(d.last_launch_params(&last, sizeof last) == sizeof last && last.data == view.data &&
                      last.count == view.count,
                  "the last kernel run got the captured arguments");
    check_library_stats(expectation, 3, 2, 2, checks);
    pause_if_asked();

    finish(d, exec, {graph}, buffers, {stream}, checks);
}

void run_graph_nodes_scenario(const GraphEntryPoints& d, GraphExpectation expectation, CheckList& checks) {
    constexpr size_t kWords = 4096;
    const Buffers buffers = start(d, 1 * kMiB, checks);
    CUdeviceptr a = buffers.a, b = buffers.b;
    const size_t offsets[] = {0}, sizes[] = {8};
    CUfunction fill = d.make_function("_Z4fillPj", 1, offsets, sizes);
    CUfunction read = d.make_function("_Z4readPj", 1, offsets, sizes);
    CUstream main_stream = nullptr, side_stream = nullptr;
    expect_success(checks, d.stream_create(&main_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate(main)");
    expect_success(checks, d.stream_create(&side_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate(side)");

    // The child graph: one kernel reading B.
    expect_success(checks, d.begin_capture(side_stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                   "cuStreamBeginCapture_v2(side)");
    void* read_params[] = {&b};
    expect_success(checks, d.launch_kernel(read, 1, 1, 1, 32, 1, 1, 0, side_stream, read_params, nullptr),
                   "cuLaunchKernel(read) during capture");
    CUgraph child = nullptr;
    expect_success(checks, d.end_capture(side_stream, &child), "cuStreamEndCapture(side)");

    expect_success(checks, d.begin_capture(main_stream, CU_STREAM_CAPTURE_MODE_RELAXED),
                   "cuStreamBeginCapture_v2(main)");
    expect_success(checks, d.memset_d32_async(a, 7, kWords, main_stream), "cuMemsetD32Async during capture");
    void* fill_params[] = {&a};
    expect_success(checks, d.launch_kernel(fill, 1, 1, 1, 32, 1, 1, 0, main_stream, fill_params, nullptr),
                   "cuLaunchKernel(fill) during capture");
    expect_success(checks, d.memcpy_dtod_async(b, a, kWords * 4, main_stream), "cuMemcpyDtoDAsync_v2 during capture");
    CUgraph graph = nullptr;
    expect_success(checks, d.end_capture(main_stream, &graph), "cuStreamEndCapture(main)");
    CUgraphNode child_node = nullptr, host_node = nullptr, strange_node = nullptr;
    expect_success(checks, d.add_child_graph_node(&child_node, graph, nullptr, 0, child), "cuGraphAddChildGraphNode");
    expect_success(checks, d.add_opaque_node(&host_node, graph, CU_GRAPH_NODE_TYPE_HOST), "a host node");
    expect_success(checks, d.add_opaque_node(&strange_node, graph, 99), "a node of no known kind");
    // Nothing ran yet: B holds no sevens.
    std::memset(reinterpret_cast<void*>(b), 0, kWords * 4);

    CUDA_GRAPH_INSTANTIATE_PARAMS instantiate{};
    CUgraphExec exec = nullptr;
    expect_success(checks, d.instantiate_with_params(&exec, graph, &instantiate), "cuGraphInstantiateWithParams");
    checks.expect(instantiate.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS, "instantiation succeeded");
    for (int i = 0; i < 2; ++i)
        expect_success(checks, d.graph_launch(exec, main_stream), "cuGraphLaunch #" + std::to_string(i + 1));

    // The fill kernel's node gets B instead of A in the executable graph.
    size_t count = 0;
    expect_success(checks, d.graph_get_nodes(graph, nullptr, &count), "cuGraphGetNodes (count)");
    std::vector<CUgraphNode> nodes(count);
    expect_success(checks, d.graph_get_nodes(graph, nodes.data(), &count), "cuGraphGetNodes");
    CUgraphNode fill_node = nullptr;
    for (CUgraphNode node : nodes) {
        CUgraphNodeType type{};
        if (!fill_node && d.node_get_type(node, &type) == CUDA_SUCCESS && type == CU_GRAPH_NODE_TYPE_KERNEL)
            fill_node = node;
    }
    CUDA_KERNEL_NODE_PARAMS_v2 changed{};
    changed.func = fill;
    changed.gridDimX = changed.gridDimY = changed.gridDimZ = 1;
    changed.blockDimX = 32, changed.blockDimY = changed.blockDimZ = 1;
    void* changed_params[] = {&b};
    changed.kernelParams = changed_params;
    expect_success(checks, d.exec_kernel_node_set_params(exec, fill_node, &changed), "cuGraphExecKernelNodeSetParams");
    expect_success(checks, d.graph_launch(exec, main_stream), "cuGraphLaunch #3");
    expect_success(checks, d.stream_synchronize(main_stream), "cuStreamSynchronize");

    const fakecuda_counts ran = d.counters();
    checks.expect_eq("graph launches the driver ran", ran.graph_launches, 3);
    checks.expect_eq("kernel nodes the driver ran", ran.graph_kernel_runs, 6);
    checks.expect_eq("set nodes the driver ran", ran.graph_memsets, 3);
    checks.expect_eq("copy nodes the driver ran", ran.graph_memcpys, 3);
    std::vector<std::uint32_t> copied(kWords);
    std::memcpy(copied.data(), reinterpret_cast<const void*>(b), kWords * 4);
    bool all_sevens = true;
    for (std::uint32_t word : copied) all_sevens = all_sevens && word == 7;
    checks.expect(all_sevens, "B holds what the graph's set and copy nodes wrote");
    // The set, the kernel, the copy and the child graph's kernel touch memory; two nodes do not.
    check_library_stats(expectation, 3, 4, 2, checks);
    pause_if_asked();

    finish(d, exec, {graph, child}, buffers, {main_stream, side_stream}, checks);
}

}  // namespace uvmp_integration

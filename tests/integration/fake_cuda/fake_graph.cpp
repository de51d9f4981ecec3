// CUDA graphs, as much as the library's tests need: stream capture (kernel
// launches, 32-bit sets and device-to-device copies queued on a capturing
// stream become nodes), child graph and opaque nodes, the node queries, executable
// graphs and their launches. A launch runs the graph's nodes in order: kernels as
// a direct launch does (nothing but counted, their parameters kept), sets and
// copies on the fake's memory.
#include "fake_faults.h"
#include "fake_state.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <set>

using namespace fakecuda;

namespace {

struct Graph;

struct Node {
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    const Node* origin = nullptr; // in an executable graph: the node it was made from
    // Kernel nodes.
    const void* handle = nullptr;
    bool is_cukernel = false;
    std::vector<std::size_t> param_offsets;
    unsigned grid[3] = {1, 1, 1};
    unsigned block[3] = {1, 1, 1};
    std::vector<unsigned char> params;
    std::vector<void*> param_pointers; // into params, as cuGraphKernelNodeGetParams hands them out
    // Set and copy nodes.
    CUDA_MEMSET_NODE_PARAMS set{};
    CUDA_MEMCPY3D copy{};
    // Child graph nodes.
    std::unique_ptr<Graph> child;

    void point_at_params() {
        param_pointers.clear();
        for (std::size_t offset : param_offsets) param_pointers.push_back(params.data() + offset);
    }
};

struct Graph {
    std::vector<std::unique_ptr<Node>> nodes;
};

struct Exec {
    std::vector<std::unique_ptr<Node>> nodes;
};

struct Capture {
    Graph* graph = nullptr;
    std::uint64_t id = 0;
};

struct GraphState {
    std::mutex mutex;
    std::set<const Graph*> graphs;       // made by cuGraphCreate or a capture: the application's
    std::set<const Graph*> child_graphs; // owned by a child graph node
    std::set<const Node*> nodes;         // of either kind of graph
    std::set<const Exec*> execs;
    std::map<CUstream, Capture> captures;
    std::uint64_t next_capture_id = 1;
};

GraphState& state() {
    static GraphState* instance = new GraphState;
    return *instance;
}

// Captures going on. Every kernel launch (and, under the library, a capture
// query before it) asks whether its stream captures: while none does, the answer
// comes without the state's lock, which a program forking while another of its
// threads launches could otherwise leave held in the child.
std::atomic<int> g_captures{0};

std::unique_ptr<Graph> copy_child_graph(const Graph& from, bool for_exec);

// A copy of `from`: for an executable graph (which names `from` as the node's
// origin), or for a graph, whose child graphs and their nodes the node queries
// accept. The caller holds the state's lock.
std::unique_ptr<Node> copy_node(const Node& from, bool for_exec) {
    auto node = std::make_unique<Node>();
    node->type = from.type;
    node->origin = for_exec ? &from : nullptr;
    node->handle = from.handle;
    node->is_cukernel = from.is_cukernel;
    node->param_offsets = from.param_offsets;
    std::copy(std::begin(from.grid), std::end(from.grid), node->grid);
    std::copy(std::begin(from.block), std::end(from.block), node->block);
    node->params = from.params;
    node->point_at_params();
    node->set = from.set;
    node->copy = from.copy;
    if (from.child) node->child = copy_child_graph(*from.child, for_exec);
    return node;
}

std::unique_ptr<Graph> copy_child_graph(const Graph& from, bool for_exec) {
    auto graph = std::make_unique<Graph>();
    for (const auto& node : from.nodes) graph->nodes.push_back(copy_node(*node, for_exec));
    if (!for_exec) {
        state().child_graphs.insert(graph.get());
        for (const auto& node : graph->nodes) state().nodes.insert(node.get());
    }
    return graph;
}

Node* add_node(Graph& graph, std::unique_ptr<Node> node) {
    Node* raw = node.get();
    graph.nodes.push_back(std::move(node));
    state().nodes.insert(raw);
    return raw;
}

void forget_nodes(const Graph& graph) {
    for (const auto& node : graph.nodes) {
        state().nodes.erase(node.get());
        if (!node->child) continue;
        state().child_graphs.erase(node->child.get());
        forget_nodes(*node->child);
    }
}

// The capture a stream queues into, or nullptr. The caller holds the lock.
Capture* capture_of(CUstream stream) {
    auto it = state().captures.find(stream);
    return it == state().captures.end() ? nullptr : &it->second;
}

bool in_one_allocation(CUdeviceptr address, std::size_t bytes) {
    const auto allocation = find_allocation(address);
    return allocation && address + bytes <= allocation->base + allocation->size;
}

CUresult run_nodes(const std::vector<std::unique_ptr<Node>>& nodes);

CUresult run_node(const Node& node) {
    switch (node.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        remember_launch_params(node.params);
        ++counters().graph_kernel_runs;
        return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_MEMSET: {
        const std::size_t bytes = node.set.width * node.set.elementSize;
        if (!in_one_allocation(node.set.dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
        auto* out = reinterpret_cast<unsigned char*>(node.set.dst);
        for (std::size_t i = 0; i < node.set.width; ++i) std::memcpy(out + i * 4, &node.set.value, 4);
        ++counters().graph_memsets;
        return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
        const std::size_t bytes = node.copy.WidthInBytes;
        if (!in_one_allocation(node.copy.srcDevice, bytes) || !in_one_allocation(node.copy.dstDevice, bytes))
            return CUDA_ERROR_INVALID_VALUE;
        std::memmove(reinterpret_cast<void*>(node.copy.dstDevice), reinterpret_cast<const void*>(node.copy.srcDevice),
                     bytes);
        ++counters().graph_memcpys;
        return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_GRAPH: return run_nodes(node.child->nodes);
    default: return CUDA_SUCCESS;
    }
}

CUresult run_nodes(const std::vector<std::unique_ptr<Node>>& nodes) {
    for (const auto& node : nodes)
        if (const CUresult r = run_node(*node); r != CUDA_SUCCESS) return r;
    return CUDA_SUCCESS;
}

CUresult begin_capture(CUstream stream) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    // The legacy stream cannot be captured; nor can the fake's special handles.
    Stream* s = find_stream(stream);
    if (s == nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    std::lock_guard lock(state().mutex);
    if (capture_of(stream)) return CUDA_ERROR_ILLEGAL_STATE;
    auto graph = std::make_unique<Graph>();
    state().graphs.insert(graph.get());
    state().captures[stream] = {graph.release(), state().next_capture_id++};
    ++g_captures;
    set_capturing(*s, true);
    return CUDA_SUCCESS;
}

CUresult end_capture(CUstream stream, CUgraph* out) {
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Stream* s = find_stream(stream);
    std::lock_guard lock(state().mutex);
    Capture* capture = capture_of(stream);
    if (s == nullptr || capture == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
    *out = reinterpret_cast<CUgraph>(capture->graph);
    state().captures.erase(stream);
    --g_captures;
    set_capturing(*s, false);
    return CUDA_SUCCESS;
}

CUresult capture_info(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                      const CUgraphNode** dependencies, const CUgraphEdgeData** edge_data, size_t* count) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
    // A stream marked capturing by fakecuda_set_stream_capturing captures into no graph.
    const Stream* s = find_stream(stream);
    *status = s != nullptr && s->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    if (g_captures.load() != 0) {
        std::lock_guard lock(state().mutex);
        const Capture* capture = capture_of(stream);
        if (capture && id) *id = capture->id;
        if (capture && graph) *graph = reinterpret_cast<CUgraph>(capture->graph);
    }
    if (dependencies) *dependencies = nullptr;
    if (edge_data) *edge_data = nullptr;
    if (count) *count = 0;
    return CUDA_SUCCESS;
}

CUresult instantiate(CUgraphExec* out, CUgraph graph) {
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(state().mutex);
    const auto* from = reinterpret_cast<const Graph*>(graph);
    if (!state().graphs.count(from)) return CUDA_ERROR_INVALID_VALUE;
    auto exec = std::make_unique<Exec>();
    for (const auto& node : from->nodes) exec->nodes.push_back(copy_node(*node, true));
    state().execs.insert(exec.get());
    *out = reinterpret_cast<CUgraphExec>(exec.release());
    return CUDA_SUCCESS;
}

CUresult launch(CUgraphExec handle, CUstream stream) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
    std::lock_guard lock(state().mutex);
    const auto* exec = reinterpret_cast<const Exec*>(handle);
    if (!state().execs.count(exec)) return CUDA_ERROR_INVALID_VALUE;
    // Graphs launched into a capture (child graphs of the graph being made) are beyond this fake.
    if (capture_of(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (const CUresult r = run_nodes(exec->nodes); r != CUDA_SUCCESS) return r;
    ++counters().graph_launches;
    return CUDA_SUCCESS;
}

CUresult instantiate_with_params(CUgraphExec* exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
    if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const CUresult r = instantiate(exec, graph);
    params->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    params->hErrNode_out = nullptr;
    return r;
}

// Queues a set or copy node on a capturing stream; false when the stream does not capture.
bool capture_node(CUstream stream, std::unique_ptr<Node> node) {
    std::lock_guard lock(state().mutex);
    Capture* capture = capture_of(stream);
    if (!capture) return false;
    add_node(*capture->graph, std::move(node));
    return true;
}

CUresult memset_d32(CUdeviceptr dst, unsigned int value, size_t count, CUstream stream) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_stream(stream) || !in_one_allocation(dst, count * 4)) return CUDA_ERROR_INVALID_VALUE;
    auto node = std::make_unique<Node>();
    node->type = CU_GRAPH_NODE_TYPE_MEMSET;
    node->set = {dst, count * 4, value, 4, count, 1};
    if (capture_node(stream, std::move(node))) return CUDA_SUCCESS;
    auto* out = reinterpret_cast<unsigned char*>(dst);
    for (std::size_t i = 0; i < count; ++i) std::memcpy(out + i * 4, &value, 4);
    return CUDA_SUCCESS;
}

CUresult memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_stream(stream) || !in_one_allocation(dst, bytes) || !in_one_allocation(src, bytes))
        return CUDA_ERROR_INVALID_VALUE;
    auto node = std::make_unique<Node>();
    node->type = CU_GRAPH_NODE_TYPE_MEMCPY;
    node->copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    node->copy.srcDevice = src;
    node->copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    node->copy.dstDevice = dst;
    node->copy.WidthInBytes = bytes;
    node->copy.Height = 1;
    node->copy.Depth = 1;
    if (capture_node(stream, std::move(node))) return CUDA_SUCCESS;
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    return CUDA_SUCCESS;
}

// A node of a live graph, of the type asked for; nullptr otherwise. The caller holds the lock.
const Node* find_node(CUgraphNode handle, CUgraphNodeType type) {
    const auto* node = reinterpret_cast<const Node*>(handle);
    return state().nodes.count(node) && node->type == type ? node : nullptr;
}

// Answers a query of a node of `type` of a live graph: `fill` writes what it asks for.
template <typename Out, typename Fill>
CUresult query_node(CUgraphNode handle, CUgraphNodeType type, Out* out, Fill&& fill) {
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(state().mutex);
    const Node* node = find_node(handle, type);
    if (node == nullptr) return CUDA_ERROR_INVALID_VALUE;
    fill(*node, *out);
    return CUDA_SUCCESS;
}

}  // namespace

namespace fakecuda {

bool capture_kernel(CUstream stream, const void* handle, const Kernel& kernel, const unsigned (&grid)[3],
                    const unsigned (&block)[3], const std::vector<unsigned char>& params) {
    if (g_captures.load() == 0) return false;
    std::lock_guard lock(state().mutex);
    Capture* capture = capture_of(stream);
    if (!capture) return false;
    auto node = std::make_unique<Node>();
    node->type = CU_GRAPH_NODE_TYPE_KERNEL;
    node->handle = handle;
    node->is_cukernel = kernel.is_cukernel;
    for (const KernelParam& param : kernel.params) node->param_offsets.push_back(param.offset);
    std::copy(std::begin(grid), std::end(grid), node->grid);
    std::copy(std::begin(block), std::end(block), node->block);
    node->params = params;
    node->point_at_params();
    add_node(*capture->graph, std::move(node));
    ++counters().captured_launches;
    return true;
}

}  // namespace fakecuda

// The _ptsz variants call the fake's own code, not its exported entry points,
// which a preloaded library's hooks take the place of.
FAKECUDA_EXPORT CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuStreamBeginCapture_v2");
    return begin_capture(stream);
}

FAKECUDA_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuStreamBeginCapture_v2");
    return begin_capture(stream);
}

FAKECUDA_EXPORT CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) { return end_capture(stream, graph); }

FAKECUDA_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph* graph) {
    return end_capture(stream, graph);
}

FAKECUDA_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id,
                                                   CUgraph* graph, const CUgraphNode** dependencies,
                                                   const CUgraphEdgeData** edge_data, size_t* count) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuStreamGetCaptureInfo_v3");
    return capture_info(stream, status, id, graph, dependencies, edge_data, count);
}

FAKECUDA_EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream stream, CUstreamCaptureStatus* status,
                                                        cuuint64_t* id, CUgraph* graph,
                                                        const CUgraphNode** dependencies,
                                                        const CUgraphEdgeData** edge_data, size_t* count) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuStreamGetCaptureInfo_v3");
    return capture_info(stream, status, id, graph, dependencies, edge_data, count);
}

FAKECUDA_EXPORT CUresult cuGraphCreate(CUgraph* graph, unsigned int flags) {
    if (graph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(state().mutex);
    auto made = std::make_unique<Graph>();
    state().graphs.insert(made.get());
    *graph = reinterpret_cast<CUgraph>(made.release());
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuGraphDestroy(CUgraph graph) {
    std::lock_guard lock(state().mutex);
    auto* doomed = reinterpret_cast<Graph*>(graph);
    if (!state().graphs.erase(doomed)) return CUDA_ERROR_INVALID_VALUE;
    forget_nodes(*doomed);
    delete doomed;
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuGraphGetNodes");
    if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(state().mutex);
    const auto* from = reinterpret_cast<const Graph*>(graph);
    if (!state().graphs.count(from) && !state().child_graphs.count(from)) return CUDA_ERROR_INVALID_VALUE;
    if (nodes == nullptr) {
        *count = from->nodes.size();
        return CUDA_SUCCESS;
    }
    for (std::size_t i = 0; i < *count; ++i)
        nodes[i] = i < from->nodes.size() ? reinterpret_cast<CUgraphNode>(from->nodes[i].get()) : nullptr;
    *count = std::min(*count, from->nodes.size());
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
    if (type == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(state().mutex);
    const auto* found = reinterpret_cast<const Node*>(node);
    if (!state().nodes.count(found)) return CUDA_ERROR_INVALID_VALUE;
    *type = found->type;
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode handle, CUDA_KERNEL_NODE_PARAMS_v2* params) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuGraphKernelNodeGetParams_v2");
    return query_node(handle, CU_GRAPH_NODE_TYPE_KERNEL, params, [](const Node& node, CUDA_KERNEL_NODE_PARAMS_v2& out) {
        out = {};
        // As the driver hands a kernel launched by its CUkernel handle back.
        if (node.is_cukernel)
            out.kern = static_cast<CUkernel>(const_cast<void*>(node.handle));
        else
            out.func = static_cast<CUfunction>(const_cast<void*>(node.handle));
        out.gridDimX = node.grid[0], out.gridDimY = node.grid[1], out.gridDimZ = node.grid[2];
        out.blockDimX = node.block[0], out.blockDimY = node.block[1], out.blockDimZ = node.block[2];
        out.kernelParams = const_cast<void**>(node.param_pointers.data());
    });
}

FAKECUDA_EXPORT CUresult cuGraphMemsetNodeGetParams(CUgraphNode handle, CUDA_MEMSET_NODE_PARAMS* params) {
    return query_node(handle, CU_GRAPH_NODE_TYPE_MEMSET, params,
                      [](const Node& node, CUDA_MEMSET_NODE_PARAMS& out) { out = node.set; });
}

FAKECUDA_EXPORT CUresult cuGraphMemcpyNodeGetParams(CUgraphNode handle, CUDA_MEMCPY3D* params) {
    return query_node(handle, CU_GRAPH_NODE_TYPE_MEMCPY, params,
                      [](const Node& node, CUDA_MEMCPY3D& out) { out = node.copy; });
}

FAKECUDA_EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode handle, CUgraph* graph) {
    return query_node(handle, CU_GRAPH_NODE_TYPE_GRAPH, graph,
                      [](const Node& node, CUgraph& out) { out = reinterpret_cast<CUgraph>(node.child.get()); });
}

FAKECUDA_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* dependencies,
                                                  size_t count, CUgraph child) {
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(state().mutex);
    auto* parent = reinterpret_cast<Graph*>(graph);
    const auto* from = reinterpret_cast<const Graph*>(child);
    if (!state().graphs.count(parent) || !state().graphs.count(from)) return CUDA_ERROR_INVALID_VALUE;
    // The child graph is copied into the node, as the driver clones it.
    auto node = std::make_unique<Node>();
    node->type = CU_GRAPH_NODE_TYPE_GRAPH;
    node->child = copy_child_graph(*from, false);
    *out = reinterpret_cast<CUgraphNode>(add_node(*parent, std::move(node)));
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuGraphInstantiateWithFlags");
    return instantiate(exec, graph);
}

FAKECUDA_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec* exec, CUgraph graph,
                                                      CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
    return instantiate_with_params(exec, graph, params);
}

FAKECUDA_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* exec, CUgraph graph,
                                                           CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
    return instantiate_with_params(exec, graph, params);
}

FAKECUDA_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuGraphLaunch");
    return launch(exec, stream);
}

FAKECUDA_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuGraphLaunch");
    return launch(exec, stream);
}

FAKECUDA_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
    std::lock_guard lock(state().mutex);
    auto* doomed = reinterpret_cast<Exec*>(exec);
    if (!state().execs.erase(doomed)) return CUDA_ERROR_INVALID_VALUE;
    delete doomed;
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec handle, CUgraphNode node,
                                                           const CUDA_KERNEL_NODE_PARAMS_v2* params) {
    if (params == nullptr || params->kernelParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(state().mutex);
    auto* exec = reinterpret_cast<Exec*>(handle);
    if (!state().execs.count(exec)) return CUDA_ERROR_INVALID_VALUE;
    const auto* origin = reinterpret_cast<const Node*>(node);
    for (auto& made : exec->nodes) {
        if (made->origin != origin || made->type != CU_GRAPH_NODE_TYPE_KERNEL) continue;
        const Kernel* kernel = find_kernel(made->handle);
        if (kernel == nullptr) return CUDA_ERROR_INVALID_VALUE;
        // Only the arguments change here: the kernel and its layout stay.
        for (std::size_t i = 0; i < kernel->params.size(); ++i)
            std::memcpy(made->params.data() + kernel->params[i].offset, params->kernelParams[i],
                        kernel->params[i].size);
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

FAKECUDA_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count, CUstream stream) {
    return memset_d32(dst, value, count, stream);
}

FAKECUDA_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int value, size_t count, CUstream stream) {
    return memset_d32(dst, value, count, stream);
}

FAKECUDA_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
    return memcpy_dtod(dst, src, bytes, stream);
}

FAKECUDA_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
    return memcpy_dtod(dst, src, bytes, stream);
}

FAKECUDA_EXPORT CUresult fakecuda_graph_add_opaque_node(CUgraphNode* out, CUgraph graph, int type) {
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(state().mutex);
    auto* into = reinterpret_cast<Graph*>(graph);
    if (!state().graphs.count(into)) return CUDA_ERROR_INVALID_VALUE;
    auto node = std::make_unique<Node>();
    node->type = static_cast<CUgraphNodeType>(type);
    *out = reinterpret_cast<CUgraphNode>(add_node(*into, std::move(node)));
    return CUDA_SUCCESS;
}

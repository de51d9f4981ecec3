#include "driver/intercept/graph_walk.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace uvmp::driver {
namespace {

// Every 8-byte word of `bytes`: a device pointer may sit in any of them, also
// inside a struct passed by value, as for a direct launch.
void append_words(const void* bytes, size_t size, std::vector<uint64_t>& words) {
    const auto* at = static_cast<const unsigned char*>(bytes);
    for (size_t offset = 0; offset + sizeof(uint64_t) <= size; offset += sizeof(uint64_t)) {
        uint64_t word;
        std::memcpy(&word, at + offset, sizeof word);
        if (word != 0) words.push_back(word);
    }
}

// Where one side of a copy lies, when it is memory a pointer can name (not an array).
std::optional<uint64_t> copy_side(CUmemorytype type, const void* host, CUdeviceptr device) {
    switch (type) {
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: return device;
    // Managed memory is a host address too.
    case CU_MEMORYTYPE_HOST: return reinterpret_cast<uint64_t>(host);
    default: return std::nullopt;
    }
}

// Child graphs inside child graphs deeper than this are left unplanned rather
// than followed: a graph nests far less deep in practice.
constexpr int kMaxDepth = 8;

class Walker {
public:
    Walker(const DriverTable& table, const KernelLayout& layout, WalkFailure& failure)
        : table_(table), layout_(layout), failure_(failure) {}

    bool walk(CUgraph graph, const void* owner, int depth, GraphReplay& out) {
        size_t count = 0;
        if (!call("cuGraphGetNodes", table_.cuGraphGetNodes, graph, nullptr, &count)) return false;
        std::vector<CUgraphNode> nodes(count);
        if (count && !call("cuGraphGetNodes", table_.cuGraphGetNodes, graph, nodes.data(), &count)) return false;
        // Fewer when the graph lost nodes between the two calls.
        nodes.resize(std::min(count, nodes.size()));
        for (CUgraphNode node : nodes)
            if (node && !walk_node(node, owner ? owner : node, depth, out)) return false;
        return true;
    }

private:
    bool walk_node(CUgraphNode node, const void* owner, int depth, GraphReplay& out) {
        CUgraphNodeType type{};
        if (!call("cuGraphNodeGetType", table_.cuGraphNodeGetType, node, &type)) return false;
        switch (type) {
        case CU_GRAPH_NODE_TYPE_KERNEL: {
            CUDA_KERNEL_NODE_PARAMS_v2 params{};
            if (!call("cuGraphKernelNodeGetParams_v2", table_.cuGraphKernelNodeGetParams_v2, node, &params)) return false;
            const KernelNode kernel = kernel_node(params);
            out.steps.push_back(kernel_step(owner, kernel, layout_(kernel.function)));
            return true;
        }
        case CU_GRAPH_NODE_TYPE_MEMCPY: {
            CUDA_MEMCPY3D params{};
            if (!call("cuGraphMemcpyNodeGetParams", table_.cuGraphMemcpyNodeGetParams, node, &params)) return false;
            out.steps.push_back(copy_step(owner, params));
            return true;
        }
        case CU_GRAPH_NODE_TYPE_MEMSET: {
            CUDA_MEMSET_NODE_PARAMS params{};
            if (!call("cuGraphMemsetNodeGetParams", table_.cuGraphMemsetNodeGetParams, node, &params)) return false;
            out.steps.push_back(set_step(owner, set_node(params)));
            return true;
        }
        case CU_GRAPH_NODE_TYPE_GRAPH: {
            if (depth >= kMaxDepth) break;
            CUgraph child = nullptr;
            if (!call("cuGraphChildGraphNodeGetGraph", table_.cuGraphChildGraphNodeGetGraph, node, &child))
                return false;
            return walk(child, owner, depth + 1, out);
        }
        // Conditional nodes run their bodies a number of times known only on the
        // GPU; host, event, semaphore, memory-node and empty nodes touch no
        // converted memory; later kinds are not known here. Nothing is planned for
        // any of them.
        default: break;
        }
        ++out.nodes_skipped;
        return true;
    }

    template <typename Fn, typename... Args>
    bool call(const char* name, Fn fn, Args... args) {
        const CUresult result = fn ? fn(args...) : CUDA_ERROR_NOT_FOUND;
        if (result == CUDA_SUCCESS) return true;
        failure_ = {name, result};
        return false;
    }

    const DriverTable& table_;
    const KernelLayout& layout_;
    WalkFailure& failure_;
};

} // namespace

ParamBuffer param_buffer(void** extra) {
    ParamBuffer buffer;
    for (void** e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
        if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer.data = e[1];
        else if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE && e[1]) buffer.bytes = *static_cast<size_t*>(e[1]);
    }
    return buffer;
}

GraphStep kernel_step(const void* node, const KernelNode& kernel, const KernelInfo& layout) {
    GraphStep step;
    step.kind = GraphStep::Kind::Kernel;
    step.node = node;
    step.function = kernel.function;
    for (int i = 0; i < 3; ++i) {
        step.grid[i] = kernel.grid[i];
        step.block[i] = kernel.block[i];
    }
    if (kernel.params) {
        for (size_t i = 0; i < layout.params.size(); ++i)
            if (kernel.params[i]) append_words(kernel.params[i], layout.params[i].size, step.words);
    } else if (kernel.extra) {
        const ParamBuffer buffer = param_buffer(kernel.extra);
        if (buffer.data) append_words(buffer.data, buffer.bytes, step.words);
    }
    return step;
}

GraphStep copy_step(const void* node, const CUDA_MEMCPY3D& copy) {
    GraphStep step;
    step.kind = GraphStep::Kind::Memcpy;
    step.node = node;
    if (const auto src = copy_side(copy.srcMemoryType, copy.srcHost, copy.srcDevice))
        step.ranges.push_back(copy_range(*src, copy.srcXInBytes, copy.srcY, copy.srcZ, copy.srcPitch, copy.srcHeight,
                                         copy.WidthInBytes, copy.Height, copy.Depth));
    if (const auto dst = copy_side(copy.dstMemoryType, copy.dstHost, copy.dstDevice))
        step.ranges.push_back(copy_range(*dst, copy.dstXInBytes, copy.dstY, copy.dstZ, copy.dstPitch, copy.dstHeight,
                                         copy.WidthInBytes, copy.Height, copy.Depth));
    return step;
}

GraphStep set_step(const void* node, const SetNode& set) {
    GraphStep step;
    step.kind = GraphStep::Kind::Memset;
    step.node = node;
    step.ranges.push_back(set_range(set.dst, set.pitch, set.element_bytes, set.width, set.height));
    return step;
}

std::optional<GraphReplay> walk_graph(const DriverTable& table, CUgraph graph, const KernelLayout& layout,
                                      WalkFailure& failure, const void* owner) {
    GraphReplay replay;
    if (!Walker(table, layout, failure).walk(graph, owner, 0, replay)) return std::nullopt;
    return replay;
}

} // namespace uvmp::driver

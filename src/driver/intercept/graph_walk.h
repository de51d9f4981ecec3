// Walking a CUDA graph's nodes into what a launch of it runs (core/graph/graph_replay.h):
// its kernel nodes with their parameter words, its copy and set nodes with the
// device memory they touch, the nodes of its child graphs in their place. Every
// driver call is checked; a walk that cannot finish gives nothing, so that the
// graph's launches pass through unplanned.
#pragma once

#include "core/graph/graph_replay.h"
#include "core/registry/access_inference.h"
#include "driver/table/driver_table.h"

#include <functional>
#include <optional>

namespace uvmp::driver {

// The packed parameter block of a launch given in the `extra` form.
struct ParamBuffer {
    const void* data = nullptr;
    size_t bytes = 0;
};
ParamBuffer param_buffer(void** extra);

// A kernel node's parameters, from any version of the driver's structure.
struct KernelNode {
    const void* function = nullptr; // the CUfunction, or the CUkernel where no function is given
    unsigned grid[3] = {1, 1, 1};
    unsigned block[3] = {1, 1, 1};
    void** params = nullptr;
    void** extra = nullptr;
};

template <typename Params>
KernelNode kernel_node(const Params& p) {
    KernelNode node;
    node.function = p.func;
    if constexpr (requires { p.kern; })
        if (!node.function) node.function = p.kern;
    node.grid[0] = p.gridDimX, node.grid[1] = p.gridDimY, node.grid[2] = p.gridDimZ;
    node.block[0] = p.blockDimX, node.block[1] = p.blockDimY, node.block[2] = p.blockDimZ;
    node.params = p.kernelParams;
    node.extra = p.extra;
    return node;
}

// A set node's parameters, from either version of the driver's structure.
struct SetNode {
    CUdeviceptr dst = 0;
    size_t pitch = 0;
    unsigned element_bytes = 0;
    size_t width = 0;
    size_t height = 0;
};

template <typename Params>
SetNode set_node(const Params& p) {
    return {p.dst, p.pitch, p.elementSize, p.width, p.height};
}

// The parameter layout of a kernel, as the launch path knows it.
using KernelLayout = std::function<const KernelInfo&(const void* function)>;

GraphStep kernel_step(const void* node, const KernelNode& kernel, const KernelInfo& layout);
GraphStep copy_step(const void* node, const CUDA_MEMCPY3D& copy);
GraphStep set_step(const void* node, const SetNode& set);

// The driver call that stopped a walk.
struct WalkFailure {
    const char* call = nullptr;
    CUresult result = CUDA_SUCCESS;
};

// What a launch of `graph` runs. `owner`: the node every step is said to come
// from (a child graph's node when its graph is walked alone), or nullptr for each
// step's own node. nullopt, with `failure` set, when a driver call fails.
std::optional<GraphReplay> walk_graph(const DriverTable& table, CUgraph graph, const KernelLayout& layout,
                                      WalkFailure& failure, const void* owner = nullptr);

} // namespace uvmp::driver

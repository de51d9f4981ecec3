// The driver entry points the graph scenarios call, resolved by either route a
// program takes to them: dlsym on the driver's handle by exported name, or
// cuGetProcAddress by base name, as the CUDA runtime does.
#pragma once

#include "fakecuda.h"

#include <string>
#include <vector>

namespace uvmp_integration {

struct GraphEntryPoints {
    decltype(&cuInit) init = nullptr;
    decltype(&cuMemAlloc_v2) mem_alloc = nullptr;
    decltype(&cuMemFree_v2) mem_free = nullptr;
    decltype(&cuStreamCreate) stream_create = nullptr;
    decltype(&cuStreamSynchronize) stream_synchronize = nullptr;
    decltype(&cuStreamDestroy_v2) stream_destroy = nullptr;
    decltype(&cuLaunchKernel) launch_kernel = nullptr;
    decltype(&cuMemsetD32Async) memset_d32_async = nullptr;
    decltype(&cuMemcpyDtoDAsync_v2) memcpy_dtod_async = nullptr;
    decltype(&cuStreamBeginCapture_v2) begin_capture = nullptr;
    decltype(&cuStreamEndCapture) end_capture = nullptr;
    decltype(&cuGraphDestroy) graph_destroy = nullptr;
    decltype(&cuGraphGetNodes) graph_get_nodes = nullptr;
    decltype(&cuGraphNodeGetType) node_get_type = nullptr;
    decltype(&cuGraphAddChildGraphNode) add_child_graph_node = nullptr;
    decltype(&cuGraphInstantiateWithFlags) instantiate = nullptr;
    decltype(&cuGraphInstantiateWithParams) instantiate_with_params = nullptr;
    decltype(&cuGraphLaunch) graph_launch = nullptr;
    // The per-thread-default-stream variant of cuGraphLaunch.
    decltype(&cuGraphLaunch) graph_launch_per_thread = nullptr;
    decltype(&cuGraphExecKernelNodeSetParams_v2) exec_kernel_node_set_params = nullptr;
    decltype(&cuGraphExecDestroy) exec_destroy = nullptr;

    decltype(&fakecuda_counters) counters = nullptr;
    decltype(&fakecuda_make_function) make_function = nullptr;
    decltype(&fakecuda_make_kernel) make_kernel = nullptr;
    decltype(&fakecuda_last_launch_params) last_launch_params = nullptr;
    decltype(&fakecuda_graph_add_opaque_node) add_opaque_node = nullptr;
};

// `route`: "dlsym" or "procaddress". Names that could not be resolved go to `missing`.
GraphEntryPoints resolve_graph_entry_points(void* driver, const std::string& route,
                                            std::vector<std::string>& missing);

}  // namespace uvmp_integration

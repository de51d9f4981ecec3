// Graph hooks: each forwards the call unchanged and returns the driver's
// answer; what the library learns from it (an executable graph made, changed or
// destroyed, a graph launched) is told to the interceptor around the real call.
#include "driver/intercept/interceptor.h"
#include "preload/hooks.h"

using uvmp::driver::driver_table;
using uvmp::driver::Interceptor;
using uvmp::driver::StreamFlavor;
using uvmp::preload::missing_entry_point;

namespace {

Interceptor* watching() {
    Interceptor* icpt = uvmp::driver::interceptor();
    return icpt && icpt->active() ? icpt : nullptr;
}

CUresult instantiated(CUresult result, CUgraphExec* exec, CUgraph graph) {
    if (result == CUDA_SUCCESS && exec)
        if (Interceptor* icpt = watching()) icpt->graph_instantiated(*exec, graph);
    return result;
}

CUresult launch(StreamFlavor flavor, CUresult (*real)(CUgraphExec, CUstream), CUgraphExec exec, CUstream stream) {
    if (Interceptor* icpt = watching()) icpt->observe_graph_launch(flavor, exec, stream);
    return real(exec, stream);
}

// After a change of an executable graph the driver accepted, `learn` tells the interceptor.
template <typename Learn>
CUresult changed(CUresult result, Learn&& learn) {
    if (result == CUDA_SUCCESS)
        if (Interceptor* icpt = watching()) learn(*icpt);
    return result;
}

} // namespace

extern "C" CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphInstantiateWithFlags) return missing_entry_point(table);
    return instantiated(table->cuGraphInstantiateWithFlags(exec, graph, flags), exec, graph);
}

extern "C" CUresult cuGraphInstantiateWithParams(CUgraphExec* exec, CUgraph graph,
                                                 CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphInstantiateWithParams) return missing_entry_point(table);
    return instantiated(table->cuGraphInstantiateWithParams(exec, graph, params), exec, graph);
}

extern "C" CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* exec, CUgraph graph,
                                                      CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphInstantiateWithParams_ptsz) return missing_entry_point(table);
    return instantiated(table->cuGraphInstantiateWithParams_ptsz(exec, graph, params), exec, graph);
}

extern "C" CUresult cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph graph, CUgraphNode* error_node, char* log,
                                          size_t log_bytes) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphInstantiate_v2) return missing_entry_point(table);
    return instantiated(table->cuGraphInstantiate_v2(exec, graph, error_node, log, log_bytes), exec, graph);
}

extern "C" CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphLaunch) return missing_entry_point(table);
    return launch(StreamFlavor::Legacy, table->cuGraphLaunch, exec, stream);
}

extern "C" CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphLaunch_ptsz) return missing_entry_point(table);
    return launch(StreamFlavor::PerThread, table->cuGraphLaunch_ptsz, exec, stream);
}

extern "C" CUresult cuGraphExecDestroy(CUgraphExec exec) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphExecDestroy) return missing_entry_point(table);
    // Forgotten first: once destroyed, the handle may name the next graph made.
    if (Interceptor* icpt = watching()) icpt->graph_exec_destroyed(exec);
    return table->cuGraphExecDestroy(exec);
}

extern "C" CUresult cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo* result) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphExecUpdate_v2) return missing_entry_point(table);
    return changed(table->cuGraphExecUpdate_v2(exec, graph, result),
                   [&](Interceptor& icpt) { icpt.graph_exec_updated(exec, graph); });
}

extern "C" CUresult cuGraphExecUpdate(CUgraphExec exec, CUgraph graph, CUgraphNode* error_node,
                                      CUgraphExecUpdateResult* result) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphExecUpdate) return missing_entry_point(table);
    return changed(table->cuGraphExecUpdate(exec, graph, error_node, result),
                   [&](Interceptor& icpt) { icpt.graph_exec_updated(exec, graph); });
}

extern "C" CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec exec, CUgraphNode node,
                                                      const CUDA_KERNEL_NODE_PARAMS_v2* params) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphExecKernelNodeSetParams_v2) return missing_entry_point(table);
    return changed(table->cuGraphExecKernelNodeSetParams_v2(exec, node, params), [&](Interceptor& icpt) {
        icpt.graph_kernel_node_set(exec, node, uvmp::driver::kernel_node(*params));
    });
}

extern "C" CUresult cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                   const CUDA_KERNEL_NODE_PARAMS_v1* params) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphExecKernelNodeSetParams) return missing_entry_point(table);
    return changed(table->cuGraphExecKernelNodeSetParams(exec, node, params), [&](Interceptor& icpt) {
        icpt.graph_kernel_node_set(exec, node, uvmp::driver::kernel_node(*params));
    });
}

extern "C" CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D* params,
                                                   CUcontext context) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphExecMemcpyNodeSetParams) return missing_entry_point(table);
    return changed(table->cuGraphExecMemcpyNodeSetParams(exec, node, params, context),
                   [&](Interceptor& icpt) { icpt.graph_copy_node_set(exec, node, *params); });
}

extern "C" CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                   const CUDA_MEMSET_NODE_PARAMS* params, CUcontext context) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphExecMemsetNodeSetParams) return missing_entry_point(table);
    return changed(table->cuGraphExecMemsetNodeSetParams(exec, node, params, context), [&](Interceptor& icpt) {
        icpt.graph_set_node_set(exec, node, uvmp::driver::set_node(*params));
    });
}

extern "C" CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec exec, CUgraphNode node, CUgraph child) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphExecChildGraphNodeSetParams) return missing_entry_point(table);
    return changed(table->cuGraphExecChildGraphNodeSetParams(exec, node, child),
                   [&](Interceptor& icpt) { icpt.graph_child_node_set(exec, node, child); });
}

extern "C" CUresult cuGraphExecNodeSetParams(CUgraphExec exec, CUgraphNode node, CUgraphNodeParams* params) {
    const auto* table = driver_table();
    if (!table || !table->cuGraphExecNodeSetParams) return missing_entry_point(table);
    return changed(table->cuGraphExecNodeSetParams(exec, node, params),
                   [&](Interceptor& icpt) { icpt.graph_node_set(exec, node, *params); });
}

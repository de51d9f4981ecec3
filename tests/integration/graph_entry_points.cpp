#include "graph_entry_points.h"

#include <dlfcn.h>

namespace uvmp_integration {
namespace {

class Resolver {
public:
    Resolver(void* driver, bool by_proc_address, std::vector<std::string>& missing)
        : driver_(driver), missing_(missing) {
        if (by_proc_address) {
            // As libcudart does: cuGetProcAddress_v2 by dlsym, then "cuGetProcAddress"
            // through it, and every other entry point through what that gave.
            auto bootstrap = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(driver, "cuGetProcAddress_v2"));
            void* found = nullptr;
            if (bootstrap) bootstrap("cuGetProcAddress", &found, 12000, 0, nullptr);
            get_proc_ = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(found);
            if (!get_proc_) missing_.push_back("cuGetProcAddress");
        }
    }

    // `exported`: the name dlsym takes; `base`: the name cuGetProcAddress takes.
    template <typename Function>
    void operator()(Function& out, const char* exported, const char* base, bool per_thread = false) {
        void* found = nullptr;
        if (get_proc_) {
            CUdriverProcAddressQueryResult status{};
            const cuuint64_t flags = per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0;
            if (get_proc_(base, &found, 13000, flags, &status) != CUDA_SUCCESS) found = nullptr;
        } else {
            found = dlsym(driver_, exported);
        }
        out = reinterpret_cast<Function>(found);
        if (!found) missing_.push_back(exported);
    }

    // The fake's test helpers, which only dlsym finds.
    template <typename Function>
    void helper(Function& out, const char* name) {
        out = reinterpret_cast<Function>(dlsym(driver_, name));
        if (!out) missing_.push_back(name);
    }

private:
    void* driver_;
    std::vector<std::string>& missing_;
    decltype(&cuGetProcAddress_v2) get_proc_ = nullptr;
};

}  // namespace

GraphEntryPoints resolve_graph_entry_points(void* driver, const std::string& route,
                                            std::vector<std::string>& missing) {
    GraphEntryPoints g;
    Resolver resolve(driver, route == "procaddress", missing);
    resolve(g.init, "cuInit", "cuInit");
    resolve(g.mem_alloc, "cuMemAlloc_v2", "cuMemAlloc");
    resolve(g.mem_free, "cuMemFree_v2", "cuMemFree");
    resolve(g.stream_create, "cuStreamCreate", "cuStreamCreate");
    resolve(g.stream_synchronize, "cuStreamSynchronize", "cuStreamSynchronize");
    resolve(g.stream_destroy, "cuStreamDestroy_v2", "cuStreamDestroy");
    resolve(g.launch_kernel, "cuLaunchKernel", "cuLaunchKernel");
    resolve(g.memset_d32_async, "cuMemsetD32Async", "cuMemsetD32Async");
    resolve(g.memcpy_dtod_async, "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync");
    resolve(g.begin_capture, "cuStreamBeginCapture_v2", "cuStreamBeginCapture");
    resolve(g.end_capture, "cuStreamEndCapture", "cuStreamEndCapture");
    resolve(g.graph_destroy, "cuGraphDestroy", "cuGraphDestroy");
    resolve(g.graph_get_nodes, "cuGraphGetNodes", "cuGraphGetNodes");
    resolve(g.node_get_type, "cuGraphNodeGetType", "cuGraphNodeGetType");
    resolve(g.add_child_graph_node, "cuGraphAddChildGraphNode", "cuGraphAddChildGraphNode");
    // The runtime of CUDA 12 and later asks for "cuGraphInstantiate".
    resolve(g.instantiate, "cuGraphInstantiateWithFlags", "cuGraphInstantiate");
    resolve(g.instantiate_with_params, "cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams");
    resolve(g.graph_launch, "cuGraphLaunch", "cuGraphLaunch");
    resolve(g.graph_launch_per_thread, "cuGraphLaunch_ptsz", "cuGraphLaunch", true);
    resolve(g.exec_kernel_node_set_params, "cuGraphExecKernelNodeSetParams_v2", "cuGraphExecKernelNodeSetParams");
    resolve(g.exec_destroy, "cuGraphExecDestroy", "cuGraphExecDestroy");
    resolve.helper(g.counters, "fakecuda_counters");
    resolve.helper(g.make_function, "fakecuda_make_function");
    resolve.helper(g.make_kernel, "fakecuda_make_kernel");
    resolve.helper(g.last_launch_params, "fakecuda_last_launch_params");
    resolve.helper(g.add_opaque_node, "fakecuda_graph_add_opaque_node");
    return g;
}

}  // namespace uvmp_integration

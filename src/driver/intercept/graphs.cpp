// The interceptor and CUDA graphs: what an executable graph runs is learnt by
// walking its nodes when it is made (or changed), and each launch of it is then
// handled as the launches of those nodes, in one go: sequence numbers, trace
// records, and one task for the planner.
#include "driver/intercept/interceptor.h"

#include "core/util/log.h"

#include <new>

namespace uvmp::driver {
namespace {

// Keys of the kernel table's entries for the copy and set nodes of graphs:
// addresses of the library's own, which no kernel handle can be.
constexpr char kCopyNodeKey = 'c';
constexpr char kSetNodeKey = 's';

} // namespace

const KernelInfo& Interceptor::step_kernel(const GraphStep& step) {
    bool first_sight = false;
    const KernelInfo* info = nullptr;
    switch (step.kind) {
    case GraphStep::Kind::Kernel: return kernel_info(step.function);
    case GraphStep::Kind::Memcpy: info = &kernels_.lookup_named(&kCopyNodeKey, "[graph memcpy node]", &first_sight); break;
    case GraphStep::Kind::Memset: info = &kernels_.lookup_named(&kSetNodeKey, "[graph memset node]", &first_sight); break;
    }
    if (trace::TraceWriter* trace = this->trace(); first_sight && trace) trace->kernel(info->id, info->name);
    return *info;
}

std::optional<GraphReplay> Interceptor::walk(CUgraph graph, CUgraphNode owner) {
    const DriverTable* table = driver_table_if_ready();
    if (!table) return std::nullopt;
    WalkFailure failure;
    auto layout = [this](const void* function) -> const KernelInfo& { return kernel_info(function); };
    std::optional<GraphReplay> replay;
    try {
        replay = walk_graph(*table, graph, layout, failure, owner);
    } catch (const std::bad_alloc&) {
        // A graph too large to hold in memory is not planned; the program goes on.
        failure = {"the library's memory", CUDA_ERROR_OUT_OF_MEMORY};
    }
    if (!replay)
        UVMP_WARN_ONCE("walking the nodes of a CUDA graph failed ({} gave {}): launches of graphs that cannot be "
                       "walked pass through unplanned",
                       failure.call ? failure.call : "?", error_name(failure.result));
    return replay;
}

void Interceptor::graph_instantiated(CUgraphExec exec, CUgraph graph) {
    if (exec) graphs_.learn(exec, walk(graph, nullptr));
}

void Interceptor::replace_graph_node(CUgraphExec exec, CUgraphNode node, std::optional<std::vector<GraphStep>> steps) {
    // A node whose steps cannot be put in place (a child graph that touched no
    // memory before, a walk that failed) leaves what the graph runs unknown: its
    // launches pass through unplanned rather than be planned wrongly.
    if (!steps || !graphs_.replace_node(exec, node, std::move(*steps))) graphs_.mark_unknown(exec);
}

void Interceptor::graph_kernel_node_set(CUgraphExec exec, CUgraphNode node, const KernelNode& kernel) {
    replace_graph_node(exec, node, std::vector{kernel_step(node, kernel, kernel_info(kernel.function))});
}

void Interceptor::graph_copy_node_set(CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D& copy) {
    replace_graph_node(exec, node, std::vector{copy_step(node, copy)});
}

void Interceptor::graph_set_node_set(CUgraphExec exec, CUgraphNode node, const SetNode& set) {
    replace_graph_node(exec, node, std::vector{set_step(node, set)});
}

void Interceptor::graph_child_node_set(CUgraphExec exec, CUgraphNode node, CUgraph child) {
    auto replay = walk(child, node);
    replace_graph_node(exec, node, replay ? std::optional(std::move(replay->steps)) : std::nullopt);
}

void Interceptor::graph_node_set(CUgraphExec exec, CUgraphNode node, const CUgraphNodeParams& params) {
    switch (params.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: graph_kernel_node_set(exec, node, kernel_node(params.kernel)); break;
    case CU_GRAPH_NODE_TYPE_MEMCPY: graph_copy_node_set(exec, node, params.memcpy.copyParams); break;
    case CU_GRAPH_NODE_TYPE_MEMSET: graph_set_node_set(exec, node, set_node(params.memset)); break;
    case CU_GRAPH_NODE_TYPE_GRAPH: graph_child_node_set(exec, node, params.graph.graph); break;
    default: break; // a node nothing is planned for stays so
    }
}

void Interceptor::observe_graph_launch(StreamFlavor flavor, CUgraphExec exec, CUstream stream) {
    stats_.add(stats_.graph_launches);
    const GraphTable::Entry graph = graphs_.find(exec);
    trace::GraphLaunch record;
    record.graph_id = graph.id;
    record.stream = reinterpret_cast<uint64_t>(stream);
    record.time_ns = now_ns();
    // A graph launched into a capture becomes a node of the graph being made.
    const DriverTable* table = driver_table_if_ready();
    if (table && capture_state(*table, flavor, stream).capturing) {
        record.flags = trace::kGraphLaunchCaptured;
        record.launches_before = launch_seq_.load(std::memory_order_relaxed);
        if (trace::TraceWriter* trace = this->trace()) trace->graph_launch(record);
        return;
    }
    if (!graph.replay) {
        stats_.add(stats_.graph_launches_unknown);
        record.flags = trace::kGraphLaunchUnknown;
        record.launches_before = launch_seq_.load(std::memory_order_relaxed);
        if (trace::TraceWriter* trace = this->trace()) trace->graph_launch(record);
        return;
    }
    const std::vector<GraphStep>& steps = graph.replay->steps;
    // One run of sequence numbers for the whole replay: launches of other
    // threads never fall in between.
    const uint64_t first = launch_seq_.fetch_add(steps.size(), std::memory_order_relaxed);
    stats_.add(stats_.graph_steps_replayed, steps.size());
    record.launches_before = first;
    record.replayed = static_cast<uint32_t>(steps.size());
    record.nodes_skipped = graph.replay->nodes_skipped;
    trace::TraceWriter* trace = this->trace();
    if (trace) trace->graph_launch(record);
    const bool planned = plans_launches();
    if (!trace && !planned) return;

    // The fences all stand before the graph: its nodes run with no host call between.
    const bool fenced = planned && !all_converted_memory_fits();
    const LaunchOrigin origin = planned ? launch_origin() : LaunchOrigin{};
    std::vector<PlannedLaunch> steps_planned;
    thread_local std::vector<trace::Access> accesses;
    for (size_t i = 0; i < steps.size(); ++i) {
        const GraphStep& step = steps[i];
        const KernelInfo& info = step_kernel(step);
        accesses.clear();
        append_step_accesses(step, registry_, accesses);
        if (trace) record_launch(*trace, first + i, info.id, step.grid, step.block, stream, accesses);
        if (planned && !accesses.empty())
            steps_planned.push_back({first + i, info.id, accesses, fenced ? record_fence(flavor, stream, origin.context) : nullptr, origin});
    }
    if (planned) post_to_planner(std::move(steps_planned));
}

} // namespace uvmp::driver

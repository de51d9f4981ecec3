// Capture hooks: each says that captures are possible from now on, before the
// capture begins (a launch on another thread may follow at once), then forwards
// the call unchanged. Until one is called, the launch path asks the driver
// nothing about capture.
#include "driver/table/stream_capture.h"
#include "preload/hooks.h"

using uvmp::driver::driver_table;
using uvmp::driver::note_capture_beginning;

namespace {

template <typename... Args>
CUresult begin(const uvmp::driver::DriverTable* table, CUresult (*real)(Args...), Args... args) {
    if (!table || !real) return uvmp::preload::missing_entry_point(table);
    note_capture_beginning();
    return real(args...);
}

} // namespace

extern "C" CUresult cuStreamBeginCapture(CUstream stream) {
    const auto* table = driver_table();
    return begin(table, table ? table->cuStreamBeginCapture : nullptr, stream);
}

extern "C" CUresult cuStreamBeginCapture_ptsz(CUstream stream) {
    const auto* table = driver_table();
    return begin(table, table ? table->cuStreamBeginCapture_ptsz : nullptr, stream);
}

extern "C" CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
    const auto* table = driver_table();
    return begin(table, table ? table->cuStreamBeginCapture_v2 : nullptr, stream, mode);
}

extern "C" CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode) {
    const auto* table = driver_table();
    return begin(table, table ? table->cuStreamBeginCapture_v2_ptsz : nullptr, stream, mode);
}

extern "C" CUresult cuStreamBeginCaptureToGraph(CUstream stream, CUgraph graph, const CUgraphNode* dependencies,
                                                const CUgraphEdgeData* edge_data, size_t count,
                                                CUstreamCaptureMode mode) {
    const auto* table = driver_table();
    return begin(table, table ? table->cuStreamBeginCaptureToGraph : nullptr, stream, graph, dependencies, edge_data,
                 count, mode);
}

extern "C" CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream stream, CUgraph graph, const CUgraphNode* dependencies,
                                                     const CUgraphEdgeData* edge_data, size_t count,
                                                     CUstreamCaptureMode mode) {
    const auto* table = driver_table();
    return begin(table, table ? table->cuStreamBeginCaptureToGraph_ptsz : nullptr, stream, graph, dependencies,
                 edge_data, count, mode);
}

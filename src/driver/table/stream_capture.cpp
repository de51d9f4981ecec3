#include "driver/table/stream_capture.h"

#include "core/util/log.h"

#include <atomic>

namespace uvmp::driver {
namespace {

std::atomic<bool> g_captures_possible{false};

CaptureState ask_driver(const DriverTable& table, StreamFlavor flavor, CUstream stream) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CaptureState state;
    const bool per_thread = flavor == StreamFlavor::PerThread;
    if (auto info = per_thread ? table.cuStreamGetCaptureInfo_v3_ptsz : table.cuStreamGetCaptureInfo_v3) {
        cuuint64_t id = 0;
        if (info(stream, &status, &id, nullptr, nullptr, nullptr, nullptr) != CUDA_SUCCESS) return state;
        state.capturing = status != CU_STREAM_CAPTURE_STATUS_NONE;
        state.id = state.capturing ? id : 0;
        return state;
    }
    auto is_capturing = per_thread ? table.cuStreamIsCapturing_ptsz : table.cuStreamIsCapturing;
    state.capturing = is_capturing && is_capturing(stream, &status) == CUDA_SUCCESS &&
                      status != CU_STREAM_CAPTURE_STATUS_NONE;
    return state;
}

} // namespace

bool captures_possible() { return g_captures_possible.load(std::memory_order_acquire); }

void note_capture_beginning() {
    if (!g_captures_possible.load(std::memory_order_relaxed)) g_captures_possible.store(true, std::memory_order_release);
}

CaptureState capture_state(const DriverTable& table, StreamFlavor flavor, CUstream stream) {
    const CaptureState state = ask_driver(table, flavor, stream);
    // Begun by an entry point the library does not hook: from now on every launch
    // is asked about, as after a capture the hooks saw begin.
    if (state.capturing && !g_captures_possible.exchange(true, std::memory_order_acq_rel))
        log::info("a stream capture began that the library did not see begin; launches are checked for capture "
                  "from now on");
    return state;
}

void relax_capture_mode_of_this_thread(const DriverTable& table) {
    if (!table.cuThreadExchangeStreamCaptureMode) return;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (const CUresult r = table.cuThreadExchangeStreamCaptureMode(&mode); r != CUDA_SUCCESS)
        UVMP_WARN_ONCE("the library's thread could not leave the global capture mode ({}); a graph capture "
                       "of the application may fail while the library moves data",
                       error_name(r));
}

} // namespace uvmp::driver

// Launch hooks: each records what the launch touches, then forwards the launch
// unchanged through the same variant it came in by.
#include "core/util/elapsed.h"
#include "driver/intercept/interceptor.h"
#include "driver/timing/kernel_timing.h"
#include "preload/hooks.h"

#include <chrono>

using uvmp::driver::driver_table;
using uvmp::driver::interceptor;
using uvmp::driver::KernelTiming;
using uvmp::driver::LaunchSite;
using uvmp::driver::StreamFlavor;

namespace {

// Observes the launch, and brackets the real call so that kernel timing (when
// on) can tie the GPU's record of it to its sequence number, and so that the
// time the application spends in the call is known when a policy moves data.
class LaunchScope {
public:
    LaunchScope(StreamFlavor flavor, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                unsigned bx, unsigned by, unsigned bz, CUstream stream, void** params, void** extra) {
        auto* icpt = interceptor();
        if (!icpt || !icpt->active()) return;
        const uint64_t seq =
            icpt->observe_launch(LaunchSite{flavor, f, params, extra, stream, {gx, gy, gz}, {bx, by, bz}});
        // A launch into a capture runs nothing now: there is no kernel to time.
        if (seq == uvmp::driver::Interceptor::kNotRun) return;
        timed_ = KernelTiming::running();
        if (timed_) KernelTiming::before_launch(seq);
        if (icpt->times_launch_call(seq)) {
            timing_call_ = icpt;
            call_start_ = std::chrono::steady_clock::now();
        }
    }
    ~LaunchScope() {
        if (timing_call_) timing_call_->launch_call_took(uvmp::nanoseconds_since(call_start_));
        if (timed_) KernelTiming::after_launch();
    }
    LaunchScope(const LaunchScope&) = delete;
    LaunchScope& operator=(const LaunchScope&) = delete;

private:
    bool timed_ = false;
    uvmp::driver::Interceptor* timing_call_ = nullptr;
    std::chrono::steady_clock::time_point call_start_;
};

LaunchScope scope_ex(StreamFlavor flavor, const CUlaunchConfig* config, CUfunction f, void** params,
                     void** extra) {
    if (!config) return LaunchScope(flavor, f, 0, 0, 0, 0, 0, 0, nullptr, nullptr, nullptr);
    return LaunchScope(flavor, f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                       config->blockDimY, config->blockDimZ, config->hStream, params, extra);
}

} // namespace

extern "C" CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                                   void** params, void** extra) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    LaunchScope scope(StreamFlavor::Legacy, f, gx, gy, gz, bx, by, bz, stream, params, extra);
    return table->cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra);
}

extern "C" CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                                        CUstream stream, void** params, void** extra) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    LaunchScope scope(StreamFlavor::PerThread, f, gx, gy, gz, bx, by, bz, stream, params, extra);
    return table->cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra);
}

extern "C" CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                     void** extra) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    LaunchScope scope = scope_ex(StreamFlavor::Legacy, config, f, params, extra);
    return table->cuLaunchKernelEx(config, f, params, extra);
}

extern "C" CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                          void** extra) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    LaunchScope scope = scope_ex(StreamFlavor::PerThread, config, f, params, extra);
    return table->cuLaunchKernelEx_ptsz(config, f, params, extra);
}

extern "C" CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                              unsigned bx, unsigned by, unsigned bz,
                                              unsigned shared_bytes, CUstream stream, void** params) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    LaunchScope scope(StreamFlavor::Legacy, f, gx, gy, gz, bx, by, bz, stream, params, nullptr);
    return table->cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params);
}

extern "C" CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                   unsigned gz, unsigned bx, unsigned by,
                                                   unsigned bz, unsigned shared_bytes,
                                                   CUstream stream, void** params) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    LaunchScope scope(StreamFlavor::PerThread, f, gx, gy, gz, bx, by, bz, stream, params, nullptr);
    return table->cuLaunchCooperativeKernel_ptsz(f, gx, gy, gz, bx, by, bz, shared_bytes, stream,
                                                 params);
}

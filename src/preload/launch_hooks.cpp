// Launch hooks: each records what the launch touches, then forwards the launch
// unchanged through the same variant it came in by.
#include "driver/interceptor.h"
#include "preload/hooks.h"

using uvmp::driver::driver_table;
using uvmp::driver::interceptor;
using uvmp::driver::LaunchSite;

namespace {

void observe(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
             unsigned bz, CUstream stream, void** params, void** extra) {
    auto* icpt = interceptor();
    if (!icpt || !icpt->active()) return;
    icpt->observe_launch(LaunchSite{f, params, extra, stream, {gx, gy, gz}, {bx, by, bz}});
}

void observe_ex(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
    if (!config) return;
    observe(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
            config->blockDimY, config->blockDimZ, config->hStream, params, extra);
}

} // namespace

extern "C" CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                                   void** params, void** extra) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    observe(f, gx, gy, gz, bx, by, bz, stream, params, extra);
    return table->cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra);
}

extern "C" CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                                        CUstream stream, void** params, void** extra) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    observe(f, gx, gy, gz, bx, by, bz, stream, params, extra);
    return table->cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra);
}

extern "C" CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                     void** extra) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    observe_ex(config, f, params, extra);
    return table->cuLaunchKernelEx(config, f, params, extra);
}

extern "C" CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                          void** extra) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    observe_ex(config, f, params, extra);
    return table->cuLaunchKernelEx_ptsz(config, f, params, extra);
}

extern "C" CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                              unsigned bx, unsigned by, unsigned bz,
                                              unsigned shared_bytes, CUstream stream, void** params) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    observe(f, gx, gy, gz, bx, by, bz, stream, params, nullptr);
    return table->cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params);
}

extern "C" CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                   unsigned gz, unsigned bx, unsigned by,
                                                   unsigned bz, unsigned shared_bytes,
                                                   CUstream stream, void** params) {
    const auto* table = driver_table();
    if (!table) return CUDA_ERROR_NOT_INITIALIZED;
    observe(f, gx, gy, gz, bx, by, bz, stream, params, nullptr);
    return table->cuLaunchCooperativeKernel_ptsz(f, gx, gy, gz, bx, by, bz, shared_bytes, stream,
                                                 params);
}

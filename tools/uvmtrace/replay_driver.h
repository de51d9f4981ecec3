// The driver entry points `uvmtrace replay` calls, resolved at run time from
// libcuda.so.1 with dlopen and dlsym as any program that uses the driver API
// does: under the preloaded library, the allocation and launch entry points
// come back as its hooks, so the replay's calls take the job's route. The tool
// never links libcuda and runs its other commands where there is none.
#pragma once

#include <cuda.h>

#include <stdexcept>
#include <string>

namespace uvmp::tools {

#define UVMTRACE_REPLAY_DRIVER_FUNCTIONS(X)                                                                  \
    X(cuInit, (unsigned int flags))                                                                         \
    X(cuGetErrorName, (CUresult error, const char** name))                                                  \
    X(cuDeviceGet, (CUdevice * device, int ordinal))                                                        \
    X(cuDeviceGetAttribute, (int* value, CUdevice_attribute attribute, CUdevice device))                    \
    X(cuDevicePrimaryCtxRetain, (CUcontext * context, CUdevice device))                                     \
    X(cuCtxSetCurrent, (CUcontext context))                                                                 \
    X(cuModuleLoadData, (CUmodule * module, const void* image))                                             \
    X(cuModuleGetFunction, (CUfunction * function, CUmodule module, const char* name))                      \
    X(cuStreamCreate, (CUstream * stream, unsigned int flags))                                              \
    X(cuStreamSynchronize, (CUstream stream))                                                               \
    X(cuStreamWaitEvent, (CUstream stream, CUevent event, unsigned int flags))                              \
    X(cuEventCreate, (CUevent * event, unsigned int flags))                                                 \
    X(cuEventRecord, (CUevent event, CUstream stream))                                                      \
    X(cuMemAlloc_v2, (CUdeviceptr * pointer, size_t bytes))                                                 \
    X(cuMemFree_v2, (CUdeviceptr pointer))                                                                  \
    X(cuMemAllocAsync, (CUdeviceptr * pointer, size_t bytes, CUstream stream))                              \
    X(cuMemFreeAsync, (CUdeviceptr pointer, CUstream stream))                                               \
    X(cuLaunchKernel, (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,     \
                       unsigned int by, unsigned int bz, unsigned int shared_bytes, CUstream stream,         \
                       void** params, void** extra))

// A driver call that failed, with what the replay was doing.
class DriverError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class ReplayDriver {
public:
    // Opens libcuda.so.1 and resolves every entry point; throws DriverError
    // naming what is missing.
    ReplayDriver();

#define UVMTRACE_DECLARE_POINTER(name, params) CUresult(CUDAAPI* name) params = nullptr;
    UVMTRACE_REPLAY_DRIVER_FUNCTIONS(UVMTRACE_DECLARE_POINTER)
#undef UVMTRACE_DECLARE_POINTER

    // Throws DriverError "<what>: CUDA_ERROR_..." unless result is CUDA_SUCCESS.
    void check(CUresult result, const std::string& what) const;
};

} // namespace uvmp::tools

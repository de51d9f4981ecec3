// Kernel queries and launches. A launch runs nothing: it checks its arguments,
// copies the parameter bytes out (which proves they were readable) and counts,
// or, on a stream capturing into a graph, becomes a node of the graph.
#include "fake_faults.h"
#include "fake_state.h"

#include <cstring>

using namespace fakecuda;

namespace {

struct LaunchShape {
    unsigned int grid[3];
    unsigned int block[3];
};

bool valid_shape(const LaunchShape& shape) {
    for (int i = 0; i < 3; ++i)
        if (shape.grid[i] == 0 || shape.block[i] == 0) return false;
    return shape.block[0] * shape.block[1] * shape.block[2] <= 1024;
}

// Reads the parameter bytes from `params` (one pointer per parameter) or from the
// `extra` buffer list, whichever the caller used.
CUresult gather_params(const Kernel& kernel, void** params, void** extra,
                       std::vector<unsigned char>& out) {
    out.assign(kernel.param_bytes(), 0);
    if (params != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (params != nullptr) {
        for (std::size_t i = 0; i < kernel.params.size(); ++i) {
            if (params[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
            std::memcpy(out.data() + kernel.params[i].offset, params[i], kernel.params[i].size);
        }
        return CUDA_SUCCESS;
    }
    if (extra == nullptr) return kernel.params.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    const void* buffer = nullptr;
    const std::size_t* buffer_size = nullptr;
    for (std::size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buffer = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            buffer_size = static_cast<const std::size_t*>(extra[i + 1]);
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (buffer == nullptr || buffer_size == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // The real driver insists on the exact size of the parameter block.
    if (*buffer_size != kernel.param_bytes()) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(out.data(), buffer, out.size());
    return CUDA_SUCCESS;
}

CUresult launch(std::atomic<std::uint64_t>& counter, CUfunction f, const LaunchShape& shape,
                CUstream stream, void** params, void** extra) {
    CUresult result = CUDA_SUCCESS;
    std::vector<unsigned char> bytes;
    const Kernel* kernel = find_kernel(f);
    if (!initialized())
        result = CUDA_ERROR_NOT_INITIALIZED;
    else if (kernel == nullptr)
        result = CUDA_ERROR_INVALID_HANDLE;
    else if (!valid_stream(stream))
        result = CUDA_ERROR_INVALID_HANDLE;
    else if (!valid_shape(shape))
        result = CUDA_ERROR_INVALID_VALUE;
    else
        result = gather_params(*kernel, params, extra, bytes);
    if (result != CUDA_SUCCESS) {
        ++counters().launches_failed;
        return result;
    }
    if (capture_kernel(stream, f, *kernel, shape.grid, shape.block, bytes)) return CUDA_SUCCESS;
    remember_launch_params(std::move(bytes));
    ++counter;
    ++device_counters(context_device(stream_context(stream))).launches;
    return CUDA_SUCCESS;
}

CUresult launch_ex(std::atomic<std::uint64_t>& counter, const CUlaunchConfig* config,
                   CUfunction f, void** params, void** extra) {
    if (config == nullptr || (config->numAttrs > 0 && config->attrs == nullptr)) {
        ++counters().launches_failed;
        return CUDA_ERROR_INVALID_VALUE;
    }
    const LaunchShape shape{{config->gridDimX, config->gridDimY, config->gridDimZ},
                            {config->blockDimX, config->blockDimY, config->blockDimZ}};
    return launch(counter, f, shape, config->hStream, params, extra);
}

CUresult param_info(const Kernel* kernel, std::size_t index, std::size_t* offset,
                    std::size_t* size) {
    if (offset == nullptr || size == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (index >= kernel->params.size()) return CUDA_ERROR_INVALID_VALUE;
    *offset = kernel->params[index].offset;
    *size = kernel->params[index].size;
    return CUDA_SUCCESS;
}

}  // namespace

FAKECUDA_EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t* offset,
                                            size_t* size) {
    const Kernel* kernel = find_kernel(f);
    if (kernel == nullptr || kernel->is_cukernel) return CUDA_ERROR_INVALID_HANDLE;
    return param_info(kernel, index, offset, size);
}

FAKECUDA_EXPORT CUresult cuKernelGetParamInfo(CUkernel k, size_t index, size_t* offset,
                                              size_t* size) {
    const Kernel* kernel = find_kernel(k);
    if (kernel == nullptr || !kernel->is_cukernel) return CUDA_ERROR_INVALID_HANDLE;
    return param_info(kernel, index, offset, size);
}

FAKECUDA_EXPORT CUresult cuFuncGetName(const char** name, CUfunction f) {
    if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const Kernel* kernel = find_kernel(f);
    if (kernel == nullptr || kernel->is_cukernel) return CUDA_ERROR_INVALID_HANDLE;
    *name = kernel->name.c_str();
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuKernelGetName(const char** name, CUkernel k) {
    if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const Kernel* kernel = find_kernel(k);
    if (kernel == nullptr || !kernel->is_cukernel) return CUDA_ERROR_INVALID_HANDLE;
    *name = kernel->name.c_str();
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                        unsigned int gz, unsigned int bx, unsigned int by,
                                        unsigned int bz, unsigned int shared_bytes,
                                        CUstream stream, void** params, void** extra) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuLaunchKernel");
    return launch(counters().launch_kernel, f, {{gx, gy, gz}, {bx, by, bz}}, stream, params,
                  extra);
}

FAKECUDA_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                             unsigned int gz, unsigned int bx, unsigned int by,
                                             unsigned int bz, unsigned int shared_bytes,
                                             CUstream stream, void** params, void** extra) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuLaunchKernel_ptsz");
    return launch(counters().launch_kernel_ptsz, f, {{gx, gy, gz}, {bx, by, bz}}, stream,
                  params, extra);
}

FAKECUDA_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f,
                                          void** params, void** extra) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuLaunchKernelEx");
    return launch_ex(counters().launch_kernel_ex, config, f, params, extra);
}

FAKECUDA_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f,
                                               void** params, void** extra) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuLaunchKernelEx_ptsz");
    return launch_ex(counters().launch_kernel_ex_ptsz, config, f, params, extra);
}

FAKECUDA_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx,
                                                   unsigned int gy, unsigned int gz,
                                                   unsigned int bx, unsigned int by,
                                                   unsigned int bz, unsigned int shared_bytes,
                                                   CUstream stream, void** params) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuLaunchCooperativeKernel");
    return launch(counters().launch_cooperative, f, {{gx, gy, gz}, {bx, by, bz}}, stream, params,
                  nullptr);
}

FAKECUDA_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx,
                                                        unsigned int gy, unsigned int gz,
                                                        unsigned int bx, unsigned int by,
                                                        unsigned int bz,
                                                        unsigned int shared_bytes,
                                                        CUstream stream, void** params) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuLaunchCooperativeKernel_ptsz");
    return launch(counters().launch_cooperative_ptsz, f, {{gx, gy, gz}, {bx, by, bz}}, stream,
                  params, nullptr);
}

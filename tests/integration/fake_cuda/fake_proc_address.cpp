// cuGetProcAddress as the real driver answers it: by base name ("cuMemAlloc"),
// picking the newest version the caller's cudaVersion allows, and the _ptsz
// variant when the caller asks for per-thread default stream semantics.
#include "fake_state.h"

#include <cstring>

using namespace fakecuda;

namespace {

struct ProcVersion {
    const char* base_name;
    int since_version;  // the first cudaVersion that gets this entry point
    void* legacy;
    void* per_thread;   // nullptr where the entry point takes no stream
};

#define FAKECUDA_PROC(base, since, symbol) {base, since, reinterpret_cast<void*>(&symbol), nullptr}
#define FAKECUDA_STREAM_PROC(base, since, symbol)                        \
    {base, since, reinterpret_cast<void*>(&symbol),                      \
     reinterpret_cast<void*>(&symbol##_ptsz)}

// Every entry point the fake implements. Where the real driver has older versions
// than the ones listed, the fake has none: a caller asking with a cudaVersion too
// old for the listed one is told the version is not sufficient.
const ProcVersion kProcTable[] = {
    FAKECUDA_PROC("cuGetProcAddress", 11030, cuGetProcAddress),
    FAKECUDA_PROC("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    FAKECUDA_PROC("cuInit", 2000, cuInit),
    FAKECUDA_PROC("cuDriverGetVersion", 2020, cuDriverGetVersion),
    FAKECUDA_PROC("cuGetErrorName", 6000, cuGetErrorName),
    FAKECUDA_PROC("cuDeviceGet", 2000, cuDeviceGet),
    FAKECUDA_PROC("cuDeviceGetCount", 2000, cuDeviceGetCount),
    FAKECUDA_PROC("cuDeviceGetName", 2000, cuDeviceGetName),
    FAKECUDA_PROC("cuDeviceTotalMem", 2000, cuDeviceTotalMem),
    FAKECUDA_PROC("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    FAKECUDA_PROC("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    FAKECUDA_PROC("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    FAKECUDA_PROC("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool),
    FAKECUDA_PROC("cuDeviceSetMemPool", 11020, cuDeviceSetMemPool),
    FAKECUDA_PROC("cuMemPoolCreate", 11020, cuMemPoolCreate),
    FAKECUDA_PROC("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
    FAKECUDA_PROC("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    FAKECUDA_PROC("cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute),
    FAKECUDA_PROC("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    FAKECUDA_PROC("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    FAKECUDA_PROC("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    FAKECUDA_PROC("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    FAKECUDA_PROC("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    FAKECUDA_PROC("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
    FAKECUDA_PROC("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    FAKECUDA_PROC("cuCtxGetDevice", 2000, cuCtxGetDevice),
    FAKECUDA_PROC("cuCtxSynchronize", 2000, cuCtxSynchronize),
    FAKECUDA_PROC("cuMemAlloc", 3020, cuMemAlloc_v2),
    FAKECUDA_PROC("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    FAKECUDA_STREAM_PROC("cuMemAllocAsync", 11020, cuMemAllocAsync),
    FAKECUDA_STREAM_PROC("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
    FAKECUDA_PROC("cuMemAllocManaged", 6000, cuMemAllocManaged),
    FAKECUDA_PROC("cuMemFree", 3020, cuMemFree_v2),
    FAKECUDA_STREAM_PROC("cuMemFreeAsync", 11020, cuMemFreeAsync),
    FAKECUDA_PROC("cuMemGetInfo", 2000, cuMemGetInfo),
    FAKECUDA_PROC("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    FAKECUDA_PROC("cuMemCreate", 10020, cuMemCreate),
    FAKECUDA_PROC("cuMemRelease", 10020, cuMemRelease),
    FAKECUDA_PROC("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    FAKECUDA_PROC("cuMemHostAlloc", 2020, cuMemHostAlloc),
    FAKECUDA_PROC("cuMemFreeHost", 2000, cuMemFreeHost),
    FAKECUDA_PROC("cuIpcGetMemHandle", 4010, cuIpcGetMemHandle),
    FAKECUDA_PROC("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
    FAKECUDA_PROC("cuPointerGetAttributes", 7000, cuPointerGetAttributes),
    FAKECUDA_PROC("cuMemPrefetchAsync", 12020, cuMemPrefetchAsync_v2),
    FAKECUDA_PROC("cuMemPrefetchBatchAsync", 13000, cuMemPrefetchBatchAsync),
    FAKECUDA_PROC("cuMemDiscardAndPrefetchBatchAsync", 13000, cuMemDiscardAndPrefetchBatchAsync),
    FAKECUDA_PROC("cuMemAdvise", 12020, cuMemAdvise_v2),
    FAKECUDA_STREAM_PROC("cuLaunchKernel", 4000, cuLaunchKernel),
    FAKECUDA_STREAM_PROC("cuLaunchKernelEx", 11060, cuLaunchKernelEx),
    FAKECUDA_STREAM_PROC("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel),
    FAKECUDA_PROC("cuFuncGetParamInfo", 12040, cuFuncGetParamInfo),
    FAKECUDA_PROC("cuKernelGetParamInfo", 12040, cuKernelGetParamInfo),
    FAKECUDA_PROC("cuFuncGetName", 12030, cuFuncGetName),
    FAKECUDA_PROC("cuKernelGetName", 12030, cuKernelGetName),
    FAKECUDA_PROC("cuStreamCreate", 2000, cuStreamCreate),
    FAKECUDA_PROC("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    FAKECUDA_STREAM_PROC("cuStreamSynchronize", 2000, cuStreamSynchronize),
    FAKECUDA_STREAM_PROC("cuStreamIsCapturing", 10000, cuStreamIsCapturing),
    FAKECUDA_PROC("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
    FAKECUDA_PROC("cuEventCreate", 2000, cuEventCreate),
    FAKECUDA_STREAM_PROC("cuEventRecord", 2000, cuEventRecord),
    FAKECUDA_PROC("cuEventSynchronize", 2000, cuEventSynchronize),
    FAKECUDA_PROC("cuEventQuery", 2000, cuEventQuery),
    FAKECUDA_PROC("cuEventDestroy", 4000, cuEventDestroy_v2),
    FAKECUDA_STREAM_PROC("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2),
    FAKECUDA_STREAM_PROC("cuStreamEndCapture", 10000, cuStreamEndCapture),
    FAKECUDA_STREAM_PROC("cuStreamGetCaptureInfo", 12030, cuStreamGetCaptureInfo_v3),
    FAKECUDA_PROC("cuGraphCreate", 10000, cuGraphCreate),
    FAKECUDA_PROC("cuGraphDestroy", 10000, cuGraphDestroy),
    FAKECUDA_PROC("cuGraphGetNodes", 10000, cuGraphGetNodes),
    FAKECUDA_PROC("cuGraphNodeGetType", 10000, cuGraphNodeGetType),
    FAKECUDA_PROC("cuGraphKernelNodeGetParams", 12000, cuGraphKernelNodeGetParams_v2),
    FAKECUDA_PROC("cuGraphMemsetNodeGetParams", 10000, cuGraphMemsetNodeGetParams),
    FAKECUDA_PROC("cuGraphMemcpyNodeGetParams", 10000, cuGraphMemcpyNodeGetParams),
    FAKECUDA_PROC("cuGraphChildGraphNodeGetGraph", 10000, cuGraphChildGraphNodeGetGraph),
    FAKECUDA_PROC("cuGraphAddChildGraphNode", 10000, cuGraphAddChildGraphNode),
    // The runtime of CUDA 12 asks for "cuGraphInstantiate" and is given the version with flags.
    FAKECUDA_PROC("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags),
    FAKECUDA_PROC("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    FAKECUDA_STREAM_PROC("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams),
    FAKECUDA_STREAM_PROC("cuGraphLaunch", 10000, cuGraphLaunch),
    FAKECUDA_PROC("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
    FAKECUDA_PROC("cuGraphExecKernelNodeSetParams", 12000, cuGraphExecKernelNodeSetParams_v2),
    FAKECUDA_STREAM_PROC("cuMemsetD32Async", 3020, cuMemsetD32Async),
    FAKECUDA_STREAM_PROC("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2),
};

#undef FAKECUDA_PROC
#undef FAKECUDA_STREAM_PROC

CUresult look_up(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                 CUdriverProcAddressQueryResult* status) {
    if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const cuuint64_t known_flags =
        CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if ((flags & ~known_flags) != 0) return CUDA_ERROR_INVALID_VALUE;
    *pfn = nullptr;
    const ProcVersion* best = nullptr;
    bool name_known = false;
    for (const ProcVersion& entry : kProcTable) {
        if (std::strcmp(entry.base_name, symbol) != 0) continue;
        name_known = true;
        if (entry.since_version <= cuda_version &&
            (best == nullptr || entry.since_version > best->since_version))
            best = &entry;
    }
    if (best == nullptr) {
        if (status != nullptr)
            *status = name_known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                 : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    *pfn = (per_thread && best->per_thread != nullptr) ? best->per_thread : best->legacy;
    if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

}  // namespace

FAKECUDA_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                             cuuint64_t flags,
                                             CUdriverProcAddressQueryResult* symbolStatus) {
    return look_up(symbol, pfn, cudaVersion, flags, symbolStatus);
}

FAKECUDA_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                          cuuint64_t flags) {
    return look_up(symbol, pfn, cudaVersion, flags, nullptr);
}

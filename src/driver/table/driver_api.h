// The driver entry points the library calls or hooks, one list. The driver table
// (driver_table.h) resolves each from libcuda at run time; tests supply a fake
// libcuda with the same names. Columns: exported symbol name, return type,
// parameter list.
#pragma once

#include <cuda.h>

// cuda.h maps these names onto their _v2; the driver also exports the first
// versions (32-bit sizes) under the plain names, and those are hooked too.
#undef cuMemGetInfo
#undef cuDeviceTotalMem
// The same for graph entry points whose first versions the driver still
// exports for the runtimes of CUDA 11.
#undef cuGraphExecUpdate
#undef cuGraphExecKernelNodeSetParams
// And capture's: the plain name is its first version, without a capture mode.
#undef cuStreamBeginCapture
// The link probe (driver/rates) takes whichever elapsed-time entry the driver has.
#undef cuEventElapsedTime

// Entry points the library hooks. Each stream-taking one comes in the legacy
// and the per-thread-default-stream (_ptsz) variant; both are listed.
#define UVMP_HOOKED_DRIVER_FUNCTIONS(X)                                                             \
    X(cuGetProcAddress, CUresult, (const char* symbol, void** pfn, int cudaVersion,                \
                                   cuuint64_t flags))                                               \
    X(cuGetProcAddress_v2, CUresult, (const char* symbol, void** pfn, int cudaVersion,             \
                                      cuuint64_t flags, CUdriverProcAddressQueryResult* status))    \
    X(cuMemAlloc_v2, CUresult, (CUdeviceptr * dptr, size_t bytesize))                               \
    X(cuMemAllocPitch_v2, CUresult, (CUdeviceptr * dptr, size_t* pitch, size_t width,              \
                                     size_t height, unsigned int element_size))                    \
    X(cuMemAllocAsync, CUresult, (CUdeviceptr * dptr, size_t bytesize, CUstream stream))           \
    X(cuMemAllocAsync_ptsz, CUresult, (CUdeviceptr * dptr, size_t bytesize, CUstream stream))      \
    X(cuMemAllocFromPoolAsync, CUresult, (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool,  \
                                          CUstream stream))                                        \
    X(cuMemAllocFromPoolAsync_ptsz, CUresult, (CUdeviceptr * dptr, size_t bytesize,                \
                                               CUmemoryPool pool, CUstream stream))                \
    X(cuMemAllocManaged, CUresult, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags))      \
    X(cuMemFree_v2, CUresult, (CUdeviceptr dptr))                                                   \
    X(cuMemFreeAsync, CUresult, (CUdeviceptr dptr, CUstream stream))                               \
    X(cuMemFreeAsync_ptsz, CUresult, (CUdeviceptr dptr, CUstream stream))                          \
    X(cuMemGetInfo_v2, CUresult, (size_t * free, size_t* total))                                   \
    X(cuMemGetInfo, CUresult, (unsigned int* free, unsigned int* total))                           \
    X(cuDeviceTotalMem_v2, CUresult, (size_t * bytes, CUdevice device))                            \
    X(cuDeviceTotalMem, CUresult, (unsigned int* bytes, CUdevice device))                          \
    X(cuMemPoolGetAttribute, CUresult, (CUmemoryPool pool, CUmemPool_attribute attr, void* value))  \
    X(cuMemPoolSetAttribute, CUresult, (CUmemoryPool pool, CUmemPool_attribute attr, void* value))  \
    X(cuMemPoolTrimTo, CUresult, (CUmemoryPool pool, size_t minBytesToKeep))                        \
    X(cuDeviceGetMemPool, CUresult, (CUmemoryPool * pool, CUdevice dev))                            \
    X(cuDeviceGetDefaultMemPool, CUresult, (CUmemoryPool * pool_out, CUdevice dev))                 \
    X(cuDeviceSetMemPool, CUresult, (CUdevice dev, CUmemoryPool pool))                              \
    X(cuMemCreate, CUresult, (CUmemGenericAllocationHandle * handle, size_t size,                  \
                              const CUmemAllocationProp* prop, unsigned long long flags))          \
    X(cuMemRelease, CUresult, (CUmemGenericAllocationHandle handle))                               \
    X(cuMemAllocHost_v2, CUresult, (void** pp, size_t bytesize))                                   \
    X(cuMemHostAlloc, CUresult, (void** pp, size_t bytesize, unsigned int flags))                  \
    X(cuIpcGetMemHandle, CUresult, (CUipcMemHandle * handle, CUdeviceptr dptr))                    \
    X(cuPointerGetAttribute, CUresult, (void* data, CUpointer_attribute attribute,                 \
                                        CUdeviceptr ptr))                                          \
    X(cuPointerGetAttributes, CUresult, (unsigned int count, CUpointer_attribute* attributes,      \
                                         void** data, CUdeviceptr ptr))                            \
    X(cuLaunchKernel, CUresult, (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,  \
                                 unsigned int bx, unsigned int by, unsigned int bz,               \
                                 unsigned int shared_bytes, CUstream stream, void** params,       \
                                 void** extra))                                                    \
    X(cuLaunchKernel_ptsz, CUresult, (CUfunction f, unsigned int gx, unsigned int gy,              \
                                      unsigned int gz, unsigned int bx, unsigned int by,          \
                                      unsigned int bz, unsigned int shared_bytes, CUstream stream, \
                                      void** params, void** extra))                                \
    X(cuLaunchKernelEx, CUresult, (const CUlaunchConfig* config, CUfunction f, void** params,      \
                                   void** extra))                                                  \
    X(cuLaunchKernelEx_ptsz, CUresult, (const CUlaunchConfig* config, CUfunction f,               \
                                        void** params, void** extra))                              \
    X(cuLaunchCooperativeKernel, CUresult, (CUfunction f, unsigned int gx, unsigned int gy,        \
                                            unsigned int gz, unsigned int bx, unsigned int by,    \
                                            unsigned int bz, unsigned int shared_bytes,           \
                                            CUstream stream, void** params))                       \
    X(cuLaunchCooperativeKernel_ptsz, CUresult, (CUfunction f, unsigned int gx, unsigned int gy,   \
                                                 unsigned int gz, unsigned int bx,                \
                                                 unsigned int by, unsigned int bz,                \
                                                 unsigned int shared_bytes, CUstream stream,      \
                                                 void** params))                                  \
    UVMP_HOOKED_GRAPH_FUNCTIONS(X)                                                                  \
    UVMP_HOOKED_CAPTURE_FUNCTIONS(X)

// Every entry point that begins a stream capture (preload/capture_hooks.cpp):
// until one is called, no launch can be captured, and the launch path does not
// ask the driver. The first version (no capture mode) serves runtimes of CUDA 10.0.
#define UVMP_HOOKED_CAPTURE_FUNCTIONS(X)                                                            \
    X(cuStreamBeginCapture, CUresult, (CUstream stream))                                            \
    X(cuStreamBeginCapture_ptsz, CUresult, (CUstream stream))                                       \
    X(cuStreamBeginCapture_v2, CUresult, (CUstream stream, CUstreamCaptureMode mode))               \
    X(cuStreamBeginCapture_v2_ptsz, CUresult, (CUstream stream, CUstreamCaptureMode mode))          \
    X(cuStreamBeginCaptureToGraph, CUresult, (CUstream stream, CUgraph graph,                       \
                                              const CUgraphNode* dependencies,                      \
                                              const CUgraphEdgeData* edge_data, size_t count,       \
                                              CUstreamCaptureMode mode))                            \
    X(cuStreamBeginCaptureToGraph_ptsz, CUresult, (CUstream stream, CUgraph graph,                  \
                                                   const CUgraphNode* dependencies,                 \
                                                   const CUgraphEdgeData* edge_data, size_t count,  \
                                                   CUstreamCaptureMode mode))

// The graph entry points hooked (preload/graph_hooks.cpp): making, changing and
// destroying executable graphs, and launching them. The first versions of
// instantiate, update and kernel-node parameters serve runtimes of CUDA 11.
#define UVMP_HOOKED_GRAPH_FUNCTIONS(X)                                                              \
    X(cuGraphInstantiateWithFlags, CUresult, (CUgraphExec * exec, CUgraph graph,                    \
                                              unsigned long long flags))                            \
    X(cuGraphInstantiateWithParams, CUresult, (CUgraphExec * exec, CUgraph graph,                   \
                                               CUDA_GRAPH_INSTANTIATE_PARAMS * params))             \
    X(cuGraphInstantiateWithParams_ptsz, CUresult, (CUgraphExec * exec, CUgraph graph,              \
                                                    CUDA_GRAPH_INSTANTIATE_PARAMS * params))        \
    X(cuGraphInstantiate_v2, CUresult, (CUgraphExec * exec, CUgraph graph, CUgraphNode * error_node, \
                                        char* log, size_t log_bytes))                               \
    X(cuGraphLaunch, CUresult, (CUgraphExec exec, CUstream stream))                                 \
    X(cuGraphLaunch_ptsz, CUresult, (CUgraphExec exec, CUstream stream))                            \
    X(cuGraphExecDestroy, CUresult, (CUgraphExec exec))                                             \
    X(cuModuleUnload, CUresult, (CUmodule module))                                                  \
    X(cuLibraryUnload, CUresult, (CUlibrary library))                                               \
    X(cuGraphExecUpdate_v2, CUresult, (CUgraphExec exec, CUgraph graph,                             \
                                       CUgraphExecUpdateResultInfo * result))                       \
    X(cuGraphExecUpdate, CUresult, (CUgraphExec exec, CUgraph graph, CUgraphNode * error_node,      \
                                    CUgraphExecUpdateResult * result))                              \
    X(cuGraphExecKernelNodeSetParams_v2, CUresult, (CUgraphExec exec, CUgraphNode node,             \
                                                    const CUDA_KERNEL_NODE_PARAMS_v2* params))      \
    X(cuGraphExecKernelNodeSetParams, CUresult, (CUgraphExec exec, CUgraphNode node,                \
                                                 const CUDA_KERNEL_NODE_PARAMS_v1* params))         \
    X(cuGraphExecMemcpyNodeSetParams, CUresult, (CUgraphExec exec, CUgraphNode node,                \
                                                 const CUDA_MEMCPY3D* params, CUcontext context))   \
    X(cuGraphExecMemsetNodeSetParams, CUresult, (CUgraphExec exec, CUgraphNode node,                \
                                                 const CUDA_MEMSET_NODE_PARAMS* params,             \
                                                 CUcontext context))                                \
    X(cuGraphExecChildGraphNodeSetParams, CUresult, (CUgraphExec exec, CUgraphNode node,            \
                                                     CUgraph child))                                \
    X(cuGraphExecNodeSetParams, CUresult, (CUgraphExec exec, CUgraphNode node,                      \
                                           CUgraphNodeParams * params))

// Entry points the library only calls. Optional ones (newer drivers) may be absent.
#define UVMP_CALLED_DRIVER_FUNCTIONS(X)                                                             \
    X(cuInit, CUresult, (unsigned int flags))                                                      \
    X(cuDriverGetVersion, CUresult, (int* version))                                                \
    X(cuGetErrorName, CUresult, (CUresult error, const char** name))                               \
    X(cuCtxGetCurrent, CUresult, (CUcontext * ctx))                                                 \
    X(cuCtxSetCurrent, CUresult, (CUcontext ctx))                                                   \
    X(cuCtxGetDevice, CUresult, (CUdevice * device))                                               \
    X(cuCtxSynchronize, CUresult, (void))                                                          \
    X(cuDeviceGetName, CUresult, (char* name, int len, CUdevice device))                           \
    X(cuStreamCreate, CUresult, (CUstream * stream, unsigned int flags))                           \
    X(cuStreamSynchronize, CUresult, (CUstream stream))                                            \
    X(cuStreamIsCapturing, CUresult, (CUstream stream, CUstreamCaptureStatus * status))           \
    X(cuStreamIsCapturing_ptsz, CUresult, (CUstream stream, CUstreamCaptureStatus * status))      \
    X(cuStreamGetCaptureInfo_v3, CUresult, (CUstream stream, CUstreamCaptureStatus * status,       \
                                            cuuint64_t * id, CUgraph * graph,                     \
                                            const CUgraphNode** dependencies,                     \
                                            const CUgraphEdgeData** edge_data, size_t* count))     \
    X(cuStreamGetCaptureInfo_v3_ptsz, CUresult, (CUstream stream, CUstreamCaptureStatus * status,  \
                                                 cuuint64_t * id, CUgraph * graph,                \
                                                 const CUgraphNode** dependencies,                \
                                                 const CUgraphEdgeData** edge_data,               \
                                                 size_t* count))                                  \
    X(cuThreadExchangeStreamCaptureMode, CUresult, (CUstreamCaptureMode * mode))                   \
    X(cuGraphGetNodes, CUresult, (CUgraph graph, CUgraphNode * nodes, size_t * count))              \
    X(cuGraphNodeGetType, CUresult, (CUgraphNode node, CUgraphNodeType * type))                     \
    X(cuGraphKernelNodeGetParams_v2, CUresult, (CUgraphNode node,                                   \
                                                CUDA_KERNEL_NODE_PARAMS_v2 * params))               \
    X(cuGraphMemcpyNodeGetParams, CUresult, (CUgraphNode node, CUDA_MEMCPY3D * params))             \
    X(cuGraphMemsetNodeGetParams, CUresult, (CUgraphNode node, CUDA_MEMSET_NODE_PARAMS * params))   \
    X(cuGraphChildGraphNodeGetGraph, CUresult, (CUgraphNode node, CUgraph * child))                 \
    X(cuStreamWaitEvent, CUresult, (CUstream stream, CUevent event, unsigned int flags))          \
    X(cuEventCreate, CUresult, (CUevent * event, unsigned int flags))                              \
    X(cuEventRecord, CUresult, (CUevent event, CUstream stream))                                   \
    X(cuEventRecord_ptsz, CUresult, (CUevent event, CUstream stream))                              \
    X(cuEventSynchronize, CUresult, (CUevent event))                                               \
    X(cuEventQuery, CUresult, (CUevent event))                                                     \
    X(cuEventDestroy_v2, CUresult, (CUevent event))                                                \
    X(cuFuncGetParamInfo, CUresult, (CUfunction f, size_t index, size_t* offset, size_t* size))    \
    X(cuKernelGetParamInfo, CUresult, (CUkernel k, size_t index, size_t* offset, size_t* size))    \
    X(cuFuncGetName, CUresult, (const char** name, CUfunction f))                                  \
    X(cuKernelGetName, CUresult, (const char** name, CUkernel k))                                  \
    X(cuMemPrefetchAsync_v2, CUresult, (CUdeviceptr ptr, size_t bytes, CUmemLocation location,     \
                                        unsigned int flags, CUstream stream))                      \
    X(cuMemPrefetchBatchAsync, CUresult, (CUdeviceptr * ptrs, size_t* sizes, size_t count,         \
                                          CUmemLocation* locations, size_t* location_indices,     \
                                          size_t location_count, unsigned long long flags,        \
                                          CUstream stream))                                        \
    X(cuMemDiscardAndPrefetchBatchAsync, CUresult, (CUdeviceptr * ptrs, size_t* sizes,             \
                                                    size_t count, CUmemLocation* locations,       \
                                                    size_t* location_indices,                     \
                                                    size_t location_count,                        \
                                                    unsigned long long flags, CUstream stream))    \
    X(cuMemAdvise_v2, CUresult, (CUdeviceptr ptr, size_t bytes, CUmem_advise advice,               \
                                 CUmemLocation location))                                          \
    UVMP_LINK_PROBE_FUNCTIONS(X)

// What the link probe (driver/rates/link_probe.h) needs beyond the above: its
// device's identity, its own stream and kernels, and event timing; and, for
// `uvmrun --probe-rates`, a device's primary context.
#define UVMP_LINK_PROBE_FUNCTIONS(X)                                                                \
    X(cuDeviceGet, CUresult, (CUdevice * device, int ordinal))                                     \
    X(cuDevicePrimaryCtxRetain, CUresult, (CUcontext * context, CUdevice device))                  \
    X(cuDevicePrimaryCtxRelease_v2, CUresult, (CUdevice device))                                   \
    X(cuDeviceGetUuid_v2, CUresult, (CUuuid * uuid, CUdevice device))                              \
    X(cuStreamDestroy_v2, CUresult, (CUstream stream))                                             \
    X(cuModuleLoadData, CUresult, (CUmodule * module, const void* image))                          \
    X(cuModuleGetFunction, CUresult, (CUfunction * function, CUmodule module, const char* name))   \
    X(cuEventElapsedTime_v2, CUresult, (float* milliseconds, CUevent start, CUevent end))          \
    X(cuEventElapsedTime, CUresult, (float* milliseconds, CUevent start, CUevent end))

/* Test-only helpers exported by the fake libcuda.so.1 (tests/integration/fake_cuda).
 *
 * The fake driver keeps device memory in host memory and runs no kernels (a
 * graph's set and copy nodes it does run, on that memory); these
 * helpers let a test program describe kernels to it and read what the driver saw,
 * so that a test can tell a converted allocation from a real one and a per-thread
 * stream launch from a legacy one without a GPU. */
#ifndef UVMP_TESTS_FAKECUDA_H
#define UVMP_TESTS_FAKECUDA_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The per-thread-default-stream variants the fake exports. cuda.h declares them
 * only for translation units compiled in that stream mode. */
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream stream);
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                              CUmemoryPool pool, CUstream stream);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream);
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                     unsigned int gz, unsigned int bx, unsigned int by,
                                     unsigned int bz, unsigned int shared_bytes, CUstream stream,
                                     void** params, void** extra);
CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                       void** extra);
CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                                unsigned int gz, unsigned int bx,
                                                unsigned int by, unsigned int bz,
                                                unsigned int shared_bytes, CUstream stream,
                                                void** params);
CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream stream, CUstreamCaptureStatus* status);
CUresult CUDAAPI cuEventRecord_ptsz(CUevent event, CUstream stream);
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream stream);
CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode);
CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream stream, CUgraph* graph);
CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id,
                                                CUgraph* graph, const CUgraphNode** dependencies,
                                                const CUgraphEdgeData** edge_data, size_t* count);
CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec* exec, CUgraph graph,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS* params);
CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream);
CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int value, size_t count, CUstream stream);
CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);

/* A fake device: this much memory, minus its live device and managed allocations, is free.
 * There is one device unless FAKECUDA_DEVICES in the environment asks for more (up to 8);
 * FAKECUDA_DEVICE_MEMORY ("64M,32M") gives the devices other sizes, the n-th size the n-th
 * device's and the last one those after it. Each device has its primary context and its
 * default memory pool; device and managed memory is the device's whose context is current
 * when it is made. Every thread starts with device 0's primary context current. */
#define FAKECUDA_DEVICE_TOTAL_BYTES (16ull << 30)
/* cuDriverGetVersion's answer, unless FAKECUDA_DRIVER_VERSION is set in the environment. */
#define FAKECUDA_DRIVER_VERSION 13000

/* Counts since the fake was loaded. Launch counts are kept per entry point. */
typedef struct fakecuda_counts {
    uint64_t mem_alloc;                /* cuMemAlloc_v2 that succeeded (real device memory) */
    uint64_t mem_alloc_pitch;          /* cuMemAllocPitch_v2 that succeeded */
    uint64_t mem_alloc_async;          /* cuMemAllocAsync and _ptsz that succeeded */
    uint64_t mem_alloc_from_pool;      /* cuMemAllocFromPoolAsync and _ptsz that succeeded */
    uint64_t mem_alloc_managed;        /* cuMemAllocManaged that succeeded */
    uint64_t mem_alloc_host;           /* cuMemAllocHost_v2 and cuMemHostAlloc that succeeded */
    uint64_t mem_create;               /* cuMemCreate that succeeded */
    uint64_t frees;                    /* cuMemFree_v2 that succeeded */
    uint64_t frees_async;              /* cuMemFreeAsync and _ptsz that succeeded */
    uint64_t frees_host;               /* cuMemFreeHost that succeeded */
    uint64_t live_allocations;         /* device, managed and host allocations not yet freed */
    uint64_t live_device_bytes;        /* device allocations of every kind not yet freed */
    uint64_t live_managed_bytes;

    uint64_t launch_kernel;            /* cuLaunchKernel */
    uint64_t launch_kernel_ptsz;       /* cuLaunchKernel_ptsz */
    uint64_t launch_kernel_ex;         /* cuLaunchKernelEx */
    uint64_t launch_kernel_ex_ptsz;    /* cuLaunchKernelEx_ptsz */
    uint64_t launch_cooperative;       /* cuLaunchCooperativeKernel */
    uint64_t launch_cooperative_ptsz;  /* cuLaunchCooperativeKernel_ptsz */
    uint64_t launches_failed;          /* launches refused for bad arguments */

    uint64_t prefetch_calls;           /* cuMemPrefetchAsync_v2 and the batch forms (one per call) */
    uint64_t prefetch_bytes;           /* bytes named by those calls */
    uint64_t prefetch_to_host_bytes;   /* the part of prefetch_bytes sent to the host */
    uint64_t prefetch_refused;         /* prefetches naming memory that is not a live managed range */
    uint64_t advise_calls;             /* cuMemAdvise_v2 */
    uint64_t mem_get_info_calls;       /* cuMemGetInfo_v2, including refused ones */

    uint64_t ctx_synchronize;          /* cuCtxSynchronize */
    uint64_t events_created;           /* cuEventCreate that succeeded */
    uint64_t events_destroyed;         /* cuEventDestroy_v2 that succeeded */
    uint64_t event_queries;            /* cuEventQuery */
    uint64_t event_waits;              /* cuEventSynchronize */
    uint64_t mem_pool_trims;           /* cuMemPoolTrimTo that succeeded */
    uint64_t mem_pool_attribute_queries; /* cuMemPoolGetAttribute, including refused ones */
    uint64_t live_events;              /* events made and not yet destroyed */

    uint64_t captured_launches;        /* kernel launches that became nodes of a graph being captured */
    uint64_t graph_launches;           /* cuGraphLaunch and _ptsz that ran their graph */
    uint64_t graph_kernel_runs;        /* kernel nodes those launches ran */
    uint64_t graph_memsets;            /* set nodes they ran */
    uint64_t graph_memcpys;            /* copy nodes they ran */

    uint64_t event_records_refused;    /* cuEventRecord of an event on another context's stream */
    uint64_t moves_across_devices;     /* prefetches (to a device, or to the host of a device's memory)
                                          issued on another device's stream, or on a stream that last
                                          waited for an event recorded on another device's stream */
} fakecuda_counts;

fakecuda_counts fakecuda_counters(void);

/* Counts of one device since the fake was loaded. */
typedef struct fakecuda_device_counts {
    uint64_t launches;                 /* kernel launches on the device's streams */
    uint64_t prefetch_bytes;           /* bytes prefetched to the device */
    uint64_t prefetch_to_host_bytes;   /* bytes of the device's memory prefetched to the host */
    uint64_t stream_waits;             /* cuStreamWaitEvent on the device's streams */
    uint64_t foreign_event_waits;      /* those waiting for an event recorded on another device's stream */
    uint64_t live_device_bytes;        /* the device's device allocations not yet freed */
    uint64_t live_managed_bytes;       /* its managed allocations not yet freed */
} fakecuda_device_counts;

/* All zero for a device the fake does not have. */
fakecuda_device_counts fakecuda_device_counters(int device);

/* A kernel with `count` parameters at the given byte offsets and sizes. The
 * CUfunction flavour answers cuFuncGetParamInfo / cuFuncGetName; the CUkernel
 * flavour answers cuKernelGetParamInfo / cuKernelGetName and is refused by
 * cuFuncGetParamInfo, so that a caller has to fall back to the kernel query. Both
 * may be launched (a CUkernel cast to CUfunction, as the runtime does). The name
 * and arrays are copied. Returns NULL on bad arguments. */
CUfunction fakecuda_make_function(const char* name, unsigned count, const size_t* offsets,
                                  const size_t* sizes);
CUkernel fakecuda_make_kernel(const char* name, unsigned count, const size_t* offsets,
                              const size_t* sizes);

/* Copies the parameter bytes the last successful launch delivered (laid out by
 * the kernel's offsets) into out, up to capacity bytes; returns their full size. */
size_t fakecuda_last_launch_params(void* out, size_t capacity);

/* Marks a stream as being captured (1) or not (0) with no graph to capture into:
 * cuStreamIsCapturing and cuStreamGetCaptureInfo report it, work queued on it
 * still runs, and cuMemAllocManaged is refused while any stream captures (as
 * after cuStreamBeginCapture, which captures into a graph). Returns 0, or -1 for
 * an unknown stream. */
int fakecuda_set_stream_capturing(CUstream stream, int capturing);

/* Adds a node of `type` (a CUgraphNodeType, or any other number: a kind of node
 * the library does not know) to a graph; it runs nothing. CUDA_SUCCESS, or
 * CUDA_ERROR_INVALID_VALUE for an unknown graph or a NULL out. */
CUresult fakecuda_graph_add_opaque_node(CUgraphNode* node, CUgraph graph, int type);

/* Holds events (1): an event recorded from then on stays incomplete, and
 * cuEventQuery answers CUDA_ERROR_NOT_READY for it, until the GPU is waited for:
 * cuEventSynchronize on it, cuCtxSynchronize, or the end of the hold (0), which
 * completes every event. Returns 0. */
int fakecuda_hold_events(int hold);

/* What the driver was told of one managed allocation: its advice (cuMemAdvise_v2)
 * and the bytes prefetched within it. A location type of -1: never advised. */
typedef struct fakecuda_managed_record {
    int preferred_location_type;  /* a CUmemLocationType, or -1 */
    int preferred_location_id;
    int accessed_by_device;       /* the device of CU_MEM_ADVISE_SET_ACCESSED_BY, or -1 */
    uint64_t advice_calls;
    uint64_t prefetch_bytes;      /* prefetched within it, to either side */
    uint64_t prefetch_to_host_bytes;
} fakecuda_managed_record;

/* The record of the live managed allocation that contains ptr. Returns 0, or -1
 * when there is none (or out is NULL). */
int fakecuda_managed_record_of(CUdeviceptr ptr, fakecuda_managed_record* out);

/* Fault injection (fake_faults.h; FAKECUDA_FAIL sets rules from the environment):
 * makes call number `which` of the entry point `name` fail with `result`, counting
 * from now (1 the next call; 0 every call from now on). CUDA_SUCCESS switches the
 * rule for `name` off. Returns 0, or -1 for a NULL or long name or a full table. */
int fakecuda_fail_calls(const char* name, uint64_t which, CUresult result);
/* How many calls of `name` an injected fault has made fail since the fake was loaded. */
uint64_t fakecuda_calls_failed(const char* name);

/* With FAKECUDA_EXIT_REPORT set in the environment, the fake prints one line as it
 * is unloaded: "fakecuda at exit: N live allocations (M managed bytes), E live events". */

#ifdef __cplusplus
}
#endif

#endif

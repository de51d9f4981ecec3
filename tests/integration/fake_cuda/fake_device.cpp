// Initialisation, the fake devices (one unless FAKECUDA_DEVICES says more), their
// primary contexts, streams and events. Nothing here runs asynchronously: work is
// done when queued, and only events a test holds (fakecuda_hold_events) stay
// incomplete until waited for.
#include "fake_faults.h"
#include "fake_state.h"

#include <cstdlib>
#include <cstring>

using namespace fakecuda;

namespace {

constexpr const char* kDeviceName = "Fake CUDA Device (host memory)";

// FAKECUDA_DRIVER_VERSION in the environment makes the fake another driver (an older one).
int reported_driver_version() {
    const char* text = std::getenv("FAKECUDA_DRIVER_VERSION");
    return text != nullptr && *text != '\0' ? std::atoi(text) : FAKECUDA_DRIVER_VERSION;
}

}  // namespace

FAKECUDA_EXPORT CUresult cuInit(unsigned int flags) {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    mark_initialized();
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDriverGetVersion(int* version) {
    if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *version = reported_driver_version();
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
    if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    switch (error) {
#define FAKECUDA_ERROR_NAME(code) \
    case code: *name = #code; return CUDA_SUCCESS;
        FAKECUDA_ERROR_NAME(CUDA_SUCCESS)
        FAKECUDA_ERROR_NAME(CUDA_ERROR_INVALID_VALUE)
        FAKECUDA_ERROR_NAME(CUDA_ERROR_OUT_OF_MEMORY)
        FAKECUDA_ERROR_NAME(CUDA_ERROR_NOT_INITIALIZED)
        FAKECUDA_ERROR_NAME(CUDA_ERROR_INVALID_DEVICE)
        FAKECUDA_ERROR_NAME(CUDA_ERROR_INVALID_CONTEXT)
        FAKECUDA_ERROR_NAME(CUDA_ERROR_INVALID_HANDLE)
        FAKECUDA_ERROR_NAME(CUDA_ERROR_NOT_FOUND)
        FAKECUDA_ERROR_NAME(CUDA_ERROR_NOT_READY)
        FAKECUDA_ERROR_NAME(CUDA_ERROR_NOT_SUPPORTED)
        FAKECUDA_ERROR_NAME(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
#undef FAKECUDA_ERROR_NAME
    default: *name = nullptr; return CUDA_ERROR_INVALID_VALUE;
    }
}

FAKECUDA_EXPORT CUresult cuDeviceGetCount(int* count) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *count = device_count();
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    std::strncpy(name, kDeviceName, static_cast<std::size_t>(len) - 1);
    name[len - 1] = '\0';
    return CUDA_SUCCESS;
}

// A UUID of its own for each device: the library's rate cache is kept by it.
FAKECUDA_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice device) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    for (int i = 0; i < 16; ++i) uuid->bytes[i] = static_cast<char>(0xf0 + i);
    uuid->bytes[15] = static_cast<char>(device);
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = device_total_bytes(device);
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                                              CUdevice device) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    // A device that supports everything the library may ask about.
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    default: *value = 0; break;
    }
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice device) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    *pool = default_pool(device);
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice device) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    *pool = current_pool(device);
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDeviceSetMemPool(CUdevice device, CUmemoryPool pool) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    if (!with_pool(pool, [](MemPool&) {})) return CUDA_ERROR_INVALID_VALUE;
    set_current_pool(device, pool);
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    *ctx = primary_context(device);
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    return valid_device(device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

// Device 0's primary context is current on every thread as soon as cuInit ran,
// which is what a program sees after the runtime's first call.
FAKECUDA_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *ctx = current_context();
    return CUDA_SUCCESS;
}

// Unbinding (nullptr) leaves the thread with device 0's primary context, which
// the fake keeps current wherever no other is.
FAKECUDA_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx != nullptr && context_device(ctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
    set_current_context(ctx);
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (context_device(ctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
    push_context(ctx);
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx != nullptr) *ctx = current_context();
    pop_context();
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *device = current_device();
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuCtxSynchronize(void) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuCtxSynchronize");
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    ++counters().ctx_synchronize;
    complete_all_events();
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuStreamCreate");
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (stream == nullptr || (flags & ~static_cast<unsigned int>(CU_STREAM_NON_BLOCKING)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *stream = make_stream();
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    return destroy_stream(stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKECUDA_EXPORT CUresult cuStreamSynchronize(CUstream stream) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuStreamSynchronize");
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    return valid_stream(stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKECUDA_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream stream) {
    return cuStreamSynchronize(stream);
}

FAKECUDA_EXPORT CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
    const Stream* s = find_stream(stream);
    *status = (s != nullptr && s->capturing) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                             : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream stream,
                                                  CUstreamCaptureStatus* status) {
    return cuStreamIsCapturing(stream, status);
}

// The event may come from another context or device, as the driver allows: the
// waits for one recorded on another device's stream are counted.
FAKECUDA_EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuStreamWaitEvent");
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    const CUcontext context = stream_context(stream);
    const Event* e = find_event(event);
    if (context == nullptr || e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    const int device = context_device(context);
    const int recorded = e->recorded_device.load();
    DeviceCounters& c = device_counters(device);
    ++c.stream_waits;
    if (recorded >= 0 && recorded != device) ++c.foreign_event_waits;
    if (Stream* s = find_stream(stream)) s->waited_device = recorded;
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuEventCreate(CUevent* event, unsigned int flags) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuEventCreate");
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (event == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *event = make_event();
    ++counters().events_created;
    return CUDA_SUCCESS;
}

// The event and the stream must be of one context, as the driver requires.
FAKECUDA_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuEventRecord");
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    Event* e = find_event(event);
    const CUcontext context = stream_context(stream);
    if (e == nullptr || context == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (e->context != context) {
        ++counters().event_records_refused;
        return CUDA_ERROR_INVALID_HANDLE;
    }
    e->recorded_device = context_device(context);
    e->complete = !events_held();
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) {
    return cuEventRecord(event, stream);
}

// Waiting for an event is the GPU catching up with it.
FAKECUDA_EXPORT CUresult cuEventSynchronize(CUevent event) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuEventSynchronize");
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    ++counters().event_waits;
    Event* e = find_event(event);
    if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    e->complete = true;
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuEventQuery(CUevent event) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuEventQuery");
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    ++counters().event_queries;
    const Event* e = find_event(event);
    if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    return e->complete ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

// Kernels never run here, so no span of a stream has a duration: timing is
// not supported unless FAKECUDA_EVENT_MS gives every span that many
// milliseconds (the library's link probe then measures rates from it).
FAKECUDA_EXPORT CUresult cuEventElapsedTime_v2(float* milliseconds, CUevent start, CUevent end) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (milliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (find_event(start) == nullptr || find_event(end) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    const char* text = std::getenv("FAKECUDA_EVENT_MS");
    if (text == nullptr || *text == '\0') return CUDA_ERROR_NOT_SUPPORTED;
    *milliseconds = std::strtof(text, nullptr);
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuEventDestroy_v2(CUevent event) {
    FAKECUDA_INJECTED_FAILURE_POINT("cuEventDestroy_v2");
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!destroy_event(event)) return CUDA_ERROR_INVALID_HANDLE;
    ++counters().events_destroyed;
    return CUDA_SUCCESS;
}

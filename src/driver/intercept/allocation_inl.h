// The allocation path, a template over the original call that passes through.
#pragma once

namespace uvmp::driver {

template <typename Passthrough>
CUresult Interceptor::allocate(CUdeviceptr* dptr, size_t bytes, CUstream stream,
                               bool stream_ordered, StreamFlavor flavor, CUmemoryPool pool,
                               Passthrough&& passthrough) {
    const DriverTable* table = driver_table();
    if (!active_ || !table || !dptr || bytes == 0) {
        const CUresult r = passthrough();
        if (r == CUDA_SUCCESS && dptr && table && bytes)
            note_passthrough_device(*dptr, bytes, stats_.passthrough_inactive, *table);
        return r;
    }
    if (stream_ordered) {
        // Managed allocation is not allowed into a graph being captured.
        if (stream_is_capturing(*table, flavor, stream)) {
            const CUresult r = passthrough();
            if (r == CUDA_SUCCESS) note_passthrough_device(*dptr, bytes, stats_.passthrough_capture, *table);
            return r;
        }
    }
    // A plain allocation may be used on any stream at once: only a block that is
    // ready for every stream serves it, which is what a stream no call names gets.
    const pool::StreamKey key = stream_ordered ? stream_key(flavor, stream) : pool::kNoStream;
    switch (convert(dptr, bytes, stream_ordered, key, pool, *table)) {
    case ConvertOutcome::Converted: return CUDA_SUCCESS;
    case ConvertOutcome::GuardRefused: return CUDA_ERROR_OUT_OF_MEMORY;
    case ConvertOutcome::Failed: break;
    }
    // Managed allocation refused for another reason: the job must still run.
    const CUresult fallback = passthrough();
    if (fallback == CUDA_SUCCESS)
        note_passthrough_device(*dptr, bytes, stats_.passthrough_managed_failed, *table);
    return fallback;
}

} // namespace uvmp::driver

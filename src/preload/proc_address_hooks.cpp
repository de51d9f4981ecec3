// cuGetProcAddress wrappers. The CUDA runtime resolves every entry point through
// the pointer it gets for "cuGetProcAddress" itself, so what the driver hands back
// is swapped for our hook of the very same variant (_v2, _ptsz) whenever we hook it.
#include "core/util/log.h"
#include "preload/hooks.h"

using uvmp::driver::driver_table;

namespace {

void substitute(const uvmp::driver::DriverTable& table, const char* symbol, void** pfn,
                int version, cuuint64_t flags) {
    if (!pfn || !*pfn) return;
    if (void* hook = uvmp::preload::hook_for_real_pointer(table, *pfn)) {
        *pfn = hook;
        return;
    }
    uvmp::log::debug("cuGetProcAddress({}, {}, {:#x}): not hooked", symbol ? symbol : "(null)",
                     version, static_cast<unsigned long long>(flags));
}

} // namespace

extern "C" CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
    const auto* table = driver_table();
    if (!table || !table->cuGetProcAddress) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult r = table->cuGetProcAddress(symbol, pfn, version, flags);
    if (r == CUDA_SUCCESS) substitute(*table, symbol, pfn, version, flags);
    return r;
}

extern "C" CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                        cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
    const auto* table = driver_table();
    if (!table || !table->cuGetProcAddress_v2) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult r = table->cuGetProcAddress_v2(symbol, pfn, version, flags, status);
    if (r == CUDA_SUCCESS) substitute(*table, symbol, pfn, version, flags);
    return r;
}

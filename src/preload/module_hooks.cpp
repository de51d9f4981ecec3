// Unloading code: the driver may hand an unloaded module's function handles out
// again, for other kernels, so the library forgets what it learnt of every handle
// (driver/intercept/interceptor.h, code_unloaded) before and after the real call: another
// thread's launch may come in between.
#include "driver/intercept/interceptor.h"
#include "preload/hooks.h"

using uvmp::driver::driver_table;
using uvmp::driver::Interceptor;

namespace {

template <typename Handle>
CUresult unload(CUresult (*real)(Handle), Handle handle) {
    Interceptor* icpt = uvmp::driver::interceptor();
    if (icpt) icpt->code_unloaded();
    const CUresult result = real(handle);
    if (icpt) icpt->code_unloaded();
    return result;
}

} // namespace

extern "C" CUresult cuModuleUnload(CUmodule module) {
    const auto* table = driver_table();
    if (!table || !table->cuModuleUnload) return uvmp::preload::missing_entry_point(table);
    return unload(table->cuModuleUnload, module);
}

extern "C" CUresult cuLibraryUnload(CUlibrary library) {
    const auto* table = driver_table();
    if (!table || !table->cuLibraryUnload) return uvmp::preload::missing_entry_point(table);
    return unload(table->cuLibraryUnload, library);
}

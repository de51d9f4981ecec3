// The exported hooks: one per entry point of UVMP_HOOKED_DRIVER_FUNCTIONS, each
// under the driver's own exported name.
#pragma once

#include "driver/table/driver_table.h"

extern "C" {
#define UVMP_DECLARE_HOOK(name, ret, params) ret name params;
UVMP_HOOKED_DRIVER_FUNCTIONS(UVMP_DECLARE_HOOK)
#undef UVMP_DECLARE_HOOK
}

namespace uvmp::preload {

// What a hook reached for an entry point this driver lacks (one too old for it)
// answers: what the driver would for a name it does not know.
inline CUresult missing_entry_point(const driver::DriverTable* table) {
    return table ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_NOT_INITIALIZED;
}

// Our hook for an exported driver name, or nullptr when the name is not hooked.
void* hook_for_name(const char* name);

// Our hook for a real driver entry point, or nullptr. Used on what the driver's
// cuGetProcAddress hands back, so that the exact variant asked for (_v2, _ptsz)
// is the one wrapped.
void* hook_for_real_pointer(const driver::DriverTable& table, void* real);

// The real pointer stored in the table for an exported hooked name.
void* real_for_name(const driver::DriverTable& table, const char* name);

} // namespace uvmp::preload

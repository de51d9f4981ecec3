// The real driver entry points, resolved from libcuda at run time (the library
// links nothing of CUDA). Published once; readers need no lock.
#pragma once

#include "driver/table/driver_api.h"

#undef cuGetProcAddress

namespace uvmp::driver {

struct DriverTable {
#define UVMP_DECLARE_POINTER(name, ret, params) ret(*name) params = nullptr;
    UVMP_HOOKED_DRIVER_FUNCTIONS(UVMP_DECLARE_POINTER)
    UVMP_CALLED_DRIVER_FUNCTIONS(UVMP_DECLARE_POINTER)
#undef UVMP_DECLARE_POINTER
    void* library = nullptr;
    // cuDriverGetVersion's answer (0 when it gave none), and whether the library
    // can work with that driver (kOldestDriverVersion or newer). With an older one
    // the library stands aside: every hooked call goes straight to the driver.
    int version = 0;
    bool supported = false;
};

// The oldest driver the library works with: 12.8.
inline constexpr int kOldestDriverVersion = 12080;

// The table, resolving it on first use from "libcuda.so.1". nullptr when libcuda
// cannot be opened, or when called re-entrantly while this thread resolves it.
// A driver that cannot be opened or is too old is said so in one line, once.
const DriverTable* driver_table();

// The table if it is already resolved, else nullptr. Never resolves.
const DriverTable* driver_table_if_ready();

// Calls `callback` once, right after libcuda is loaded and its table published
// (at once if it already is). Fork handlers registered then come after any the
// driver registered while loading, so theirs run after the library's in the
// parent before a fork: the library's locks are taken while the driver still works.
void call_when_loaded(void (*callback)());

// For each hooked name: its address in the real libcuda. The callback gets
// (name, pointer to the table slot).
template <typename F>
void for_each_hooked_slot(const DriverTable& table, F&& f) {
#define UVMP_VISIT_SLOT(name, ret, params) f(#name, reinterpret_cast<void* const*>(&table.name));
    UVMP_HOOKED_DRIVER_FUNCTIONS(UVMP_VISIT_SLOT)
#undef UVMP_VISIT_SLOT
}

const char* error_name(CUresult result);

} // namespace uvmp::driver

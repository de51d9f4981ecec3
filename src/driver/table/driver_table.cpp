#include "driver/table/driver_table.h"

#include "core/util/log.h"
#include "driver/table/real_dlsym.h"

#include <dlfcn.h>

#include <atomic>

namespace uvmp::driver {
namespace {

std::atomic<const DriverTable*> g_table{nullptr};
thread_local bool t_resolving = false;
std::atomic<void (*)()> g_when_loaded{nullptr};

void run_when_loaded() {
    if (auto callback = g_when_loaded.exchange(nullptr, std::memory_order_acq_rel)) callback();
}

// The managed-memory calls the library makes (cuMemPrefetchAsync_v2 and the
// batch forms with their locations, kernel parameter queries) need a recent driver.
void check_version(DriverTable& table) {
    if (!table.cuDriverGetVersion || table.cuDriverGetVersion(&table.version) != CUDA_SUCCESS) table.version = 0;
    table.supported = table.version >= kOldestDriverVersion;
    if (table.supported) return;
    if (table.version == 0)
        UVMP_WARN_ONCE("the NVIDIA driver does not tell its version; the library passes every call through");
    else
        UVMP_WARN_ONCE("the NVIDIA driver is version {}.{}, older than the {}.{} the library needs; it passes "
                       "every call through",
                       table.version / 1000, table.version % 1000 / 10, kOldestDriverVersion / 1000,
                       kOldestDriverVersion % 1000 / 10);
}

const DriverTable* resolve() {
    DlsymFn dlsym_fn = real_dlsym();
    if (!dlsym_fn) return nullptr;
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!library) {
        const char* why = dlerror();
        UVMP_WARN_ONCE("libcuda.so.1 cannot be opened ({}): without an NVIDIA driver the library does nothing",
                       why ? why : "no reason given");
        return nullptr;
    }
    auto* table = new DriverTable;
    table->library = library;
#define UVMP_RESOLVE_POINTER(name, ret, params)                                                    \
    table->name = reinterpret_cast<ret(*) params>(dlsym_fn(library, #name));
    UVMP_HOOKED_DRIVER_FUNCTIONS(UVMP_RESOLVE_POINTER)
    UVMP_CALLED_DRIVER_FUNCTIONS(UVMP_RESOLVE_POINTER)
#undef UVMP_RESOLVE_POINTER
    check_version(*table);
    return table;
}

} // namespace

const DriverTable* driver_table() {
    if (const DriverTable* t = g_table.load(std::memory_order_acquire)) return t;
    // libcuda's own initialisation may come back through the hooks: answer those
    // calls with nothing rather than recurse.
    if (t_resolving) return nullptr;
    t_resolving = true;
    const DriverTable* fresh = resolve();
    t_resolving = false;
    if (!fresh) return nullptr;
    const DriverTable* expected = nullptr;
    // Two threads may race here; the loser's table is dropped (libcuda stays loaded either way).
    if (!g_table.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
        delete fresh;
        return expected;
    }
    run_when_loaded();
    return fresh;
}

const DriverTable* driver_table_if_ready() { return g_table.load(std::memory_order_acquire); }

void call_when_loaded(void (*callback)()) {
    g_when_loaded.store(callback, std::memory_order_release);
    if (driver_table_if_ready()) run_when_loaded();
}

const char* error_name(CUresult result) {
    const char* name = nullptr;
    if (const DriverTable* t = driver_table_if_ready(); t && t->cuGetErrorName)
        t->cuGetErrorName(result, &name);
    return name ? name : "CUDA_ERROR_UNKNOWN";
}

} // namespace uvmp::driver

#include "replay_driver.h"

#include <dlfcn.h>

#include <fmt/format.h>

namespace uvmp::tools {

ReplayDriver::ReplayDriver() {
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!library)
        throw DriverError(fmt::format("cannot open the NVIDIA driver (libcuda.so.1): {}", dlerror()));
#define UVMTRACE_RESOLVE_POINTER(name, params)                                                         \
    name = reinterpret_cast<decltype(name)>(dlsym(library, #name));                                   \
    if (!name) throw DriverError("the NVIDIA driver (libcuda.so.1) has no " #name);
    UVMTRACE_REPLAY_DRIVER_FUNCTIONS(UVMTRACE_RESOLVE_POINTER)
#undef UVMTRACE_RESOLVE_POINTER
}

void ReplayDriver::check(CUresult result, const std::string& what) const {
    if (result == CUDA_SUCCESS) return;
    const char* name = nullptr;
    if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name) name = "an unknown CUDA error";
    throw DriverError(fmt::format("{}: {} ({})", what, name, static_cast<int>(result)));
}

} // namespace uvmp::tools

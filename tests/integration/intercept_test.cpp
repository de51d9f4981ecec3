// Reaches the driver through dlopen("libcuda.so.1") the way real programs do and
// checks that the preloaded library saw (or, as a pass-through, did not change)
// every allocation and launch. Run with the fake driver's directory on
// LD_LIBRARY_PATH; see usage() for the routes.
#include "allocation_policy_scenarios.h"
#include "check_list.h"
#include "driver_entry_points.h"
#include "intercept_scenario.h"
#include "pool_scenarios.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

using namespace uvmp_integration;

namespace {

int usage(const char* program) {
    std::fprintf(stderr,
                 "usage: %s dlsym|procaddress converted|passthrough\n"
                 "       %s guard refused|allowed\n"
                 "       %s capture converted\n"
                 "       %s pool %s\n"
                 "  dlsym        resolve entry points with dlsym on the driver's handle\n"
                 "  procaddress  resolve them through cuGetProcAddress, as the CUDA runtime does\n"
                 "  guard        allocate more than the physical guard allows\n"
                 "  capture      allocate on a stream during graph capture\n"
                 "  pool         a scenario of the library's managed pool (dlsym route)\n",
                 program, program, program, program, kPoolModes);
    return 2;
}

template <typename Function>
void resolve(void* handle, Function& out, const char* name) {
    out = reinterpret_cast<Function>(dlsym(handle, name));
}

FakeDriverHelpers resolve_fake_helpers(void* handle) {
    FakeDriverHelpers h;
    resolve(handle, h.counters, "fakecuda_counters");
    resolve(handle, h.make_function, "fakecuda_make_function");
    resolve(handle, h.make_kernel, "fakecuda_make_kernel");
    resolve(handle, h.last_launch_params, "fakecuda_last_launch_params");
    resolve(handle, h.set_stream_capturing, "fakecuda_set_stream_capturing");
    resolve(handle, h.hold_events, "fakecuda_hold_events");
    return h;
}

DriverEntryPoints resolve_by_dlsym(void* handle) {
    DriverEntryPoints d;
    resolve(handle, d.init, "cuInit");
    resolve(handle, d.mem_alloc, "cuMemAlloc_v2");
    resolve(handle, d.mem_alloc_pitch, "cuMemAllocPitch_v2");
    resolve(handle, d.mem_alloc_async, "cuMemAllocAsync");
    resolve(handle, d.mem_alloc_async_per_thread, "cuMemAllocAsync_ptsz");
    resolve(handle, d.mem_alloc_from_pool_async, "cuMemAllocFromPoolAsync");
    resolve(handle, d.mem_alloc_host, "cuMemAllocHost_v2");
    resolve(handle, d.mem_free, "cuMemFree_v2");
    resolve(handle, d.mem_free_async, "cuMemFreeAsync");
    resolve(handle, d.mem_free_host, "cuMemFreeHost");
    resolve(handle, d.mem_get_info, "cuMemGetInfo_v2");
    resolve(handle, d.device_get_default_mem_pool, "cuDeviceGetDefaultMemPool");
    resolve(handle, d.device_get_mem_pool, "cuDeviceGetMemPool");
    resolve(handle, d.device_set_mem_pool, "cuDeviceSetMemPool");
    resolve(handle, d.mem_pool_create, "cuMemPoolCreate");
    resolve(handle, d.mem_pool_destroy, "cuMemPoolDestroy");
    resolve(handle, d.mem_pool_get_attribute, "cuMemPoolGetAttribute");
    resolve(handle, d.mem_pool_set_attribute, "cuMemPoolSetAttribute");
    resolve(handle, d.mem_pool_trim_to, "cuMemPoolTrimTo");
    resolve(handle, d.stream_create, "cuStreamCreate");
    resolve(handle, d.stream_synchronize, "cuStreamSynchronize");
    resolve(handle, d.stream_destroy, "cuStreamDestroy_v2");
    LaunchEntryPoints legacy{"dlsym", false};
    resolve(handle, legacy.launch_kernel, "cuLaunchKernel");
    resolve(handle, legacy.launch_kernel_ex, "cuLaunchKernelEx");
    resolve(handle, legacy.launch_cooperative, "cuLaunchCooperativeKernel");
    LaunchEntryPoints per_thread{"dlsym _ptsz", true};
    resolve(handle, per_thread.launch_kernel, "cuLaunchKernel_ptsz");
    resolve(handle, per_thread.launch_kernel_ex, "cuLaunchKernelEx_ptsz");
    resolve(handle, per_thread.launch_cooperative, "cuLaunchCooperativeKernel_ptsz");
    d.launchers = {legacy, per_thread};
    return d;
}

using GetProcAddressV2 = decltype(&cuGetProcAddress_v2);
using GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

// Looks one base name up and fills `out`; a failure is reported and leaves nullptr.
template <typename Function>
void look_up(GetProcAddressV2 get_proc, Function& out, const char* base_name, int version,
             cuuint64_t flags, CheckList& checks) {
    void* pointer = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult result = get_proc(base_name, &pointer, version, flags, &status);
    if (result != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || pointer == nullptr) {
        checks.expect(false, std::string("cuGetProcAddress(\"") + base_name + "\", " +
                                 std::to_string(version) + ", flags " + std::to_string(flags) +
                                 ") returned " + std::to_string(result) + ", status " +
                                 std::to_string(status));
    }
    out = reinterpret_cast<Function>(pointer);
}

// Resolves the table the way libcudart does: cuGetProcAddress_v2 by dlsym, then
// "cuGetProcAddress" through it, then everything else through what that returned.
DriverEntryPoints resolve_by_proc_address(void* handle, CheckList& checks) {
    DriverEntryPoints d;
    GetProcAddressV2 bootstrap = nullptr;
    resolve(handle, bootstrap, "cuGetProcAddress_v2");
    checks.expect(bootstrap != nullptr, "dlsym(libcuda, \"cuGetProcAddress_v2\")");
    if (bootstrap == nullptr) return d;

    GetProcAddressV2 get_proc = nullptr;
    look_up(bootstrap, get_proc, "cuGetProcAddress", 12000, 0, checks);
    if (get_proc == nullptr) return d;
    checks.expect(true, "cuGetProcAddress(\"cuGetProcAddress\", 12000) gave a v2 entry point");

    // Before CUDA 12 the answer for that name is the four-argument v1.
    GetProcAddressV1 get_proc_v1 = nullptr;
    look_up(get_proc, get_proc_v1, "cuGetProcAddress", 11030, 0, checks);
    if (get_proc_v1 != nullptr) {
        void* version_function = nullptr;
        const CUresult result = get_proc_v1("cuDriverGetVersion", &version_function, 11030, 0);
        int version = 0;
        if (result == CUDA_SUCCESS && version_function != nullptr)
            reinterpret_cast<decltype(&cuDriverGetVersion)>(version_function)(&version);
        checks.expect_eq("driver version through the v1 cuGetProcAddress", version,
                         FAKECUDA_DRIVER_VERSION);
    }

    void* unknown = reinterpret_cast<void*>(&unknown);
    CUdriverProcAddressQueryResult unknown_status = CU_GET_PROC_ADDRESS_SUCCESS;
    const CUresult unknown_result =
        get_proc("cuNoSuchEntryPoint", &unknown, 12000, 0, &unknown_status);
    checks.expect(unknown_result == CUDA_ERROR_NOT_FOUND && unknown == nullptr &&
                      unknown_status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
                  "an unknown name is CUDA_ERROR_NOT_FOUND with SYMBOL_NOT_FOUND: got " +
                      std::to_string(unknown_result) + ", status " +
                      std::to_string(unknown_status));

    constexpr int kVersion = 13000;
    constexpr cuuint64_t kPerThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    look_up(get_proc, d.init, "cuInit", kVersion, 0, checks);
    look_up(get_proc, d.mem_alloc, "cuMemAlloc", kVersion, 0, checks);
    look_up(get_proc, d.mem_alloc_pitch, "cuMemAllocPitch", kVersion, 0, checks);
    look_up(get_proc, d.mem_alloc_async, "cuMemAllocAsync", kVersion, 0, checks);
    look_up(get_proc, d.mem_alloc_async_per_thread, "cuMemAllocAsync", kVersion, kPerThread,
            checks);
    look_up(get_proc, d.mem_alloc_from_pool_async, "cuMemAllocFromPoolAsync", kVersion, 0,
            checks);
    look_up(get_proc, d.mem_alloc_host, "cuMemAllocHost", kVersion, 0, checks);
    look_up(get_proc, d.mem_free, "cuMemFree", kVersion, 0, checks);
    look_up(get_proc, d.mem_free_async, "cuMemFreeAsync", kVersion, 0, checks);
    look_up(get_proc, d.mem_free_host, "cuMemFreeHost", kVersion, 0, checks);
    look_up(get_proc, d.mem_get_info, "cuMemGetInfo", kVersion, 0, checks);
    look_up(get_proc, d.device_get_default_mem_pool, "cuDeviceGetDefaultMemPool", kVersion, 0,
            checks);
    look_up(get_proc, d.device_get_mem_pool, "cuDeviceGetMemPool", kVersion, 0, checks);
    look_up(get_proc, d.device_set_mem_pool, "cuDeviceSetMemPool", kVersion, 0, checks);
    look_up(get_proc, d.mem_pool_create, "cuMemPoolCreate", kVersion, 0, checks);
    look_up(get_proc, d.mem_pool_destroy, "cuMemPoolDestroy", kVersion, 0, checks);
    look_up(get_proc, d.mem_pool_get_attribute, "cuMemPoolGetAttribute", kVersion, 0, checks);
    look_up(get_proc, d.mem_pool_set_attribute, "cuMemPoolSetAttribute", kVersion, 0, checks);
    look_up(get_proc, d.mem_pool_trim_to, "cuMemPoolTrimTo", kVersion, 0, checks);
    look_up(get_proc, d.stream_create, "cuStreamCreate", kVersion, 0, checks);
    look_up(get_proc, d.stream_synchronize, "cuStreamSynchronize", kVersion, 0, checks);
    look_up(get_proc, d.stream_destroy, "cuStreamDestroy", kVersion, 0, checks);
    for (const cuuint64_t flags : {cuuint64_t{0}, kPerThread}) {
        LaunchEntryPoints launchers{flags ? "procaddress per-thread" : "procaddress default",
                                    flags != 0};
        look_up(get_proc, launchers.launch_kernel, "cuLaunchKernel", kVersion, flags, checks);
        look_up(get_proc, launchers.launch_kernel_ex, "cuLaunchKernelEx", kVersion, flags, checks);
        look_up(get_proc, launchers.launch_cooperative, "cuLaunchCooperativeKernel", kVersion,
                flags, checks);
        d.launchers.push_back(launchers);
    }
    return d;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) return usage(argv[0]);
    const std::string_view route = argv[1];
    const std::string_view mode = argv[2];
    const bool guard = route == "guard";
    const bool capture = route == "capture";
    const bool pool = route == "pool";
    if (route != "dlsym" && route != "procaddress" && !guard && !capture && !pool) return usage(argv[0]);
    const auto expectation = parse_expectation(mode);
    if (pool ? !is_pool_mode(mode)
             : guard ? (mode != "refused" && mode != "allowed")
                     : (!expectation || (capture && *expectation != Expectation::converted)))
        return usage(argv[0]);

    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        std::fprintf(stderr, "cannot dlopen libcuda.so.1: %s\n", dlerror());
        return 2;
    }
    const FakeDriverHelpers fake = resolve_fake_helpers(handle);
    if (!missing_entries(fake).empty()) {
        std::fprintf(stderr,
                     "the libcuda.so.1 that dlopen found is not the fake driver (it lacks %s); "
                     "put the fake's directory first on LD_LIBRARY_PATH\n",
                     missing_entries(fake).front().c_str());
        return 2;
    }

    CheckList checks;
    const DriverEntryPoints driver =
        route == "procaddress" ? resolve_by_proc_address(handle, checks) : resolve_by_dlsym(handle);
    const auto missing = missing_entries(driver);
    for (const std::string& name : missing) checks.expect(false, "resolved " + name);
    if (missing.empty()) {
        if (pool)
            run_pool_scenario(driver, fake, mode, checks);
        else if (guard)
            run_guard_scenario(driver, fake, mode == "refused", checks);
        else if (capture)
            run_capture_scenario(driver, fake, checks);
        else
            run_intercept_scenario(driver, fake, *expectation, checks);
    }
    return checks.exit_status();
}

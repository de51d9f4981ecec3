// The route of a program linked directly against libcuda.so.1: every driver call
// below is an ordinary call through the PLT, which the preloaded library's
// exported cu* symbols must capture. Usage: intercept_linked_test converted|passthrough,
// or intercept_linked_test pool MODE (pool_scenarios.h).
#include "check_list.h"
#include "driver_entry_points.h"
#include "intercept_scenario.h"
#include "pool_scenarios.h"

#include <cstdio>
#include <string_view>

using namespace uvmp_integration;

namespace {

// Each entry is a small function making a plain call, not the address of the
// driver's symbol, so that the call sites are the ones a linked program has.
DriverEntryPoints linked_entry_points() {
    DriverEntryPoints d;
    d.init = [](unsigned int flags) { return cuInit(flags); };
    d.mem_alloc = [](CUdeviceptr* p, size_t n) { return cuMemAlloc(p, n); };
    d.mem_alloc_pitch = [](CUdeviceptr* p, size_t* pitch, size_t w, size_t h, unsigned e) {
        return cuMemAllocPitch(p, pitch, w, h, e);
    };
    d.mem_alloc_async = [](CUdeviceptr* p, size_t n, CUstream s) {
        return cuMemAllocAsync(p, n, s);
    };
    d.mem_alloc_async_per_thread = [](CUdeviceptr* p, size_t n, CUstream s) {
        return cuMemAllocAsync_ptsz(p, n, s);
    };
    d.mem_alloc_from_pool_async = [](CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s) {
        return cuMemAllocFromPoolAsync(p, n, pool, s);
    };
    d.mem_alloc_host = [](void** p, size_t n) { return cuMemAllocHost(p, n); };
    d.mem_free = [](CUdeviceptr p) { return cuMemFree(p); };
    d.mem_free_async = [](CUdeviceptr p, CUstream s) { return cuMemFreeAsync(p, s); };
    d.mem_free_host = [](void* p) { return cuMemFreeHost(p); };
    d.mem_get_info = [](size_t* free, size_t* total) { return cuMemGetInfo(free, total); };
    d.device_get_default_mem_pool = [](CUmemoryPool* pool, CUdevice device) {
        return cuDeviceGetDefaultMemPool(pool, device);
    };
    d.device_get_mem_pool = [](CUmemoryPool* pool, CUdevice device) { return cuDeviceGetMemPool(pool, device); };
    d.device_set_mem_pool = [](CUdevice device, CUmemoryPool pool) { return cuDeviceSetMemPool(device, pool); };
    d.mem_pool_create = [](CUmemoryPool* pool, const CUmemPoolProps* props) { return cuMemPoolCreate(pool, props); };
    d.mem_pool_destroy = [](CUmemoryPool pool) { return cuMemPoolDestroy(pool); };
    d.mem_pool_get_attribute = [](CUmemoryPool pool, CUmemPool_attribute attribute, void* value) {
        return cuMemPoolGetAttribute(pool, attribute, value);
    };
    d.mem_pool_set_attribute = [](CUmemoryPool pool, CUmemPool_attribute attribute, void* value) {
        return cuMemPoolSetAttribute(pool, attribute, value);
    };
    d.mem_pool_trim_to = [](CUmemoryPool pool, size_t keep) { return cuMemPoolTrimTo(pool, keep); };
    d.stream_create = [](CUstream* s, unsigned int flags) { return cuStreamCreate(s, flags); };
    d.stream_synchronize = [](CUstream s) { return cuStreamSynchronize(s); };
    d.stream_destroy = [](CUstream s) { return cuStreamDestroy(s); };

    LaunchEntryPoints legacy{"linked", false};
    legacy.launch_kernel = [](CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                              unsigned by, unsigned bz, unsigned shared, CUstream s, void** params,
                              void** extra) {
        return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
    };
    legacy.launch_kernel_ex = [](const CUlaunchConfig* config, CUfunction f, void** params,
                                 void** extra) { return cuLaunchKernelEx(config, f, params, extra); };
    legacy.launch_cooperative = [](CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                   unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                   CUstream s, void** params) {
        return cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shared, s, params);
    };
    LaunchEntryPoints per_thread{"linked _ptsz", true};
    per_thread.launch_kernel = [](CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                  unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                  CUstream s, void** params, void** extra) {
        return cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
    };
    per_thread.launch_kernel_ex = [](const CUlaunchConfig* config, CUfunction f, void** params,
                                     void** extra) {
        return cuLaunchKernelEx_ptsz(config, f, params, extra);
    };
    per_thread.launch_cooperative = [](CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                       unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                       CUstream s, void** params) {
        return cuLaunchCooperativeKernel_ptsz(f, gx, gy, gz, bx, by, bz, shared, s, params);
    };
    d.launchers = {legacy, per_thread};
    return d;
}

FakeDriverHelpers linked_fake_helpers() {
    FakeDriverHelpers h;
    h.counters = &fakecuda_counters;
    h.make_function = &fakecuda_make_function;
    h.make_kernel = &fakecuda_make_kernel;
    h.last_launch_params = &fakecuda_last_launch_params;
    h.set_stream_capturing = &fakecuda_set_stream_capturing;
    h.hold_events = &fakecuda_hold_events;
    return h;
}

}  // namespace

int main(int argc, char** argv) {
    CheckList checks;
    if (argc == 3 && std::string_view(argv[1]) == "pool" && is_pool_mode(argv[2])) {
        run_pool_scenario(linked_entry_points(), linked_fake_helpers(), argv[2], checks);
        return checks.exit_status();
    }
    const auto expectation = argc == 2 ? parse_expectation(argv[1]) : std::nullopt;
    if (!expectation) {
        std::fprintf(stderr, "usage: %s converted|passthrough\n       %s pool %s\n", argv[0], argv[0], kPoolModes);
        return 2;
    }
    run_intercept_scenario(linked_entry_points(), linked_fake_helpers(), *expectation, checks);
    return checks.exit_status();
}

#include "driver_entry_points.h"

namespace uvmp_integration {

namespace {

template <typename Function>
void note_missing(std::vector<std::string>& missing, Function* function, const std::string& name) {
    if (function == nullptr) missing.push_back(name);
}

}  // namespace

std::vector<std::string> missing_entries(const DriverEntryPoints& d) {
    std::vector<std::string> missing;
    note_missing(missing, d.init, "cuInit");
    note_missing(missing, d.mem_alloc, "cuMemAlloc_v2");
    note_missing(missing, d.mem_alloc_pitch, "cuMemAllocPitch_v2");
    note_missing(missing, d.mem_alloc_async, "cuMemAllocAsync");
    note_missing(missing, d.mem_alloc_async_per_thread, "cuMemAllocAsync_ptsz");
    note_missing(missing, d.mem_alloc_from_pool_async, "cuMemAllocFromPoolAsync");
    note_missing(missing, d.mem_alloc_host, "cuMemAllocHost_v2");
    note_missing(missing, d.mem_free, "cuMemFree_v2");
    note_missing(missing, d.mem_free_async, "cuMemFreeAsync");
    note_missing(missing, d.mem_free_host, "cuMemFreeHost");
    note_missing(missing, d.mem_get_info, "cuMemGetInfo_v2");
    note_missing(missing, d.device_get_default_mem_pool, "cuDeviceGetDefaultMemPool");
    note_missing(missing, d.device_get_mem_pool, "cuDeviceGetMemPool");
    note_missing(missing, d.device_set_mem_pool, "cuDeviceSetMemPool");
    note_missing(missing, d.mem_pool_create, "cuMemPoolCreate");
    note_missing(missing, d.mem_pool_destroy, "cuMemPoolDestroy");
    note_missing(missing, d.mem_pool_get_attribute, "cuMemPoolGetAttribute");
    note_missing(missing, d.mem_pool_set_attribute, "cuMemPoolSetAttribute");
    note_missing(missing, d.mem_pool_trim_to, "cuMemPoolTrimTo");
    note_missing(missing, d.stream_create, "cuStreamCreate");
    note_missing(missing, d.stream_synchronize, "cuStreamSynchronize");
    note_missing(missing, d.stream_destroy, "cuStreamDestroy_v2");
    for (const LaunchEntryPoints& l : d.launchers) {
        note_missing(missing, l.launch_kernel, l.label + " cuLaunchKernel");
        note_missing(missing, l.launch_kernel_ex, l.label + " cuLaunchKernelEx");
        note_missing(missing, l.launch_cooperative, l.label + " cuLaunchCooperativeKernel");
    }
    if (d.launchers.empty()) missing.push_back("launch entry points");
    return missing;
}

std::vector<std::string> missing_entries(const FakeDriverHelpers& h) {
    std::vector<std::string> missing;
    note_missing(missing, h.counters, "fakecuda_counters");
    note_missing(missing, h.make_function, "fakecuda_make_function");
    note_missing(missing, h.make_kernel, "fakecuda_make_kernel");
    note_missing(missing, h.last_launch_params, "fakecuda_last_launch_params");
    note_missing(missing, h.set_stream_capturing, "fakecuda_set_stream_capturing");
    note_missing(missing, h.hold_events, "fakecuda_hold_events");
    return missing;
}

}  // namespace uvmp_integration

// The driver entry points a test scenario calls, gathered into tables so that
// one scenario runs unchanged over every route a program can take to the driver:
// dlsym on the driver's handle, cuGetProcAddress, or plain linking.
#pragma once

#include "fakecuda.h"

#include <string>
#include <vector>

namespace uvmp_integration {

// One set of launch functions; `per_thread` says whether they are the _ptsz
// variants, which decides which of the fake's counters they must move.
struct LaunchEntryPoints {
    std::string label;
    bool per_thread = false;
    decltype(&cuLaunchKernel) launch_kernel = nullptr;
    decltype(&cuLaunchKernelEx) launch_kernel_ex = nullptr;
    decltype(&cuLaunchCooperativeKernel) launch_cooperative = nullptr;
};

struct DriverEntryPoints {
    decltype(&cuInit) init = nullptr;
    decltype(&cuMemAlloc_v2) mem_alloc = nullptr;
    decltype(&cuMemAllocPitch_v2) mem_alloc_pitch = nullptr;
    decltype(&cuMemAllocAsync) mem_alloc_async = nullptr;
    // The per-thread-default-stream variant of cuMemAllocAsync.
    decltype(&cuMemAllocAsync) mem_alloc_async_per_thread = nullptr;
    decltype(&cuMemAllocFromPoolAsync) mem_alloc_from_pool_async = nullptr;
    decltype(&cuMemAllocHost_v2) mem_alloc_host = nullptr;
    decltype(&cuMemFree_v2) mem_free = nullptr;
    decltype(&cuMemFreeAsync) mem_free_async = nullptr;
    decltype(&cuMemFreeHost) mem_free_host = nullptr;
    decltype(&cuMemGetInfo_v2) mem_get_info = nullptr;
    decltype(&cuDeviceGetDefaultMemPool) device_get_default_mem_pool = nullptr;
    decltype(&cuDeviceGetMemPool) device_get_mem_pool = nullptr;
    decltype(&cuDeviceSetMemPool) device_set_mem_pool = nullptr;
    decltype(&cuMemPoolCreate) mem_pool_create = nullptr;
    decltype(&cuMemPoolDestroy) mem_pool_destroy = nullptr;
    decltype(&cuMemPoolGetAttribute) mem_pool_get_attribute = nullptr;
    decltype(&cuMemPoolSetAttribute) mem_pool_set_attribute = nullptr;
    decltype(&cuMemPoolTrimTo) mem_pool_trim_to = nullptr;
    decltype(&cuStreamCreate) stream_create = nullptr;
    decltype(&cuStreamSynchronize) stream_synchronize = nullptr;
    decltype(&cuStreamDestroy_v2) stream_destroy = nullptr;
    std::vector<LaunchEntryPoints> launchers;
};

// The fake driver's test helpers.
struct FakeDriverHelpers {
    decltype(&fakecuda_counters) counters = nullptr;
    decltype(&fakecuda_make_function) make_function = nullptr;
    decltype(&fakecuda_make_kernel) make_kernel = nullptr;
    decltype(&fakecuda_last_launch_params) last_launch_params = nullptr;
    decltype(&fakecuda_set_stream_capturing) set_stream_capturing = nullptr;
    decltype(&fakecuda_hold_events) hold_events = nullptr;
};

// Names of the entry points (or helpers) that could not be resolved; empty when
// the table is complete.
std::vector<std::string> missing_entries(const DriverEntryPoints& driver);
std::vector<std::string> missing_entries(const FakeDriverHelpers& helpers);

}  // namespace uvmp_integration

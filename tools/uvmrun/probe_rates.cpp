#include "tools/uvmrun/probe_rates.h"

#include "core/config/options.h"
#include "core/rates/rate_cache.h"
#include "driver/rates/link_probe.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <string>

namespace uvmp::tools {
namespace {

int failed(const std::string& why) {
    std::cerr << "uvmrun: --probe-rates: " << why << "\n";
    return 1;
}

std::string call_failed(const char* call, CUresult result) {
    return std::string(call) + " failed (" + driver::error_name(result) + ")";
}

} // namespace

int probe_rates_command(int device_ordinal) {
    const driver::DriverTable* table = driver::driver_table();
    if (!table) return failed("the NVIDIA driver (libcuda.so.1) cannot be opened");
    if (!table->cuInit || !table->cuDeviceGet || !table->cuDevicePrimaryCtxRetain ||
        !table->cuDevicePrimaryCtxRelease_v2 || !table->cuCtxSetCurrent || !table->cuMemGetInfo_v2)
        return failed("the driver lacks an entry point the probe needs");
    if (CUresult r = table->cuInit(0); r != CUDA_SUCCESS) return failed(call_failed("cuInit", r));
    CUdevice device = 0;
    if (CUresult r = table->cuDeviceGet(&device, device_ordinal); r != CUDA_SUCCESS)
        return failed(call_failed("cuDeviceGet", r));
    CUcontext context = nullptr;
    if (CUresult r = table->cuDevicePrimaryCtxRetain(&context, device); r != CUDA_SUCCESS)
        return failed(call_failed("cuDevicePrimaryCtxRetain", r));
    int status = 1;
    if (CUresult r = table->cuCtxSetCurrent(context); r != CUDA_SUCCESS) {
        failed(call_failed("cuCtxSetCurrent", r));
    } else {
        // The guard a job would have on this device now.
        size_t free_bytes = 0, total_bytes = 0;
        if (CUresult r = table->cuMemGetInfo_v2(&free_bytes, &total_bytes); r != CUDA_SUCCESS) {
            failed(call_failed("cuMemGetInfo", r));
        } else {
            // The job's own reserve (UVMP_RESERVE, or its config file) bounds the probe's buffer,
            // as the library's guard would; a bad setting keeps the default reserve.
            Config config;
            if (load_config(config, &process_getenv)) config = Config{};
            DeviceBudget guard;
            guard.configure(config, free_bytes, total_bytes);
            driver::ProbeFailure failure;
            if (const auto rates = driver::probe_link_rates(*table, device, guard, &failure)) {
                std::cout << rates::to_json(*rates).dump(2) << "\n";
                std::string error;
                if (const auto path = rates::store_cached_rates(&process_getenv, *rates, &error))
                    std::cerr << "uvmrun: kept in " << *path << "\n";
                else
                    std::cerr << "uvmrun: not kept in the cache: " << error << "\n";
                status = 0;
            } else {
                failed(failure.why);
            }
        }
        table->cuCtxSetCurrent(nullptr);
    }
    table->cuDevicePrimaryCtxRelease_v2(device);
    return status;
}

} // namespace uvmp::tools

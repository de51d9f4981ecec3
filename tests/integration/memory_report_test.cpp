// What a job is told of its device's memory, by every entry point that tells it
// (cuMemGetInfo and cuDeviceTotalMem, each in its _v2 and its first, 32-bit
// version) and by every route a program takes to them: linked calls, dlsym on
// the driver's handle, and cuGetProcAddress. Linked against libcuda.so.1 (the
// fake), so that the preloaded library's exported hooks take the linked calls.
//
// Usage: memory_report_test BUDGET_BYTES   the library runs with that budget
//        memory_report_test native         no library, or a switched-off one
#include "check_list.h"
#include "fakecuda.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

// cuda.h maps the plain names onto the _v2; the first versions are asked for by name here.
#undef cuMemGetInfo
#undef cuDeviceTotalMem
extern "C" CUresult CUDAAPI cuMemGetInfo(unsigned int* free, unsigned int* total);
extern "C" CUresult CUDAAPI cuDeviceTotalMem(unsigned int* bytes, CUdevice device);

using namespace uvmp_integration;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

using MemGetInfo = CUresult (*)(size_t*, size_t*);
using MemGetInfoV1 = CUresult (*)(unsigned int*, unsigned int*);
using DeviceTotalMem = CUresult (*)(size_t*, CUdevice);
using DeviceTotalMemV1 = CUresult (*)(unsigned int*, CUdevice);

// The four queries as one route reaches them.
struct Queries {
    std::string route;
    MemGetInfo mem_get_info = nullptr;
    MemGetInfoV1 mem_get_info_v1 = nullptr;
    DeviceTotalMem device_total_mem = nullptr;
    DeviceTotalMemV1 device_total_mem_v1 = nullptr;
};

Queries linked() {
    return {"linked", [](size_t* f, size_t* t) { return cuMemGetInfo_v2(f, t); },
            [](unsigned int* f, unsigned int* t) { return cuMemGetInfo(f, t); },
            [](size_t* b, CUdevice d) { return cuDeviceTotalMem_v2(b, d); },
            [](unsigned int* b, CUdevice d) { return cuDeviceTotalMem(b, d); }};
}

Queries by_dlsym(void* driver) {
    Queries q{"dlsym"};
    q.mem_get_info = reinterpret_cast<MemGetInfo>(dlsym(driver, "cuMemGetInfo_v2"));
    q.mem_get_info_v1 = reinterpret_cast<MemGetInfoV1>(dlsym(driver, "cuMemGetInfo"));
    q.device_total_mem = reinterpret_cast<DeviceTotalMem>(dlsym(driver, "cuDeviceTotalMem_v2"));
    q.device_total_mem_v1 = reinterpret_cast<DeviceTotalMemV1>(dlsym(driver, "cuDeviceTotalMem"));
    return q;
}

// As the runtime asks: by base name, the version deciding which one comes back
// (the first versions for a caller older than CUDA 3.2).
Queries by_proc_address(void* driver, CheckList& checks) {
    Queries q{"procaddress"};
    auto get_proc = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(driver, "cuGetProcAddress_v2"));
    checks.expect(get_proc != nullptr, "dlsym(libcuda, \"cuGetProcAddress_v2\")");
    if (!get_proc) return q;
    auto look_up = [&](const char* name, int version) {
        void* pointer = nullptr;
        CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (get_proc(name, &pointer, version, 0, &status) != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS)
            pointer = nullptr;
        return pointer;
    };
    q.mem_get_info = reinterpret_cast<MemGetInfo>(look_up("cuMemGetInfo", 13000));
    q.mem_get_info_v1 = reinterpret_cast<MemGetInfoV1>(look_up("cuMemGetInfo", 3000));
    q.device_total_mem = reinterpret_cast<DeviceTotalMem>(look_up("cuDeviceTotalMem", 13000));
    q.device_total_mem_v1 = reinterpret_cast<DeviceTotalMemV1>(look_up("cuDeviceTotalMem", 3000));
    return q;
}

std::uint64_t narrow(std::uint64_t bytes) {
    return std::min<std::uint64_t>(bytes, std::numeric_limits<unsigned int>::max());
}

// Every query of every route reports `total` and `free` (the first versions cut to 32 bits).
void expect_report(const std::vector<Queries>& routes, std::uint64_t total, std::uint64_t free,
                   const std::string& when, CheckList& checks) {
    for (const Queries& q : routes) {
        const std::string where = q.route + ", " + when + ": ";
        if (!q.mem_get_info || !q.mem_get_info_v1 || !q.device_total_mem || !q.device_total_mem_v1) {
            checks.expect(false, where + "every query resolved");
            continue;
        }
        size_t f = 0, t = 0, device_total = 0;
        unsigned int f1 = 0, t1 = 0, device_total1 = 0;
        checks.expect(q.device_total_mem(&device_total, 0) == CUDA_SUCCESS, where + "cuDeviceTotalMem_v2 succeeds");
        checks.expect_eq(where + "cuDeviceTotalMem_v2", device_total, total);
        checks.expect(q.device_total_mem_v1(&device_total1, 0) == CUDA_SUCCESS, where + "cuDeviceTotalMem succeeds");
        checks.expect_eq(where + "cuDeviceTotalMem", device_total1, narrow(total));
        checks.expect(q.mem_get_info(&f, &t) == CUDA_SUCCESS, where + "cuMemGetInfo_v2 succeeds");
        checks.expect_eq(where + "cuMemGetInfo_v2 total", t, total);
        checks.expect_eq(where + "cuMemGetInfo_v2 free", f, free);
        checks.expect(q.mem_get_info_v1(&f1, &t1) == CUDA_SUCCESS, where + "cuMemGetInfo succeeds");
        checks.expect_eq(where + "cuMemGetInfo total", t1, narrow(total));
        checks.expect_eq(where + "cuMemGetInfo free", f1, narrow(free));
    }
}

CUmemAllocationProp physical_memory_on(CUmemLocationType where) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = where;
    prop.location.id = 0;
    return prop;
}

} // namespace

int main(int argc, char** argv) {
    const bool native = argc == 2 && std::string(argv[1]) == "native";
    const std::uint64_t budget = argc == 2 && !native ? std::strtoull(argv[1], nullptr, 10) : 0;
    if (!native && budget == 0) {
        std::fprintf(stderr, "usage: memory_report_test BUDGET_BYTES|native\n");
        return 2;
    }
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) {
        std::fprintf(stderr, "cannot dlopen libcuda.so.1: %s\n", dlerror());
        return 2;
    }
    CheckList checks;
    if (cuInit(0) != CUDA_SUCCESS) {
        checks.expect(false, "cuInit");
        return checks.exit_status();
    }
    const std::vector<Queries> routes = {linked(), by_dlsym(driver), by_proc_address(driver, checks)};
    // Without the library the fake's own figures: a 16 GiB device with nothing in use.
    const std::uint64_t total = native ? FAKECUDA_DEVICE_TOTAL_BYTES : budget;
    expect_report(routes, total, total, "at start", checks);

    CUdeviceptr block = 0;
    checks.expect(cuMemAlloc_v2(&block, 8 * kMiB) == CUDA_SUCCESS, "cuMemAlloc_v2 of 8 MiB");
    expect_report(routes, total, total - 8 * kMiB, "with 8 MiB allocated", checks);

    // The fake keeps no figures of physical memory made with cuMemCreate; under
    // the library it is the job's and not free.
    const CUmemAllocationProp on_device = physical_memory_on(CU_MEM_LOCATION_TYPE_DEVICE);
    const CUmemAllocationProp on_host = physical_memory_on(CU_MEM_LOCATION_TYPE_HOST);
    CUmemGenericAllocationHandle device_memory = 0, host_memory = 0;
    checks.expect(cuMemCreate(&device_memory, 4 * kMiB, &on_device, 0) == CUDA_SUCCESS, "cuMemCreate of 4 MiB on the device");
    checks.expect(cuMemCreate(&host_memory, 2 * kMiB, &on_host, 0) == CUDA_SUCCESS, "cuMemCreate of 2 MiB on the host");
    expect_report(routes, total, total - 8 * kMiB - (native ? 0 : 4 * kMiB), "with 4 MiB made by cuMemCreate", checks);
    checks.expect(cuMemRelease(device_memory) == CUDA_SUCCESS, "cuMemRelease of the device's");
    checks.expect(cuMemRelease(host_memory) == CUDA_SUCCESS, "cuMemRelease of the host's");
    expect_report(routes, total, total - 8 * kMiB, "after cuMemRelease", checks);

    checks.expect(cuMemFree_v2(block) == CUDA_SUCCESS, "cuMemFree_v2");
    expect_report(routes, total, total, "after the free", checks);

    // A stream-ordered free leaves its bytes cached in the pool, as a native pool
    // whose release threshold a framework raised keeps them (the fake's own figures
    // keep no pool): they are not free until the pool is trimmed.
    if (!native) {
        CUdeviceptr async_block = 0;
        checks.expect(cuMemAllocAsync(&async_block, 8 * kMiB, nullptr) == CUDA_SUCCESS, "cuMemAllocAsync of 8 MiB");
        expect_report(routes, total, total - 8 * kMiB, "with 8 MiB allocated stream-ordered", checks);
        checks.expect(cuMemFreeAsync(async_block, nullptr) == CUDA_SUCCESS, "cuMemFreeAsync");
        checks.expect(cuStreamSynchronize(nullptr) == CUDA_SUCCESS, "cuStreamSynchronize");
        expect_report(routes, total, total - 8 * kMiB, "after the stream-ordered free", checks);
        CUmemoryPool pool = nullptr;
        checks.expect(cuDeviceGetDefaultMemPool(&pool, 0) == CUDA_SUCCESS, "cuDeviceGetDefaultMemPool");
        checks.expect(cuMemPoolTrimTo(pool, 0) == CUDA_SUCCESS, "cuMemPoolTrimTo");
        expect_report(routes, total, total, "after the pool is trimmed", checks);
    }
    return checks.exit_status();
}

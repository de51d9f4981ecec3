#include "driver/pool/host_advice.h"

namespace uvmp::driver {
namespace {

CUresult advise(const DriverTable& table, CUdeviceptr base, uint64_t bytes, int device, bool set) {
    if (!table.cuMemAdvise_v2) return CUDA_ERROR_NOT_SUPPORTED;
    CUmemLocation host{};
    host.type = CU_MEM_LOCATION_TYPE_HOST;
    CUmemLocation gpu{};
    gpu.type = CU_MEM_LOCATION_TYPE_DEVICE;
    gpu.id = device;
    const CUresult preferred = table.cuMemAdvise_v2(
        base, bytes, set ? CU_MEM_ADVISE_SET_PREFERRED_LOCATION : CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, host);
    if (preferred != CUDA_SUCCESS && set) return preferred;
    const CUresult accessed =
        table.cuMemAdvise_v2(base, bytes, set ? CU_MEM_ADVISE_SET_ACCESSED_BY : CU_MEM_ADVISE_UNSET_ACCESSED_BY, gpu);
    return preferred != CUDA_SUCCESS ? preferred : accessed;
}

} // namespace

CUresult advise_host_home(const DriverTable& table, CUdeviceptr base, uint64_t bytes, int device) {
    return advise(table, base, bytes, device, true);
}

CUresult unadvise_host_home(const DriverTable& table, CUdeviceptr base, uint64_t bytes, int device) {
    return advise(table, base, bytes, device, false);
}

} // namespace uvmp::driver

// The first versions of the memory queries, which report in 32 bits: the fake's
// figures, cut to the most 32 bits hold. They answer from the fake's state, not
// through the second versions' exported names, which a preloaded library hooks.
#include "fake_state.h"

#include <algorithm>
#include <limits>

using namespace fakecuda;

namespace {

unsigned int narrow(std::size_t bytes) {
    return static_cast<unsigned int>(
        std::min<std::size_t>(bytes, std::numeric_limits<unsigned int>::max()));
}

}  // namespace

FAKECUDA_EXPORT CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const int device = current_device();
    const std::uint64_t total_bytes = device_total_bytes(device);
    const std::size_t used = live_device_bytes(device) + live_managed_bytes(device);
    *total = narrow(total_bytes);
    *free = narrow(used >= total_bytes ? 0 : total_bytes - used);
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice device) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = narrow(device_total_bytes(device));
    return CUDA_SUCCESS;
}

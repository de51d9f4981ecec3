// The device memory a job is told it has: under the library, the budget is the
// device's capacity, whichever entry point asks (cuMemGetInfo and
// cuDeviceTotalMem, in both their versions), and memory the job holds outside
// the managed pool (passed-through allocations, cuMemCreate) is not free, nor is
// what a native stream-ordered pool would keep cached for the job's frees.
#include "driver/intercept/interceptor.h"

#include <algorithm>
#include <limits>

namespace uvmp::driver {
namespace {

// The first versions report in 32 bits: a figure past them reads as the most they hold.
template <typename Size>
Size narrow(uint64_t bytes) {
    return static_cast<Size>(std::min<uint64_t>(bytes, std::numeric_limits<Size>::max()));
}

} // namespace

std::optional<Interceptor::MemoryView> Interceptor::budget_view(const DriverTable& table) {
    if (!active_) return std::nullopt;
    CUdevice device = 0;
    CUcontext context = nullptr;
    const DeviceBudget* budget = budget_for_current_device(table, device, context);
    if (!budget) return std::nullopt;
    MemoryView view;
    // What a stream-ordered pool keeps cached counts as used natively too.
    budget->report(passthrough_.live_on(device) + pools_.cached_bytes(device), view.free, view.total);
    return view;
}

std::optional<uint64_t> Interceptor::budget_total(CUdevice device, uint64_t device_total) const {
    if (!active_ || !config_.budget) return std::nullopt;
    // A device in use reports what its cuMemGetInfo does; before its first use
    // (cudaGetDeviceProperties comes before any context) the same budget, from the setting.
    if (device >= 0 && static_cast<size_t>(device) < budgets_.size()) {
        const DeviceBudget& budget = budgets_[static_cast<size_t>(device)];
        if (budget.configured()) return budget.budget();
    }
    return config_.budget->resolve(device_total);
}

template <typename Size>
CUresult Interceptor::report_mem_info(CUresult driver_result, Size* free_bytes, Size* total_bytes,
                                      const DriverTable& table) {
    if (driver_result != CUDA_SUCCESS || !free_bytes || !total_bytes) return driver_result;
    if (const auto view = budget_view(table)) {
        *free_bytes = narrow<Size>(view->free);
        *total_bytes = narrow<Size>(view->total);
    }
    return driver_result;
}

CUresult Interceptor::mem_get_info(size_t* free_bytes, size_t* total_bytes, const DriverTable& table) {
    return report_mem_info(table.cuMemGetInfo_v2(free_bytes, total_bytes), free_bytes, total_bytes, table);
}

CUresult Interceptor::mem_get_info_v1(unsigned int* free_bytes, unsigned int* total_bytes, const DriverTable& table) {
    return report_mem_info(table.cuMemGetInfo(free_bytes, total_bytes), free_bytes, total_bytes, table);
}

CUresult Interceptor::device_total_mem(size_t* bytes, CUdevice device, const DriverTable& table) {
    const CUresult r = table.cuDeviceTotalMem_v2(bytes, device);
    if (r != CUDA_SUCCESS || !bytes) return r;
    if (const auto total = budget_total(device, *bytes)) *bytes = *total;
    return r;
}

CUresult Interceptor::device_total_mem_v1(unsigned int* bytes, CUdevice device, const DriverTable& table) {
    const CUresult r = table.cuDeviceTotalMem(bytes, device);
    if (r != CUDA_SUCCESS || !bytes || !active_ || !config_.budget || !table.cuDeviceTotalMem_v2) return r;
    // A percentage budget is of the whole device, which only the second version tells.
    size_t device_total = 0;
    if (table.cuDeviceTotalMem_v2(&device_total, device) != CUDA_SUCCESS) return r;
    if (const auto total = budget_total(device, device_total)) *bytes = narrow<unsigned int>(*total);
    return r;
}

void Interceptor::note_vmm_created(CUmemGenericAllocationHandle handle, uint64_t bytes,
                                   const CUmemAllocationProp& prop) {
    // Host-located physical memory (CU_MEM_LOCATION_TYPE_HOST...) takes nothing of the device's.
    const int device = prop.location.id;
    if (!active_ || prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE || !PassthroughLedger::tracks(device)) {
        stats_.passed_through(stats_.passthrough_vmm, bytes);
        return;
    }
    stats_.passed_through(stats_.passthrough_vmm, bytes, device);
    passthrough_.note_vmm(handle, bytes, device);
}


} // namespace uvmp::driver

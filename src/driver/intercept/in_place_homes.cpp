// Host homes for allocations made before the learned step (weights, optimizer
// state, caches): their blocks stay in their GPU slabs, where the application
// holds their addresses, and their ranges are advised to live on the host and
// be reached by the device, then moved there once. A remote trial that gives
// one back its GPU home takes the advice back and hands it to the planner
// again. The bytes leave (or rejoin) the budget's live count as they leave (or
// rejoin) the residency model.
#include "driver/intercept/interceptor.h"

#include "core/util/log.h"
#include "core/util/size_parse.h"
#include "driver/pool/host_advice.h"
#include "driver/table/current_context.h"

namespace uvmp::driver {

void Interceptor::home_in_place(int device, std::span<const HomeLearner::EarlierHome> allocations,
                                placement::Home home) {
    const bool on_host = home == placement::Home::Host;
    // On the worker, after every move queued so far: the planner's model and
    // the registry change together, and a free of one of these (whose record
    // the worker takes after this) finds the allocation as it left it.
    executor_.post([this, device, moving = std::vector(allocations.begin(), allocations.end()),
                    on_host](Executor& executor) {
        const DriverTable* table = driver_table_if_ready();
        pool::PoolBook* book = pools_.existing_book(device, placement::Home::Gpu);
        if (!table || !book) return;
        DeviceBudget& budget = budgets_[static_cast<size_t>(device) % budgets_.size()];
        uint64_t moved = 0, moved_bytes = 0;
        for (const HomeLearner::EarlierHome& e : moving) {
            const std::optional<pool::Block> block = book->find(e.address);
            if (!block || block->address != e.address) continue;
            const std::optional<Allocation> allocation = registry_.home_in_place(e.address, e.id, on_host);
            if (!allocation) continue; // freed since it was recorded, or a host slab's block
            ScopedContext in(*table, static_cast<CUcontext>(allocation->context));
            CUmemLocation location{};
            if (on_host) {
                if (const CUresult r = advise_host_home(*table, e.address, allocation->size, device);
                    r != CUDA_SUCCESS) {
                    // Unadvised, the driver would migrate its pages like any other's: it stays a GPU home.
                    unadvise_host_home(*table, e.address, allocation->size, device);
                    registry_.home_in_place(e.address, e.id, false);
                    UVMP_WARN_ONCE("device {}: advising an allocation made before the learned step to live on the "
                                   "host failed ({}); such allocations stay on the GPU",
                                   device, error_name(r));
                    continue;
                }
                // Freed while it was advised: the block it was is a GPU home again.
                if (const auto now = registry_.find_base(e.address); !now || now->id != e.id) {
                    unadvise_host_home(*table, e.address, allocation->size, device);
                    continue;
                }
                if (planner_) planner_->allocation_homed_on_host(e.id, allocation->size);
                budget.remove_live(block->size);
                stats_.host_block_allocated(allocation->size);
                location.type = CU_MEM_LOCATION_TYPE_HOST;
            } else {
                unadvise_host_home(*table, e.address, allocation->size, device);
                stats_.host_block_freed(allocation->size);
                budget.add_live(block->size);
                if (planner_) {
                    planner_->host_allocation_removed(e.id);
                    planner_->allocation_added({e.id, e.address, allocation->size, device,
                                                static_cast<CUcontext>(allocation->context)},
                                               budget.budget(), false);
                }
                location.type = CU_MEM_LOCATION_TYPE_DEVICE;
                location.id = device;
            }
            // Paid once, on the worker's stream: kernels that reach the range meanwhile find it wherever it is.
            if (CUstream stream = executor.stream_for(*table, static_cast<CUcontext>(allocation->context));
                stream && table->cuMemPrefetchAsync_v2) {
                if (const CUresult r = table->cuMemPrefetchAsync_v2(e.address, allocation->size, location, 0, stream);
                    r != CUDA_SUCCESS)
                    log::debug("device {}: moving allocation {} to its {} home failed ({}); the driver moves it "
                               "when it is touched",
                               device, e.id, on_host ? "host" : "GPU", error_name(r));
                else stats_.moved(device, on_host ? MoveCount::Evict : MoveCount::Prefetch, allocation->size);
            }
            ++moved;
            moved_bytes += allocation->size;
        }
        stats_.host_homes.homed_in_place(moved, moved_bytes, on_host);
        log::info("device {}: {} allocations made before the learned step ({}) homed on the {} where they lie", device,
                  moved, format_size(moved_bytes), on_host ? "host" : "GPU");
    });
}

} // namespace uvmp::driver

#include "driver/rates/move_timer.h"

#include "core/util/log.h"
#include "driver/table/event_timing.h"

#include <algorithm>

namespace uvmp::driver {

std::optional<MoveTimer::Started> MoveTimer::begin(const DriverTable& table, CUstream stream, uint64_t bytes) {
    if (cannot_time_ || bytes < min_bytes_ || pending_.size() >= kMaxPending) return std::nullopt;
    if (!table.cuEventCreate || !table.cuEventRecord || !table.cuEventQuery || !event_elapsed_time(table))
        return std::nullopt;
    Started events;
    if (table.cuEventCreate(&events.start, 0) != CUDA_SUCCESS) return std::nullopt;
    if (table.cuEventCreate(&events.end, 0) != CUDA_SUCCESS ||
        table.cuEventRecord(events.start, stream) != CUDA_SUCCESS) {
        destroy(table, events);
        return std::nullopt;
    }
    return events;
}

void MoveTimer::finish(const DriverTable& table, CUstream stream, const Started& started, bool queued, int device,
                       rates::Move move, uint64_t bytes) {
    if (!queued || table.cuEventRecord(started.end, stream) != CUDA_SUCCESS) {
        destroy(table, started);
        return;
    }
    pending_.push_back({started, device, move, bytes});
}

void MoveTimer::poll(const DriverTable& table) {
    if (pending_.empty()) return;
    const EventElapsedTime elapsed = event_elapsed_time(table);
    // Pairs complete in the order they were queued on one stream (and a job of one
    // device has one): the first one not done ends the scan.
    size_t done = 0;
    for (; done < pending_.size(); ++done) {
        const Pending& p = pending_[done];
        const CUresult state = table.cuEventQuery(p.events.end);
        if (state == CUDA_ERROR_NOT_READY) break;
        float ms = 0;
        if (state == CUDA_SUCCESS && elapsed) {
            const CUresult r = elapsed(&ms, p.events.start, p.events.end);
            if (r == CUDA_SUCCESS) sink_(p.device, p.move, p.bytes, static_cast<double>(ms) / 1e3);
            else if (r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_INVALID_HANDLE) {
                // Events of a context that cannot time: the probe's figures stand.
                cannot_time_ = true;
                log::info("the link rates are not refined from the run's moves: the driver cannot time them ({})",
                          error_name(r));
            }
        }
        destroy(table, p.events);
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(done));
}

void MoveTimer::destroy(const DriverTable& table, const Started& events) {
    if (!table.cuEventDestroy_v2) return;
    for (CUevent e : {events.start, events.end})
        if (e) table.cuEventDestroy_v2(e);
}

} // namespace uvmp::driver

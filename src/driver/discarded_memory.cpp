#include "driver/discarded_memory.h"

#include "core/util/log.h"

#include <algorithm>
#include <iterator>
#include <vector>

namespace uvmp::driver {

CUstream DiscardedMemory::stream_for(const DriverTable& table, CUcontext context) {
    auto it = streams_.find(context);
    if (it != streams_.end()) return it->second;
    CUstream stream = nullptr;
    if (table.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) stream = nullptr;
    streams_[context] = stream;
    return stream;
}

AddressSpan DiscardedMemory::discard(const DriverTable& table, CUdeviceptr base, uint64_t size, CUstream stream,
                                     CUcontext context, bool wait) {
    const AddressSpan span = discard_span(base, size, chunk_bytes_);
    if (!span.bytes() || !table.cuMemDiscardBatchAsync) return {};
    std::lock_guard lock(mutex_);
    CUstream own = stream_for(table, context);
    if (!own) return {};
    // The free's stream -> ours -> the discard -> back to the free's stream.
    CUevent before = nullptr, after = nullptr;
    bool queued = false;
    if (table.cuEventCreate(&before, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS &&
        table.cuEventCreate(&after, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS &&
        table.cuEventRecord(before, stream) == CUDA_SUCCESS && table.cuStreamWaitEvent(own, before, 0) == CUDA_SUCCESS) {
        CUdeviceptr pointers[1] = {span.begin};
        size_t sizes[1] = {span.bytes()};
        const CUresult r = table.cuMemDiscardBatchAsync(pointers, sizes, 1, 0, own);
        if (r != CUDA_SUCCESS) {
            UVMP_WARN_ONCE("discarding a freed block failed ({}); freed blocks keep their pages", error_name(r));
        } else if (!wait && table.cuEventRecord(after, own) == CUDA_SUCCESS &&
                   table.cuStreamWaitEvent(stream, after, 0) == CUDA_SUCCESS) {
            queued = true;
        } else {
            // Asked to, or the free's stream cannot be ordered after the discard:
            // wait for it here, or a block placed there could be written before it runs.
            queued = table.cuStreamSynchronize(own) == CUDA_SUCCESS;
        }
    }
    // A wait holds what the event was when queued: the events can go now.
    if (before) table.cuEventDestroy_v2(before);
    if (after) table.cuEventDestroy_v2(after);
    if (!queued) return {};
    // Joined with what it touches.
    uint64_t begin = span.begin, end = span.end;
    auto next = ranges_.upper_bound(begin);
    if (next != ranges_.begin() && std::prev(next)->second >= begin) {
        --next;
        begin = next->first;
        end = std::max(end, next->second);
        next = ranges_.erase(next);
    }
    while (next != ranges_.end() && next->first <= end) {
        end = std::max(end, next->second);
        next = ranges_.erase(next);
    }
    ranges_.emplace_hint(next, begin, end);
    return span;
}

void DiscardedMemory::remove_locked(uint64_t begin, uint64_t end) {
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin() && std::prev(it)->second > begin) --it;
    while (it != ranges_.end() && it->first < end) {
        const auto [first, last] = *it;
        it = ranges_.erase(it);
        if (first < begin) ranges_.emplace_hint(it, first, begin);
        if (last > end) {
            ranges_.emplace_hint(it, end, last);
            break;
        }
    }
}

uint64_t DiscardedMemory::refill(const DriverTable& table, CUdeviceptr base, uint64_t size, CUdevice device,
                                 CUstream stream, bool stream_ordered) {
    const uint64_t end = base + size;
    std::vector<std::pair<uint64_t, uint64_t>> parts;
    {
        std::lock_guard lock(mutex_);
        if (ranges_.empty()) return 0;
        auto it = ranges_.upper_bound(base);
        if (it != ranges_.begin() && std::prev(it)->second > base) --it;
        for (; it != ranges_.end() && it->first < end; ++it)
            parts.emplace_back(std::max<uint64_t>(it->first, base), std::min<uint64_t>(it->second, end));
        if (parts.empty()) return 0;
        remove_locked(base, end);
    }
    CUmemLocation location{};
    location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    location.id = device;
    uint64_t refilled = 0;
    bool failed = false;
    for (const auto& [from, to] : parts) {
        if (table.cuMemPrefetchAsync_v2(from, to - from, location, 0, stream) == CUDA_SUCCESS) refilled += to - from;
        else failed = true;
    }
    if (!stream_ordered && table.cuStreamSynchronize(stream) != CUDA_SUCCESS) failed = true;
    if (failed) {
        // A kernel writing what is still discarded crawls: keep it known, so that
        // the next block placed there tries again; this one may be slow.
        // Correct all the same: a kernel writing what is still discarded only crawls.
        UVMP_WARN_ONCE("refilling discarded memory for a new block failed; kernels may fault it in slowly");
    }
    return refilled;
}

void DiscardedMemory::forget(uint64_t base, uint64_t bytes) {
    std::lock_guard lock(mutex_);
    remove_locked(base, base + bytes);
}

bool DiscardedMemory::empty() const {
    std::lock_guard lock(mutex_);
    return ranges_.empty();
}

} // namespace uvmp::driver

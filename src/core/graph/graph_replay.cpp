#include "core/graph/graph_replay.h"

#include "core/registry/access_inference.h"

#include <algorithm>
#include <new>

namespace uvmp {

void append_step_accesses(const GraphStep& step, const Registry& registry, std::vector<trace::Access>& out) {
    if (step.kind == GraphStep::Kind::Kernel) {
        thread_local std::vector<AccessHit> hits;
        hits.clear();
        scan_param_buffer(step.words.data(), step.words.size() * sizeof(uint64_t), registry, hits);
        for (const AccessHit& hit : hits) out.push_back({hit.alloc_id, hit.offset, 0});
        return;
    }
    for (const DeviceRange& range : step.ranges) {
        if (range.bytes == 0 || !registry.may_contain(range.address)) continue;
        const auto hit = registry.find(range.address);
        if (!hit) continue;
        // Freed since the first look-up: the length stands as the node gave it.
        const auto allocation = registry.find_base(range.address - hit->offset);
        const uint64_t to_end = allocation ? allocation->size - hit->offset : range.bytes;
        out.push_back({hit->alloc_id, hit->offset, std::min(range.bytes, to_end)});
    }
}

DeviceRange copy_range(uint64_t base, uint64_t x, uint64_t y, uint64_t z, uint64_t pitch, uint64_t rows_per_plane,
                       uint64_t width, uint64_t height, uint64_t depth) {
    if (width == 0 || height == 0 || depth == 0) return {base, 0};
    const uint64_t start = base + x + (y + z * rows_per_plane) * pitch;
    return {start, width + (height - 1) * pitch + (depth - 1) * rows_per_plane * pitch};
}

DeviceRange set_range(uint64_t base, uint64_t pitch, uint64_t element_bytes, uint64_t width, uint64_t height) {
    if (width == 0 || height == 0) return {base, 0};
    return {base, (height - 1) * pitch + width * element_bytes};
}

void GraphTable::learn(const void* exec, std::optional<GraphReplay> replay) {
    auto shared = replay ? std::make_shared<const GraphReplay>(std::move(*replay)) : nullptr;
    std::lock_guard lock(mutex_);
    Entry& entry = by_exec_[exec];
    if (entry.id == 0) entry.id = next_id_++;
    entry.replay = std::move(shared);
}

void GraphTable::forget(const void* exec) {
    std::lock_guard lock(mutex_);
    by_exec_.erase(exec);
}

GraphTable::Entry GraphTable::find(const void* exec) const {
    std::lock_guard lock(mutex_);
    const auto it = by_exec_.find(exec);
    return it == by_exec_.end() ? Entry{} : it->second;
}

bool GraphTable::replace_node(const void* exec, const void* node, std::vector<GraphStep> steps) {
    std::lock_guard lock(mutex_);
    const auto it = by_exec_.find(exec);
    if (it == by_exec_.end() || !it->second.replay) return false;
    const std::vector<GraphStep>& old_steps = it->second.replay->steps;
    const auto from_node = [node](const GraphStep& step) { return step.node == node; };
    const auto first = std::find_if(old_steps.begin(), old_steps.end(), from_node);
    if (first == old_steps.end()) return false;
    // Launches running the old replay hold their own reference: it is copied, not changed.
    auto replaced = std::make_shared<GraphReplay>();
    replaced->nodes_skipped = it->second.replay->nodes_skipped;
    replaced->steps.assign(old_steps.begin(), first);
    for (GraphStep& step : steps) replaced->steps.push_back(std::move(step));
    std::copy_if(first, old_steps.end(), std::back_inserter(replaced->steps),
                 [node](const GraphStep& step) { return step.node != node; });
    it->second.replay = std::move(replaced);
    return true;
}

void GraphTable::mark_unknown(const void* exec) {
    std::lock_guard lock(mutex_);
    if (const auto it = by_exec_.find(exec); it != by_exec_.end()) it->second.replay = nullptr;
}

size_t GraphTable::size() const {
    std::lock_guard lock(mutex_);
    return by_exec_.size();
}

void GraphTable::clear() {
    std::lock_guard lock(mutex_);
    by_exec_.clear();
    next_id_ = 1;
}

void GraphTable::unlock_after_fork(bool in_child) {
    if (in_child) new (&mutex_) std::mutex;
    else mutex_.unlock();
}

} // namespace uvmp

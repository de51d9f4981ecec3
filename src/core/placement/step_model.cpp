#include "core/placement/step_model.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace uvmp::placement {

StepModel step_model(const trace::Trace& trace, uint64_t begin, uint64_t end, const ToleranceSource* tolerance) {
    if (begin > end || end > trace.launches.size())
        throw std::invalid_argument("step_model: the step lies outside the trace's launches");
    StepModel model;
    model.launches = static_cast<uint32_t>(end - begin);
    if (model.launches == 0) return model;
    const uint32_t last_launch = model.launches - 1;

    // When each allocation goes away, if it does.
    std::unordered_map<uint32_t, uint64_t> freed_before;
    for (const trace::Free& f : trace.frees) freed_before.emplace(f.id, f.launches_before);

    std::unordered_map<uint32_t, size_t> index_of;
    for (const trace::Alloc& a : trace.allocs) {
        if (!trace::is_managed(a.kind) || a.launches_before >= end) continue;
        const auto freed = freed_before.find(a.id);
        if (freed != freed_before.end() && freed->second <= begin) continue;
        StepAllocation s;
        s.bytes = a.size;
        s.first_launch = static_cast<uint32_t>(a.launches_before > begin ? a.launches_before - begin : 0);
        // Freed before launch f: the last launch it may serve is f - 1.
        s.last_launch = freed != freed_before.end() && freed->second < end
                            ? static_cast<uint32_t>(freed->second - 1 - begin)
                            : last_launch;
        s.first_launch = std::min(s.first_launch, s.last_launch);
        s.remote_tolerant = tolerance != nullptr;
        index_of.emplace(a.id, model.allocations.size());
        model.allocations.push_back(s);
        model.alloc_ids.push_back(a.id);
        model.kept_by.push_back(StepModel::kNoKernel);
    }
    for (uint64_t i = begin; i < end; ++i) {
        const trace::Launch& launch = trace.launches[i];
        model.compute_seconds += static_cast<double>(launch.duration_ns) * 1e-9;
        if (!trace.has_accesses_of(launch)) continue;
        const auto accesses = trace.accesses_of(launch);
        for (uint32_t slot = 0; slot < accesses.size(); ++slot) {
            const auto it = index_of.find(accesses[slot].alloc_id);
            if (it == index_of.end()) continue;
            StepAllocation& s = model.allocations[it->second];
            ++s.uses;
            if (tolerance && tolerance->verdict(launch.kernel_id, slot) != Tolerance::Tolerant) {
                if (s.remote_tolerant) model.kept_by[it->second] = launch.kernel_id;
                s.remote_tolerant = false;
            }
        }
    }
    for (StepAllocation& s : model.allocations)
        if (s.uses == 0) s.remote_tolerant = false;
    return model;
}

} // namespace uvmp::placement

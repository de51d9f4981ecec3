#include "core/learn/loop_seed.h"

#include "core/trace/analysis/iteration_bounds.h"

namespace uvmp {

std::optional<LoopSeed> loop_seed_from_trace(const trace::Trace& trace, std::string* why_not) {
    auto fail = [&](const char* reason) -> std::optional<LoopSeed> {
        if (why_not) *why_not = reason;
        return std::nullopt;
    };
    const auto iteration = last_full_iteration(iteration_bounds(trace));
    if (!iteration) return fail("no repeating iteration found in it");
    const auto [begin, end] = *iteration;
    std::unordered_map<uint32_t, uint64_t> sizes;
    for (const trace::Alloc& a : trace.allocs)
        if (trace::is_managed(a.kind)) sizes[a.id] = a.size;

    LoopSeed seed;
    for (uint64_t i = begin; i < end; ++i) {
        const trace::Launch& launch = trace.launches[i];
        if (!trace.has_accesses_of(launch)) return fail("a launch names accesses beyond the access table");
        LoopSeed::Launch out;
        out.kernel_id = launch.kernel_id;
        out.first_access = static_cast<uint32_t>(seed.accesses.size());
        out.access_count = launch.access_count;
        for (trace::Access access : trace.accesses_of(launch)) {
            access.length = 0; // extents are the policy's business, as online
            const auto size = sizes.find(access.alloc_id);
            if (size == sizes.end()) return fail("a launch names an allocation the trace does not hold");
            seed.allocation_sizes[access.alloc_id] = size->second;
            seed.accesses.push_back(access);
        }
        seed.launches.push_back(out);
    }
    if (seed.launches.empty()) return fail("its iteration has no launches");
    return seed;
}

} // namespace uvmp

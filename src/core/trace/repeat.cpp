#include "core/trace/repeat.h"

#include "core/sim/simulator.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace uvmp {

std::vector<uint64_t> repeat_last_iteration(trace::Trace& trace, std::span<const uint64_t> bounds, uint32_t times) {
    if (times == 0) return {bounds.begin(), bounds.end()};
    const auto iteration = last_full_iteration(bounds);
    if (!iteration) throw std::invalid_argument("the trace holds no full iteration to repeat");
    const auto [begin, end] = *iteration;
    for (const trace::Alloc& a : trace.allocs)
        if (a.launches_before > begin && a.launches_before < end)
            throw std::invalid_argument("its last iteration allocates memory (before launch " +
                                        std::to_string(a.launches_before) + "): it cannot be repeated");
    for (const trace::Free& f : trace.frees)
        if (f.launches_before > begin && f.launches_before <= end)
            throw std::invalid_argument("its last iteration frees memory (before launch " +
                                        std::to_string(f.launches_before) + "): it cannot be repeated");
    for (const trace::Slab& s : trace.slabs)
        if (s.launches_before > begin && s.launches_before <= end)
            throw std::invalid_argument("its last iteration changes the pool's slabs (before launch " +
                                        std::to_string(s.launches_before) + "): it cannot be repeated");

    // Launches after the last full iteration did not repeat in full: drop them.
    trace.launches.resize(end);
    // A mark at `end` starts the next, partial iteration: the first copy puts it back.
    std::erase_if(trace.iterations, [&](const trace::Iteration& m) { return m.launches_before >= end; });
    const uint64_t period = end - begin;
    const uint64_t span_ns = trace.launches[end - 1].time_ns - trace.launches[begin].time_ns +
                             trace.launches[end - 1].duration_ns;
    trace.launches.reserve(end + period * times);
    uint64_t next_mark = trace.iterations.empty() ? 0 : trace.iterations.back().index + 1;
    std::vector<uint64_t> lengthened(bounds.begin(), bounds.end()); // the repeated iteration ends the last
    lengthened.reserve(bounds.size() + times);
    for (uint32_t copy = 1; copy <= times; ++copy) {
        const uint64_t first = trace.launches.size();
        const uint64_t shift_ns = span_ns * copy;
        for (uint64_t i = begin; i < end; ++i) {
            trace::Launch launch = trace.launches[i];
            launch.seq = trace.launches.back().seq + 1; // launches dropped by the recorder keep their gap
            launch.time_ns += shift_ns;
            trace.launches.push_back(launch); // its accesses are the original's
        }
        if (!trace.iterations.empty())
            trace.iterations.push_back({next_mark++, first, trace.launches[first].time_ns});
        lengthened.push_back(trace.launches.size());
    }
    // What came after the last full iteration (teardown) now comes after the copies.
    for (trace::Alloc& a : trace.allocs)
        if (a.launches_before > end) a.launches_before = trace.launches.size();
    for (trace::Free& f : trace.frees)
        if (f.launches_before > end) f.launches_before = trace.launches.size();
    for (trace::Slab& s : trace.slabs)
        if (s.launches_before > end) s.launches_before = trace.launches.size();
    return lengthened;
}

} // namespace uvmp

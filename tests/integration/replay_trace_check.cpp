// replay_trace_check INPUT REPLAYED [--copies N]: whether the library saw, during
// `uvmtrace replay INPUT`, what it saw when INPUT was recorded. REPLAYED is the
// trace the library recorded of the replay. Allocations are compared by their
// place among the managed allocations (addresses and ids differ from run to
// run), launches one by one: the kernel (numbered in order of first launch), and
// each access as an allocation and an offset into it, in order. Only what the
// library can see is expected: accesses to managed memory that is live.
// With --copies N the replay ran N copies of INPUT's last whole step after it:
// those launches must repeat the step's kernels and offsets.
// Prints "access sets equal: ..." and exits 0, or names the first difference and exits 1.
#include "core/sim/simulator.h"
#include "core/trace/format/reader.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace uvmp::trace;

struct SeenAccess {
    int64_t allocation; // place among the managed allocations, by time
    uint64_t offset;
    bool operator==(const SeenAccess&) const = default;
};

struct SeenLaunch {
    uint32_t kernel; // in order of first launch
    std::vector<SeenAccess> accesses;
};

// The launches as the library sees them.
std::vector<SeenLaunch> seen_launches(const Trace& trace) {
    std::vector<size_t> order;
    for (size_t i = 0; i < trace.allocs.size(); ++i)
        if (is_managed(trace.allocs[i].kind)) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const Alloc &x = trace.allocs[a], &y = trace.allocs[b];
        return x.launches_before != y.launches_before ? x.launches_before < y.launches_before : x.time_ns < y.time_ns;
    });
    struct Life {
        int64_t place;
        uint64_t size, made, freed;
    };
    std::map<uint32_t, Life> life;
    for (size_t p = 0; p < order.size(); ++p) {
        const Alloc& a = trace.allocs[order[p]];
        life[a.id] = {static_cast<int64_t>(p), a.size, a.launches_before, UINT64_MAX};
    }
    for (const Free& f : trace.frees)
        if (auto it = life.find(f.id); it != life.end()) it->second.freed = f.launches_before;
    std::map<uint32_t, uint32_t> kernel_number;
    std::vector<SeenLaunch> launches;
    for (size_t i = 0; i < trace.launches.size(); ++i) {
        const Launch& l = trace.launches[i];
        SeenLaunch seen{kernel_number.try_emplace(l.kernel_id, static_cast<uint32_t>(kernel_number.size())).first->second,
                        {}};
        for (const Access& a : trace.accesses_of(l)) {
            auto it = life.find(a.alloc_id);
            if (it == life.end() || i < it->second.made || i >= it->second.freed || a.offset >= it->second.size) continue;
            seen.accesses.push_back({it->second.place, a.offset});
        }
        launches.push_back(std::move(seen));
    }
    return launches;
}

int differ(const std::string& what) {
    std::printf("access sets differ: %s\n", what.c_str());
    return 1;
}

std::string describe(const SeenLaunch& l) {
    std::string out = "kernel " + std::to_string(l.kernel) + " [";
    for (const SeenAccess& a : l.accesses)
        out += " " + std::to_string(a.allocation) + "+" + std::to_string(a.offset);
    return out + " ]";
}

// Launch i of the replay against launch j of the input; with `same_allocations`
// off (a copy's), the offsets only.
bool same(const SeenLaunch& replayed, const SeenLaunch& recorded, bool same_allocations) {
    if (replayed.kernel != recorded.kernel || replayed.accesses.size() != recorded.accesses.size()) return false;
    for (size_t a = 0; a < replayed.accesses.size(); ++a) {
        if (replayed.accesses[a].offset != recorded.accesses[a].offset) return false;
        if (same_allocations && replayed.accesses[a].allocation != recorded.accesses[a].allocation) return false;
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 3 && !(argc == 5 && std::strcmp(argv[3], "--copies") == 0)) {
        std::fprintf(stderr, "usage: replay_trace_check INPUT REPLAYED [--copies N]\n");
        return 2;
    }
    const uint64_t copies = argc == 5 ? std::strtoull(argv[4], nullptr, 10) : 0;
    const Trace input = read_trace_file(argv[1]);
    const Trace replayed = read_trace_file(argv[2]);
    const std::vector<SeenLaunch> expected = seen_launches(input);
    const std::vector<SeenLaunch> seen = seen_launches(replayed);
    if (replayed.dropped_records) return differ(std::to_string(replayed.dropped_records) + " records dropped");

    uint64_t step_begin = 0, step_end = expected.size();
    if (copies) {
        const std::vector<uint64_t> bounds = uvmp::iteration_bounds(input);
        if (bounds.size() < 2) return differ("the input has no whole step to copy");
        step_begin = bounds[bounds.size() - 2];
        step_end = bounds.back();
    }
    const uint64_t period = step_end - step_begin;
    if (seen.size() != expected.size() + copies * period)
        return differ(std::to_string(seen.size()) + " launches replayed, " +
                      std::to_string(expected.size() + copies * period) + " expected");
    uint64_t accesses = 0;
    for (size_t i = 0; i < seen.size(); ++i) {
        const bool in_copy = i >= step_end && i < step_end + copies * period;
        const size_t j = in_copy ? step_begin + (i - step_end) % period : i < step_end ? i : i - copies * period;
        // After the copies, the step's allocations are the last copy's: offsets only there too.
        if (!same(seen[i], expected[j], !in_copy && i < step_end))
            return differ("launch " + std::to_string(i) + " replayed " + describe(seen[i]) + ", recorded launch " +
                          std::to_string(j) + " " + describe(expected[j]));
        accesses += seen[i].accesses.size();
    }
    std::printf("access sets equal: %zu launches, %llu accesses%s\n", seen.size(),
                static_cast<unsigned long long>(accesses),
                copies ? (", " + std::to_string(copies) + " copies of the last step").c_str() : "");
    return 0;
}

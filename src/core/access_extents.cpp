#include "core/access_extents.h"

#include <algorithm>
#include <unordered_map>

namespace uvmp {
namespace {

// A pointer seen in the window: where it points and the span of launches using it.
struct Pointer {
    uint32_t alloc_id;
    uint64_t offset;
    uint64_t first;
    uint64_t last;
    uint64_t known_end; // end of the longest known-length access from it, or 0
};

// Pointers beyond this many higher offsets are not compared: an allocation
// with thousands of live buffers keeps a too-long extent rather than a
// quadratic scan.
constexpr size_t kMaxCompared = 4096;

} // namespace

uint64_t infer_access_extents(std::span<const AccessUse> uses, const AllocationSize& size_of) {
    std::vector<Pointer> pointers;
    pointers.reserve(uses.size());
    for (const AccessUse& use : uses) {
        const trace::Access& a = *use.access;
        const uint64_t known_end = a.length ? a.offset + a.length : 0;
        pointers.push_back({a.alloc_id, a.offset, use.position, use.position, known_end});
    }
    std::sort(pointers.begin(), pointers.end(), [](const Pointer& x, const Pointer& y) {
        return x.alloc_id != y.alloc_id ? x.alloc_id < y.alloc_id : x.offset < y.offset;
    });
    // One entry per distinct pointer, spanning all its uses.
    size_t distinct = 0;
    for (size_t i = 0; i < pointers.size(); ++i) {
        if (distinct > 0 && pointers[distinct - 1].alloc_id == pointers[i].alloc_id &&
            pointers[distinct - 1].offset == pointers[i].offset) {
            Pointer& p = pointers[distinct - 1];
            p.first = std::min(p.first, pointers[i].first);
            p.last = std::max(p.last, pointers[i].last);
            p.known_end = std::max(p.known_end, pointers[i].known_end);
        } else {
            pointers[distinct++] = pointers[i];
        }
    }
    pointers.resize(distinct);

    struct PairHash {
        size_t operator()(const std::pair<uint32_t, uint64_t>& k) const {
            return std::hash<uint64_t>()(k.second * 0x9e3779b97f4a7c15ull ^ k.first);
        }
    };
    std::unordered_map<std::pair<uint32_t, uint64_t>, uint64_t, PairHash> end_of;
    end_of.reserve(pointers.size());
    for (size_t k = 0; k < pointers.size(); ++k) {
        const Pointer& p = pointers[k];
        const uint64_t size = size_of(p.alloc_id);
        if (size == 0 || p.offset >= size) continue;
        uint64_t end = size;
        const size_t limit = std::min(pointers.size(), k + 1 + kMaxCompared);
        for (size_t j = k + 1; j < limit && pointers[j].alloc_id == p.alloc_id; ++j) {
            const Pointer& q = pointers[j];
            if (q.offset >= size) break;
            if (q.first <= p.last && p.first <= q.last) {
                end = q.offset;
                break;
            }
        }
        // A known-length access from the same pointer reaches at least that far.
        end = std::max(end, std::min(size, p.known_end));
        end_of.emplace(std::make_pair(p.alloc_id, p.offset), end);
    }

    uint64_t given = 0;
    for (const AccessUse& use : uses) {
        trace::Access& a = *use.access;
        if (a.length != 0) continue;
        const auto it = end_of.find({a.alloc_id, a.offset});
        if (it == end_of.end()) continue;
        a.length = it->second - a.offset;
        ++given;
    }
    return given;
}

uint64_t infer_access_extents(trace::Trace& trace, std::span<const uint64_t> bounds) {
    std::unordered_map<uint32_t, uint64_t> sizes;
    for (const trace::Alloc& alloc : trace.allocs) sizes[alloc.id] = alloc.size;
    const AllocationSize size_of = [&](uint32_t id) {
        const auto it = sizes.find(id);
        return it == sizes.end() ? uint64_t{0} : it->second;
    };

    const uint64_t launches = trace.launches.size();
    std::vector<uint64_t> cuts{0};
    for (uint64_t b : bounds)
        if (b > cuts.back() && b < launches) cuts.push_back(b);
    cuts.push_back(launches);

    uint64_t given = 0;
    std::vector<AccessUse> uses;
    for (size_t w = 0; w + 1 < cuts.size(); ++w) {
        uses.clear();
        for (uint64_t i = cuts[w]; i < cuts[w + 1]; ++i) {
            const trace::Launch& launch = trace.launches[i];
            if (static_cast<uint64_t>(launch.first_access) + launch.access_count > trace.accesses.size()) continue;
            for (uint32_t k = 0; k < launch.access_count; ++k)
                uses.push_back({i, &trace.accesses[launch.first_access + k]});
        }
        given += infer_access_extents(uses, size_of);
    }
    return given;
}

} // namespace uvmp

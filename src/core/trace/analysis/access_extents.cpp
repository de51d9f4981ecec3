#include "core/trace/analysis/access_extents.h"

#include <algorithm>
#include <bit>
#include <numeric>

namespace uvmp {
namespace {

// A distinct pointer in the window: the span of launches using it.
struct Pointer {
    uint32_t alloc_id;
    uint64_t offset;
    uint64_t first;
    uint64_t last;
    uint64_t known_end; // end of the longest known-length access from it, or 0
    uint64_t end = 0;   // where its accesses of unknown length end
};

// Pointers beyond this many higher offsets are not compared: an allocation
// with thousands of live buffers keeps a too-long extent rather than a
// quadratic scan.
constexpr size_t kMaxCompared = 4096;

// The distinct pointers of a window by place, open addressing. A window
// repeats its pointers many times over (a training step uses a tensor in
// several kernels), so only the distinct ones are sorted. A slot stamped with
// an earlier window is empty: starting a window clears nothing.
class PointerTable {
public:
    void start_window(size_t uses) {
        const size_t wanted = std::bit_ceil(std::max<size_t>(2 * uses, 16));
        if (slots_.size() < wanted || ++stamp_ == 0) {
            slots_.assign(std::max(wanted, slots_.size()), Slot{});
            stamp_ = 1;
        }
        mask_ = slots_.size() - 1;
    }
    // The pointer's index, or `fresh` if it was not in the window yet.
    uint32_t find_or_add(uint32_t alloc_id, uint64_t offset, uint32_t fresh) {
        const uint64_t hash = (offset ^ (uint64_t{alloc_id} << 40) ^ alloc_id) * 0x9E3779B97F4A7C15ull;
        for (size_t at = (hash >> 20) & mask_;; at = (at + 1) & mask_) {
            Slot& slot = slots_[at];
            if (slot.stamp != stamp_) {
                slot = {offset, alloc_id, stamp_, fresh};
                return fresh;
            }
            if (slot.offset == offset && slot.alloc_id == alloc_id) return slot.pointer;
        }
    }

private:
    struct Slot {
        uint64_t offset = 0;
        uint32_t alloc_id = 0;
        uint32_t stamp = 0;
        uint32_t pointer = 0;
    };
    std::vector<Slot> slots_;
    size_t mask_ = 0;
    uint32_t stamp_ = 0;
};

// The buffers of one inference, kept across the windows of a trace: each
// window's would otherwise be fresh memory, and on some systems fresh pages
// cost more than the inference.
struct Scratch {
    PointerTable table;
    std::vector<Pointer> pointers;  // in order of first use
    std::vector<uint32_t> pointer_of_use;
    std::vector<uint32_t> by_place; // pointer indices, by allocation then offset
};

// Sizes by allocation id; an id recorded twice takes its last size. The
// library hands ids out in sequence, so they index a table; ids spread
// wider than that are found by binary search. (A table of nodes would
// cost a page of fresh memory every hundred allocations.)
class AllocationSizes {
public:
    explicit AllocationSizes(const LargeVector<trace::Alloc>& allocs) {
        uint32_t max_id = 0;
        for (const trace::Alloc& alloc : allocs) max_id = std::max(max_id, alloc.id);
        if (allocs.empty()) return;
        if (max_id / 4 <= allocs.size()) {
            by_id_.assign(size_t{max_id} + 1, 0);
            for (const trace::Alloc& alloc : allocs) by_id_[alloc.id] = alloc.size;
            return;
        }
        sorted_.reserve(allocs.size());
        for (const trace::Alloc& alloc : allocs) sorted_.push_back({alloc.id, alloc.size});
        std::stable_sort(sorted_.begin(), sorted_.end(), by_id);
    }
    // 0 when unknown.
    uint64_t operator()(uint32_t id) const {
        if (!by_id_.empty()) return id < by_id_.size() ? by_id_[id] : 0;
        const auto after = std::upper_bound(sorted_.begin(), sorted_.end(), IdSize{id, 0}, by_id);
        return after == sorted_.begin() || (after - 1)->id != id ? uint64_t{0} : (after - 1)->size;
    }

private:
    struct IdSize {
        uint32_t id;
        uint64_t size;
    };
    static bool by_id(const IdSize& a, const IdSize& b) { return a.id < b.id; }
    LargeVector<uint64_t> by_id_;
    LargeVector<IdSize> sorted_;
};

template <class SizeOf>
uint64_t infer_extents(std::span<const AccessUse> uses, const SizeOf& size_of, Scratch& scratch) {
    std::vector<Pointer>& pointers = scratch.pointers;
    pointers.clear();
    scratch.pointer_of_use.resize(uses.size());
    scratch.table.start_window(uses.size());
    for (size_t i = 0; i < uses.size(); ++i) {
        const AccessUse& use = uses[i];
        const trace::Access& a = *use.access;
        const uint32_t k = scratch.table.find_or_add(a.alloc_id, a.offset, static_cast<uint32_t>(pointers.size()));
        if (k == pointers.size()) pointers.push_back({a.alloc_id, a.offset, use.position, use.position, 0});
        Pointer& p = pointers[k];
        p.first = std::min(p.first, use.position);
        p.last = std::max(p.last, use.position);
        if (a.length) p.known_end = std::max(p.known_end, a.offset + a.length);
        scratch.pointer_of_use[i] = k;
    }
    std::vector<uint32_t>& by_place = scratch.by_place;
    by_place.resize(pointers.size());
    std::iota(by_place.begin(), by_place.end(), 0u);
    std::sort(by_place.begin(), by_place.end(), [&](uint32_t x, uint32_t y) {
        const Pointer &a = pointers[x], &b = pointers[y];
        return a.alloc_id != b.alloc_id ? a.alloc_id < b.alloc_id : a.offset < b.offset;
    });

    // Pointers come by allocation: its size is looked up once.
    uint32_t sized_id = 0;
    uint64_t size = 0;
    for (size_t k = 0; k < by_place.size(); ++k) {
        Pointer& p = pointers[by_place[k]];
        if (k == 0 || p.alloc_id != sized_id) {
            sized_id = p.alloc_id;
            size = size_of(sized_id);
        }
        if (size == 0 || p.offset >= size) continue; // its accesses are left alone
        uint64_t end = size;
        const size_t limit = std::min(by_place.size(), k + 1 + kMaxCompared);
        for (size_t j = k + 1; j < limit && pointers[by_place[j]].alloc_id == p.alloc_id; ++j) {
            const Pointer& q = pointers[by_place[j]];
            if (q.offset >= size) break;
            if (q.first <= p.last && p.first <= q.last) {
                end = q.offset;
                break;
            }
        }
        // A known-length access from the same pointer reaches at least that far.
        p.end = std::max(end, std::min(size, p.known_end));
    }

    uint64_t given = 0;
    for (size_t i = 0; i < uses.size(); ++i) {
        trace::Access& a = *uses[i].access;
        const Pointer& p = pointers[scratch.pointer_of_use[i]];
        if (a.length != 0 || p.end == 0) continue;
        a.length = p.end - a.offset;
        ++given;
    }
    return given;
}

} // namespace

uint64_t infer_access_extents(std::span<const AccessUse> uses, const AllocationSize& size_of) {
    Scratch scratch;
    return infer_extents(uses, size_of, scratch);
}

uint64_t infer_access_extents(trace::Trace& trace, std::span<const uint64_t> bounds) {
    const AllocationSizes size_of(trace.allocs);

    const uint64_t launches = trace.launches.size();
    std::vector<uint64_t> cuts{0};
    for (uint64_t b : bounds)
        if (b > cuts.back() && b < launches) cuts.push_back(b);
    cuts.push_back(launches);

    uint64_t given = 0;
    std::vector<AccessUse> uses;
    Scratch scratch;
    for (size_t w = 0; w + 1 < cuts.size(); ++w) {
        uses.clear();
        for (uint64_t i = cuts[w]; i < cuts[w + 1]; ++i) {
            const trace::Launch& launch = trace.launches[i];
            if (!trace.has_accesses_of(launch)) continue;
            for (uint32_t k = 0; k < launch.access_count; ++k)
                uses.push_back({i, &trace.accesses[launch.first_access + k]});
        }
        given += infer_extents(uses, size_of, scratch);
    }
    return given;
}

} // namespace uvmp

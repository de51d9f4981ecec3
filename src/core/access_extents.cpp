#include "core/access_extents.h"

#include "core/radix_pass.h"

#include <algorithm>
#include <bit>

namespace uvmp {
namespace {

// One use of a pointer, sorted by where it points.
struct Keyed {
    uint64_t offset;
    uint32_t alloc_id;
    uint32_t use; // index into the uses
};

// A distinct pointer in the window: the span of launches using it, and its uses
// as a run of the sorted Keyed entries.
struct Pointer {
    uint32_t alloc_id;
    uint64_t offset;
    uint64_t first;
    uint64_t last;
    uint64_t known_end; // end of the longest known-length access from it, or 0
    size_t keyed_begin;
    size_t keyed_end;
};

// Pointers beyond this many higher offsets are not compared: an allocation
// with thousands of live buffers keeps a too-long extent rather than a
// quadratic scan.
constexpr size_t kMaxCompared = 4096;

// By allocation, then offset. Both usually fit one 64-bit number, sorted by
// its bytes in linear time.
void sort_by_place(std::vector<Keyed>& keyed, unsigned offset_bits, unsigned id_bits) {
    if (offset_bits + id_bits > 64) {
        std::sort(keyed.begin(), keyed.end(), [](const Keyed& x, const Keyed& y) {
            return x.alloc_id != y.alloc_id ? x.alloc_id < y.alloc_id : x.offset < y.offset;
        });
        return;
    }
    struct Packed {
        uint64_t place;
        uint32_t index;
    };
    std::vector<Packed> packed(keyed.size());
    for (size_t i = 0; i < keyed.size(); ++i)
        packed[i] = {(offset_bits == 64 ? 0 : uint64_t{keyed[i].alloc_id} << offset_bits) | keyed[i].offset, static_cast<uint32_t>(i)};
    uint64_t differing = 0;
    for (const Packed& p : packed) differing |= p.place ^ packed.front().place;
    std::vector<Packed> scratch;
    for (unsigned shift = 0; shift < 64; shift += 8)
        if ((differing >> shift) & 0xff)
            radix_pass(packed, scratch, [shift](const Packed& p) { return (p.place >> shift) & 0xff; });
    std::vector<Keyed> sorted(keyed.size());
    for (size_t i = 0; i < packed.size(); ++i) sorted[i] = keyed[packed[i].index];
    keyed.swap(sorted);
}

} // namespace

uint64_t infer_access_extents(std::span<const AccessUse> uses, const AllocationSize& size_of) {
    std::vector<Keyed> keyed(uses.size());
    uint64_t offset_bits = 0, id_bits = 0;
    for (size_t i = 0; i < uses.size(); ++i) {
        keyed[i] = {uses[i].access->offset, uses[i].access->alloc_id, static_cast<uint32_t>(i)};
        offset_bits |= keyed[i].offset;
        id_bits |= keyed[i].alloc_id;
    }
    sort_by_place(keyed, static_cast<unsigned>(std::bit_width(offset_bits)), static_cast<unsigned>(std::bit_width(id_bits)));
    std::vector<Pointer> pointers;
    for (size_t i = 0; i < keyed.size();) {
        const AccessUse& use = uses[keyed[i].use];
        Pointer p{keyed[i].alloc_id, keyed[i].offset, use.position, use.position, 0, i, i};
        for (; i < keyed.size() && keyed[i].alloc_id == p.alloc_id && keyed[i].offset == p.offset; ++i) {
            const AccessUse& u = uses[keyed[i].use];
            p.first = std::min(p.first, u.position);
            p.last = std::max(p.last, u.position);
            if (u.access->length) p.known_end = std::max(p.known_end, p.offset + u.access->length);
        }
        p.keyed_end = i;
        pointers.push_back(p);
    }

    uint64_t given = 0;
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
        for (size_t i = p.keyed_begin; i < p.keyed_end; ++i) {
            trace::Access& a = *uses[keyed[i].use].access;
            if (a.length != 0) continue;
            a.length = end - a.offset;
            ++given;
        }
    }
    return given;
}

uint64_t infer_access_extents(trace::Trace& trace, std::span<const uint64_t> bounds) {
    // Sizes by id, sorted (a trace lists allocations in the order their ids
    // were handed out, mostly): a table of nodes would cost a page of fresh
    // memory every hundred allocations.
    struct IdSize {
        uint32_t id;
        uint64_t size;
    };
    LargeVector<IdSize> sizes;
    sizes.reserve(trace.allocs.size());
    for (const trace::Alloc& alloc : trace.allocs) sizes.push_back({alloc.id, alloc.size});
    const auto by_id = [](const IdSize& a, const IdSize& b) { return a.id < b.id; };
    if (!std::is_sorted(sizes.begin(), sizes.end(), by_id)) std::stable_sort(sizes.begin(), sizes.end(), by_id);
    const AllocationSize size_of = [&](uint32_t id) {
        // An id recorded twice takes its last size.
        const auto after = std::upper_bound(sizes.begin(), sizes.end(), IdSize{id, 0}, by_id);
        return after == sizes.begin() || (after - 1)->id != id ? uint64_t{0} : (after - 1)->size;
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
            if (!trace.has_accesses_of(launch)) continue;
            for (uint32_t k = 0; k < launch.access_count; ++k)
                uses.push_back({i, &trace.accesses[launch.first_access + k]});
        }
        given += infer_access_extents(uses, size_of);
    }
    return given;
}

} // namespace uvmp

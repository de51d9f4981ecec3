#include "core/policy/policy.h"

#include <algorithm>

namespace uvmp {

void Plan::clear() {
    evict.clear();
    demand.clear();
    prefetch.clear();
}

void Plan::add(std::vector<ChunkSpan>& spans, ChunkId chunk, const Residency& residency) {
    if (!spans.empty()) {
        ChunkSpan& last = spans.back();
        if (last.first + last.count == chunk && residency.same_allocation(last.first, chunk)) {
            ++last.count;
            return;
        }
    }
    spans.push_back({chunk, 1});
}

void Plan::add(std::vector<ChunkSpan>& spans, ChunkRange range, const Residency& residency) {
    // A span per allocation the range crosses (joined to the last one when it continues it).
    for (ChunkId c = range.first; c <= range.last;) {
        const ChunkId last = std::min(range.last, residency.allocation_last_chunk(c));
        add(spans, c, residency);
        spans.back().count += last - c;
        c = last + 1;
    }
}

uint64_t Plan::bytes(std::span<const ChunkSpan> spans, const Residency& residency) {
    uint64_t total = 0;
    for (const ChunkSpan& span : spans) total += residency.bytes_of({span.first, span.first + span.count - 1});
    return total;
}

void Plan::coalesce_evictions(const Residency& residency) {
    if (evict.size() < 2) return;
    std::sort(evict.begin(), evict.end(), [](const ChunkSpan& a, const ChunkSpan& b) { return a.first < b.first; });
    size_t out = 0;
    for (size_t i = 1; i < evict.size(); ++i) {
        ChunkSpan& last = evict[out];
        const ChunkSpan& next = evict[i];
        if (last.first + last.count == next.first && residency.same_allocation(last.first, next.first))
            last.count += next.count;
        else
            evict[++out] = next;
    }
    evict.resize(out + 1);
}

std::optional<PolicyKind> parse_policy_kind(std::string_view name) {
    if (name == "demand-lru") return PolicyKind::DemandLru;
    if (name == "belady") return PolicyKind::Belady;
    if (name == "learned") return PolicyKind::Learned;
    return std::nullopt;
}

std::string_view policy_kind_name(PolicyKind kind) {
    switch (kind) {
    case PolicyKind::DemandLru: return "demand-lru";
    case PolicyKind::Belady: return "belady";
    case PolicyKind::Learned: return "learned";
    }
    return "unknown";
}

bool reads_next_uses(PolicyKind kind) { return kind == PolicyKind::Belady; }

} // namespace uvmp

#include "core/policy.h"

namespace uvmp {

void Plan::clear() {
    evict.clear();
    demand.clear();
    prefetch.clear();
}

void Plan::add(std::vector<ChunkSpan>& spans, ChunkId chunk, const Residency& residency) {
    if (!spans.empty()) {
        ChunkSpan& last = spans.back();
        if (last.first + last.count == chunk && residency.alloc_id_of(last.first) == residency.alloc_id_of(chunk)) {
            ++last.count;
            return;
        }
    }
    spans.push_back({chunk, 1});
}

uint64_t Plan::bytes(std::span<const ChunkSpan> spans, const Residency& residency) {
    uint64_t total = 0;
    for (const ChunkSpan& span : spans) {
        // Only an allocation's last chunk can be short.
        const ChunkId last = span.first + span.count - 1;
        total += (span.count - 1) * residency.chunk_bytes() + residency.chunk_size(last);
    }
    return total;
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

} // namespace uvmp

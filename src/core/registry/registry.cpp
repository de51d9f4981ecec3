#include "core/registry/registry.h"

#include <algorithm>
#include <mutex>
#include <new>

namespace uvmp {
namespace {

// The allocations this thread's look-ups found lately, as they were at `version`.
// Trivially destructible, so that reaching it needs no check that it was made.
struct RecentHits {
    static constexpr size_t kEntries = 8;
    struct Entry {
        uint64_t base;
        uint64_t end;
        uint32_t id;
    };
    uint64_t version = 0; // no registry's
    size_t count = 0;
    size_t next = 0; // the entry a new one replaces once all are taken
    Entry entries[kEntries];

    const Entry* find(uint64_t address) const {
        for (size_t i = 0; i < count; ++i)
            if (address >= entries[i].base && address < entries[i].end) return &entries[i];
        return nullptr;
    }
    // Appends a hit for each address, or nothing and false where one lies in
    // none of these allocations.
    bool find_all(std::span<const uint64_t> addresses, std::vector<AccessHit>& hits) const {
        const size_t first_hit = hits.size();
        for (uint64_t address : addresses) {
            const Entry* entry = find(address);
            if (!entry) {
                hits.resize(first_hit);
                return false;
            }
            hits.push_back({entry->id, address - entry->base});
        }
        return true;
    }
    void remember(uint64_t at_version, uint64_t base, uint64_t end, uint32_t id) {
        if (version != at_version) {
            version = at_version;
            count = next = 0;
        }
        Entry& entry = count < kEntries ? entries[count++] : entries[next++ % kEntries];
        entry = {base, end, id};
    }
};
thread_local RecentHits t_recent;

} // namespace

void Registry::map_changed() {
    static std::atomic<uint64_t> next{1};
    version_.store(next.fetch_add(1, std::memory_order_relaxed), std::memory_order_release);
}

uint32_t Registry::add(uint64_t base, uint64_t size, int32_t device, void* context, bool stream_ordered,
                       bool host_homed) {
    std::unique_lock lock(mutex_);
    const uint32_t id = next_id_++;
    Allocation& a = by_base_[base];
    if (a.id) unindex_locked(a); // an allocation at the same base, not removed
    a = Allocation{id, base, size, device, context, stream_ordered, host_homed};
    index_locked(a);
    map_changed();
    if (base < low_.load(std::memory_order_relaxed)) low_.store(base, std::memory_order_relaxed);
    if (base + size > high_.load(std::memory_order_relaxed))
        high_.store(base + size, std::memory_order_relaxed);
    return id;
}

std::optional<Allocation> Registry::remove(uint64_t base) {
    std::unique_lock lock(mutex_);
    auto it = by_base_.find(base);
    if (it == by_base_.end()) return std::nullopt;
    Allocation a = it->second;
    unindex_locked(a);
    by_base_.erase(it);
    map_changed();
    // The bounds only shrink when the map empties: a stale wider bound costs a
    // map look-up, never a wrong answer.
    if (by_base_.empty()) {
        low_.store(UINT64_MAX, std::memory_order_relaxed);
        high_.store(0, std::memory_order_relaxed);
    }
    return a;
}

std::optional<Allocation> Registry::find_base(uint64_t base) const {
    std::shared_lock lock(mutex_);
    auto it = by_base_.find(base);
    if (it == by_base_.end()) return std::nullopt;
    return it->second;
}

std::optional<Allocation> Registry::home_in_place(uint64_t base, uint32_t id, bool on_host) {
    std::unique_lock lock(mutex_);
    auto it = by_base_.find(base);
    if (it == by_base_.end() || it->second.id != id) return std::nullopt;
    Allocation& a = it->second;
    if (a.host_homed != a.homed_in_place || a.homed_in_place == on_host) return std::nullopt;
    a.host_homed = a.homed_in_place = on_host;
    return a;
}

std::optional<AccessHit> Registry::find(uint64_t address) const {
    if (!may_contain(address)) return std::nullopt;
    std::shared_lock lock(mutex_);
    const Span* a = holder_locked(address);
    if (!a) return std::nullopt;
    return AccessHit{a->id, address - a->base};
}

void Registry::find_all(std::span<const uint64_t> addresses, std::vector<AccessHit>& hits) const {
    if (addresses.empty()) return;
    // One look-up of the thread's storage: the compiler makes one a use otherwise.
    RecentHits& recent = t_recent;
    // What the thread found at this version still holds: the map is as it was
    // then. (A change made after this load is one the look-up came before, as
    // it would have under the lock.)
    if (recent.version == version_.load(std::memory_order_acquire) && recent.find_all(addresses, hits)) return;
    std::shared_lock lock(mutex_);
    const uint64_t version = version_.load(std::memory_order_relaxed);
    for (uint64_t address : addresses) {
        const Span* a = holder_locked(address);
        if (!a) continue;
        hits.push_back({a->id, address - a->base});
        if (recent.version != version || !recent.find(address)) recent.remember(version, a->base, a->end, a->id);
    }
}

namespace {

// The first of `spans` (sorted by base) whose base is not below `base`.
template <class Spans>
auto first_from(Spans& spans, uint64_t base) {
    return std::lower_bound(spans.begin(), spans.end(), base, [](const auto& s, uint64_t b) { return s.base < b; });
}

} // namespace

const Registry::Span* Registry::holder_locked(uint64_t address) const {
    const uint32_t* list = granules_.find(address >> kGranuleBits);
    if (!list) return nullptr;
    const std::vector<Span>& spans = granule_lists_[*list];
    // The last span starting at or below the address.
    auto it = first_from(spans, address + 1);
    if (it == spans.begin()) return nullptr;
    --it;
    return address < it->end ? &*it : nullptr;
}

std::vector<Registry::Span>& Registry::granule_list_locked(uint64_t granule) {
    if (const uint32_t* list = granules_.find(granule)) return granule_lists_[*list];
    uint32_t made = static_cast<uint32_t>(granule_lists_.size());
    if (free_lists_.empty()) {
        granule_lists_.emplace_back();
    } else {
        made = free_lists_.back();
        free_lists_.pop_back();
    }
    granules_.insert(granule, made);
    return granule_lists_[made];
}

void Registry::index_locked(const Allocation& a) {
    const Span span{a.base, a.base + a.size, a.id};
    for_each_granule(a, [&](uint64_t g) {
        std::vector<Span>& spans = granule_list_locked(g);
        spans.insert(first_from(spans, span.base), span);
    });
}

void Registry::unindex_locked(const Allocation& a) {
    for_each_granule(a, [&](uint64_t g) {
        const uint32_t* list = granules_.find(g);
        if (!list) return;
        const uint32_t index = *list;
        std::vector<Span>& spans = granule_lists_[index];
        const auto at = first_from(spans, a.base);
        if (at != spans.end() && at->base == a.base) spans.erase(at);
        if (spans.empty()) {
            granules_.erase(g);
            free_lists_.push_back(index);
        }
    });
}

size_t Registry::size() const {
    std::shared_lock lock(mutex_);
    return by_base_.size();
}

std::vector<Allocation> Registry::snapshot() const {
    std::shared_lock lock(mutex_);
    std::vector<Allocation> out;
    out.reserve(by_base_.size());
    for (const auto& [base, a] : by_base_) out.push_back(a);
    return out;
}

void Registry::unlock_after_fork(bool in_child) {
    if (in_child) new (&mutex_) std::shared_mutex;
    else mutex_.unlock();
}

void Registry::clear() {
    std::unique_lock lock(mutex_);
    by_base_.clear();
    granules_ = {};
    granule_lists_.clear();
    free_lists_.clear();
    map_changed();
    low_.store(UINT64_MAX, std::memory_order_relaxed);
    high_.store(0, std::memory_order_relaxed);
}

} // namespace uvmp

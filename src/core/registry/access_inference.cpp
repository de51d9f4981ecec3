#include "core/registry/access_inference.h"

#include <cstring>
#include <mutex>
#include <new>

namespace uvmp {
namespace {

// The words of a launch that may be pointers of ours, looked up in the
// registry in batches, each under one lock: a launch has dozens of candidate
// words, and a lock per word cost more than the look-ups.
class WordBatch {
public:
    WordBatch(const Registry& registry, std::vector<AccessHit>& hits) : registry_(registry), hits_(hits) {}
    WordBatch(const WordBatch&) = delete;
    WordBatch& operator=(const WordBatch&) = delete;

    // Parameter storage carries no alignment promise we can rely on for by-value
    // structs, so words are copied out rather than dereferenced in place.
    void scan(const unsigned char* bytes, size_t size) {
        for (size_t at = 0; at + sizeof(uint64_t) <= size; at += sizeof(uint64_t)) {
            uint64_t word;
            std::memcpy(&word, bytes + at, sizeof word);
            if (word == 0 || !registry_.may_contain(word)) continue;
            words_[count_++] = word;
            if (count_ == kWords) flush();
        }
    }

    // Looks up what is left; the hits are complete after it.
    void flush() {
        registry_.find_all({words_, count_}, hits_);
        count_ = 0;
    }

private:
    static constexpr size_t kWords = 64;
    const Registry& registry_;
    std::vector<AccessHit>& hits_;
    uint64_t words_[kWords];
    size_t count_ = 0;
};

} // namespace

uint64_t KernelTable::new_generation() {
    // One count for every table: a table made where another was gets none of its generations.
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
}

const KernelInfo* KernelTable::find(const void* handle, bool* first_sight) const {
    std::shared_lock lock(mutex_);
    auto it = by_handle_.find(handle);
    if (it == by_handle_.end()) return nullptr;
    if (first_sight) *first_sight = false;
    return it->second.get();
}

const KernelInfo& KernelTable::lookup(const void* handle, bool* first_sight) {
    if (const KernelInfo* known = find(handle, first_sight)) return *known;
    // Describe outside the lock: it calls into the driver.
    auto info = std::make_unique<KernelInfo>();
    describe_(handle, *info);
    return insert(handle, std::move(info), first_sight);
}

const KernelInfo& KernelTable::lookup_named(const void* key, std::string_view name, bool* first_sight) {
    if (const KernelInfo* known = find(key, first_sight)) return *known;
    auto info = std::make_unique<KernelInfo>();
    info->name = name;
    info->layout_known = true;
    return insert(key, std::move(info), first_sight);
}

static bool same_layout(const KernelInfo& a, const KernelInfo& b) {
    if (a.layout_known != b.layout_known || a.params.size() != b.params.size()) return false;
    for (size_t i = 0; i < a.params.size(); ++i)
        if (a.params[i].offset != b.params[i].offset || a.params[i].size != b.params[i].size) return false;
    return true;
}

const KernelInfo& KernelTable::insert(const void* handle, std::unique_ptr<KernelInfo> info, bool* first_sight) {
    std::unique_lock lock(mutex_);
    auto [it, inserted] = by_handle_.try_emplace(handle, std::move(info));
    bool first = inserted;
    if (inserted) {
        KernelInfo& made = *it->second;
        const auto before = made.name.empty() ? forgotten_by_name_.end() : forgotten_by_name_.find(made.name);
        if (before != forgotten_by_name_.end() && same_layout(*before->second, made)) {
            made.id = before->second->id;
            first = false;
        } else {
            made.id = next_id_++;
        }
    }
    if (first_sight) *first_sight = first;
    return *it->second;
}

void KernelTable::forget_handles() {
    std::unique_lock lock(mutex_);
    generation_.store(new_generation(), std::memory_order_release);
    for (auto& [handle, info] : by_handle_) {
        if (!info->name.empty()) forgotten_by_name_[info->name] = info.get();
        forgotten_.push_back(std::move(info));
    }
    by_handle_.clear();
}

size_t KernelTable::size() const {
    std::shared_lock lock(mutex_);
    return by_handle_.size();
}

void KernelTable::unlock_after_fork(bool in_child) {
    if (in_child) new (&mutex_) std::shared_mutex;
    else mutex_.unlock();
}

void KernelTable::clear() {
    std::unique_lock lock(mutex_);
    generation_.store(new_generation(), std::memory_order_release);
    by_handle_.clear();
    forgotten_.clear();
    forgotten_by_name_.clear();
    next_id_ = 0;
}

void scan_kernel_params(const KernelInfo& info, void* const* params, const Registry& registry,
                        std::vector<AccessHit>& hits) {
    if (!params) return;
    WordBatch batch(registry, hits);
    for (size_t i = 0; i < info.params.size(); ++i) {
        const auto* p = static_cast<const unsigned char*>(params[i]);
        if (!p) continue;
        batch.scan(p, info.params[i].size);
    }
    batch.flush();
}

void scan_param_buffer(const void* buffer, size_t bytes, const Registry& registry,
                       std::vector<AccessHit>& hits) {
    if (!buffer) return;
    WordBatch batch(registry, hits);
    batch.scan(static_cast<const unsigned char*>(buffer), bytes);
    batch.flush();
}

} // namespace uvmp

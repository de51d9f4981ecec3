// Which converted allocations a kernel launch touches, inferred from its
// parameters: every 8-byte-aligned word of every parameter is looked up in the
// registry, because device pointers also hide inside by-value structs.
#pragma once

#include "core/registry/registry.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace uvmp {

struct ParamSlot {
    uint32_t offset;
    uint32_t size;
};

struct KernelInfo {
    uint32_t id = 0;           // 0, 1, 2, ... in order of first launch
    std::string name;          // mangled name when the driver gives it
    std::vector<ParamSlot> params;
    bool layout_known = false; // false: the driver could not describe the parameters
};

// Per-function cache, filled once per function through a describe callback that
// asks the driver (preload/) or a fake (tests).
class KernelTable {
public:
    using Describe = std::function<void(const void* handle, KernelInfo& info)>;

    explicit KernelTable(Describe describe) : describe_(std::move(describe)) {}

    // Returns the info for handle, describing it on first sight. The pointer stays
    // valid for the table's lifetime. first_sight is set when this call created it.
    const KernelInfo& lookup(const void* handle, bool* first_sight = nullptr);
    // The same for something that runs as a launch but is no kernel (a copy node
    // of a graph): `key` is any address of the library's own, never described.
    const KernelInfo& lookup_named(const void* key, std::string_view name, bool* first_sight = nullptr);
    size_t size() const;
    void clear();
    // A module or library unloaded: the driver may hand its functions' handles
    // out again, for other kernels with other parameters (reading a launch's
    // parameters by a stale description reads past them). Every handle is
    // forgotten and described anew at its next launch; one described again
    // with the same name and parameters keeps its id (and is no first sight).
    // Descriptions handed out before stay valid.
    void forget_handles();

    // Changes whenever a description handed out may have stopped being its
    // handle's (forget_handles, clear), and differs from any other table's: a
    // cache of (handle, description) pairs made at one generation holds while the
    // generation stays the same, without the table's lock. Never 0.
    uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

    // Around fork(), as Registry's.
    void lock_for_fork() { mutex_.lock(); }
    void unlock_after_fork(bool in_child);

private:
    const KernelInfo* find(const void* handle, bool* first_sight) const;
    const KernelInfo& insert(const void* handle, std::unique_ptr<KernelInfo> info, bool* first_sight);

    static uint64_t new_generation();

    Describe describe_;
    std::atomic<uint64_t> generation_{new_generation()};
    mutable std::shared_mutex mutex_;
    std::unordered_map<const void*, std::unique_ptr<KernelInfo>> by_handle_;
    uint32_t next_id_ = 0;
    // Descriptions of forgotten handles, kept for whoever still holds them, and
    // by name, for the ids of kernels described again.
    std::vector<std::unique_ptr<KernelInfo>> forgotten_;
    std::unordered_map<std::string, const KernelInfo*> forgotten_by_name_;
};

// Appends the hits found in params (the kernelParams array of a launch).
void scan_kernel_params(const KernelInfo& info, void* const* params, const Registry& registry,
                        std::vector<AccessHit>& hits);

// Appends the hits found in a packed parameter buffer (the `extra` launch form).
void scan_param_buffer(const void* buffer, size_t bytes, const Registry& registry,
                       std::vector<AccessHit>& hits);

} // namespace uvmp

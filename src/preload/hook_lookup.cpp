#include "preload/hooks.h"

#include <cstring>
#include <iterator>

namespace uvmp::preload {
namespace {

struct HookEntry {
    const char* name;
    void* hook;
};

const HookEntry kHooks[] = {
#define UVMP_HOOK_ENTRY(name, ret, params) {#name, reinterpret_cast<void*>(&::name)},
    UVMP_HOOKED_DRIVER_FUNCTIONS(UVMP_HOOK_ENTRY)
#undef UVMP_HOOK_ENTRY
};

} // namespace

void* hook_for_name(const char* name) {
    for (const HookEntry& entry : kHooks)
        if (std::strcmp(entry.name, name) == 0) return entry.hook;
    return nullptr;
}

void* real_for_name(const driver::DriverTable& table, const char* name) {
    void* found = nullptr;
    driver::for_each_hooked_slot(table, [&](const char* slot_name, void* const* slot) {
        if (!found && std::strcmp(slot_name, name) == 0) found = *slot;
    });
    return found;
}

void* hook_for_real_pointer(const driver::DriverTable& table, void* real) {
    if (!real) return nullptr;
    const char* matched = nullptr;
    driver::for_each_hooked_slot(table, [&](const char* slot_name, void* const* slot) {
        if (!matched && *slot == real) matched = slot_name;
    });
    return matched ? hook_for_name(matched) : nullptr;
}

} // namespace uvmp::preload

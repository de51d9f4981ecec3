#include "driver/table/real_dlsym.h"

#include <dlfcn.h>

#include <atomic>

namespace uvmp::driver {

DlsymFn real_dlsym() {
    static std::atomic<DlsymFn> cached{nullptr};
    DlsymFn fn = cached.load(std::memory_order_acquire);
    if (fn) return fn;
    // dlvsym is not overridden, so asking it is safe; glibc 2.34 moved dlsym into
    // libc under a new version, older ones only have the first.
    fn = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"));
    if (!fn) fn = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"));
    cached.store(fn, std::memory_order_release);
    return fn;
}

} // namespace uvmp::driver

// The public C API of include/uvmprefetch/uvmprefetch.h.
#include "driver/intercept/interceptor.h"
#include "uvmprefetch/uvmprefetch.h"

#include <cstddef>

extern "C" int uvmp_get_stats(uvmp_stats* out) {
    if (!out || out->struct_size < offsetof(uvmp_stats, allocs_converted)) return -1;
    auto* icpt = uvmp::driver::interceptor();
    if (!icpt) {
        out->active = 0;
        return 0;
    }
    icpt->stats().fill(*out, icpt->active());
    return 0;
}

extern "C" void uvmp_mark_iteration(void) {
    if (auto* icpt = uvmp::driver::interceptor()) icpt->mark_iteration();
}

extern "C" const char* uvmp_version(void) { return UVMP_VERSION_STRING; }

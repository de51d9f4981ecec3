// The C library's own dlsym, found without going through the library's dlsym
// override (which would recurse).
#pragma once

namespace uvmp::driver {

using DlsymFn = void* (*)(void*, const char*);
DlsymFn real_dlsym();

} // namespace uvmp::driver

// dlsym override: libraries that resolve driver entry points by name from a
// libcuda handle bypass symbol interposition, so the lookup itself is wrapped.
#include "driver/table/real_dlsym.h"
#include "preload/hooks.h"

#include <dlfcn.h>

#include <atomic>

extern "C" {
// Read by the entry stub below; hidden so that it is reached PC-relative.
__attribute__((visibility("hidden"))) void* uvmp_real_dlsym_pointer = nullptr;
__attribute__((visibility("hidden"))) void* uvmp_dlsym_impl(void* handle, const char* name);
}

#if defined(__x86_64__)
// RTLD_NEXT means "after the caller's object", which glibc reads from the
// return address. A tail jump to the real dlsym keeps the caller's return address,
// so such lookups go straight through untouched.
asm(R"(
    .text
    .globl dlsym
    .type dlsym, @function
dlsym:
    cmpq $-1, %rdi
    jne 1f
    movq uvmp_real_dlsym_pointer(%rip), %rax
    testq %rax, %rax
    je 1f
    jmp *%rax
1:
    jmp uvmp_dlsym_impl
    .size dlsym, .-dlsym
)");
#else
extern "C" void* dlsym(void* handle, const char* name) { return uvmp_dlsym_impl(handle, name); }
#endif

extern "C" void* uvmp_dlsym_impl(void* handle, const char* name) {
    const uvmp::driver::DlsymFn real = uvmp::driver::real_dlsym();
    if (!real) return nullptr;
    uvmp_real_dlsym_pointer = reinterpret_cast<void*>(real);
    void* result = real(handle, name);
    if (!result || !name || name[0] != 'c' || name[1] != 'u') return result;
    void* hook = uvmp::preload::hook_for_name(name);
    if (!hook || hook == result) return result;
    const uvmp::driver::DriverTable* table = uvmp::driver::driver_table();
    // Only the driver's own entry point is replaced; a same-named symbol of
    // another library is left alone.
    if (!table || uvmp::preload::real_for_name(*table, name) != result) return result;
    return hook;
}

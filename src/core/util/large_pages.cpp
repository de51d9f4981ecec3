#include "core/util/large_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace uvmp::large_pages {
namespace {

// A huge page backs only a whole, aligned 2 MiB of a mapping: the rest of a
// mapping's last 2 MiB would be ordinary pages, each its own page fault.
std::size_t mapped_bytes(std::size_t bytes) { return (bytes + kMinBytes - 1) & ~(kMinBytes - 1); }

} // namespace

void* allocate(std::size_t bytes) {
    bytes = mapped_bytes(bytes);
    // Aligned to 2 MiB as well (newer kernels do it themselves): map 2 MiB more
    // and give back what lies before and after the aligned part.
    void* mapped = mmap(nullptr, bytes + kMinBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<std::uintptr_t>(mapped);
    const std::uintptr_t aligned = (start + kMinBytes - 1) & ~std::uintptr_t{kMinBytes - 1};
    if (aligned > start) munmap(mapped, aligned - start);
    munmap(reinterpret_cast<void*>(aligned + bytes), start + kMinBytes - aligned);
    void* block = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
    // Refused where huge pages are off or unsupported: ordinary pages then.
    madvise(block, bytes, MADV_HUGEPAGE);
#endif
    return block;
}

void deallocate(void* block, std::size_t bytes) noexcept { munmap(block, mapped_bytes(bytes)); }

} // namespace uvmp::large_pages

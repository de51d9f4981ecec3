#include "core/large_pages.h"

#include <sys/mman.h>

namespace uvmp::large_pages {

void* allocate(std::size_t bytes) {
    void* block = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    // Refused where huge pages are off or unsupported: ordinary pages then.
    madvise(block, bytes, MADV_HUGEPAGE);
#endif
    return block;
}

void deallocate(void* block, std::size_t bytes) noexcept { munmap(block, bytes); }

} // namespace uvmp::large_pages

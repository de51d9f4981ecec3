// Storage for the few arrays that grow with the length of a trace (launches,
// accesses, a schedule's chunk lists). Touching fresh memory a 4 KiB page at a
// time costs a page fault per page, and for arrays of hundreds of megabytes that
// was as much as the work done in them. Blocks of 2 MiB and more are therefore
// asked of the kernel directly and marked for transparent huge pages, where the
// system allows them (a hint: without them the memory is ordinary pages).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace uvmp {

namespace large_pages {
// Smaller blocks come from the ordinary heap.
inline constexpr std::size_t kMinBytes = std::size_t{2} << 20;
void* allocate(std::size_t bytes);
void deallocate(void* block, std::size_t bytes) noexcept;
} // namespace large_pages

template <class T>
struct LargePageAllocator {
    using value_type = T;

    LargePageAllocator() = default;
    template <class U>
    LargePageAllocator(const LargePageAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
        const std::size_t bytes = n * sizeof(T);
        if (bytes < large_pages::kMinBytes) return std::allocator<T>().allocate(n);
        return static_cast<T*>(large_pages::allocate(bytes));
    }
    void deallocate(T* block, std::size_t n) noexcept {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < large_pages::kMinBytes) return std::allocator<T>().deallocate(block, n);
        large_pages::deallocate(block, bytes);
    }

    template <class U>
    bool operator==(const LargePageAllocator<U>&) const noexcept { return true; }
};

// A vector for trace-sized data.
template <class T>
using LargeVector = std::vector<T, LargePageAllocator<T>>;

} // namespace uvmp

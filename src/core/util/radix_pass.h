// One pass of a least-significant-digit radix sort: a stable counting sort of
// `items` by one byte of each. Passes over the bytes that differ, least
// significant first, sort by a key in linear time; batches of keys that differ
// in a few bytes sort several times faster than by comparison, whose branches
// on such keys mispredict half the time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace uvmp {

// `byte_of(item)` is the byte to sort by (0-255, ascending). `scratch` is the
// caller's, to keep its capacity across calls; its contents are lost.
template <class T, class ByteOf>
void radix_pass(std::vector<T>& items, std::vector<T>& scratch, ByteOf byte_of) {
    size_t start[257] = {};
    for (const T& item : items) ++start[static_cast<size_t>(byte_of(item)) + 1];
    for (size_t b = 1; b < 257; ++b) start[b] += start[b - 1];
    scratch.resize(items.size());
    for (const T& item : items) scratch[start[byte_of(item)]++] = item;
    items.swap(scratch);
}

} // namespace uvmp

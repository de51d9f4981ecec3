// Bit sets over chunk ids, one bit a chunk in 64-bit words: a run of adjacent
// chunks is changed or tested a word at a time rather than a bit at a time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace uvmp {

// Calls f(word, mask) for each word holding bits first..last (first <= last),
// mask selecting those bits of it. `words` must hold bit `last`.
template <class F>
void for_bit_words(uint64_t* words, size_t first, size_t last, F&& f) {
    for (size_t w = first / 64; w <= last / 64; ++w) {
        const unsigned low = w == first / 64 ? first % 64 : 0;
        const unsigned high = w == last / 64 ? last % 64 : 63;
        f(words[w], (~uint64_t{0} >> (63 - high)) & (~uint64_t{0} << low));
    }
}

} // namespace uvmp

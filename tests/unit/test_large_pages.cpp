#include "core/util/large_pages.h"

#include <catch2/catch.hpp>

#include <cstdint>

using uvmp::LargeVector;

TEST_CASE("a large vector keeps its contents across the size where it leaves the heap", "[large_pages]") {
    constexpr uint64_t kStride = 2654435761u;
    LargeVector<uint64_t> values;
    // From a few bytes on the heap to 16 MiB mapped directly, through every growth step.
    constexpr uint64_t kCount = 2u << 20;
    for (uint64_t i = 0; i < kCount; ++i) values.push_back(i * kStride);
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < kCount; ++i) wrong += values[i] != i * kStride;
    CHECK(wrong == 0);
    values.resize(10);
    values.shrink_to_fit();
    CHECK(values.size() == 10);
    CHECK(values[9] == 9 * kStride);
    LargeVector<uint64_t> copy(values);
    CHECK(copy == values);
}

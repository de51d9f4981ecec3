#include "core/util/median.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <vector>

using uvmp::median;

TEST_CASE("median: the middle value, or the midpoint of the two middle ones", "[util]") {
    CHECK(median(std::vector<double>{}) == 0.0);
    CHECK(median(std::vector<double>{3.0, 1.0, 2.0}) == 2.0);
    CHECK(median(std::vector<double>{4.0, 1.0, 3.0, 2.0}) == 2.5);
    CHECK(median(std::vector<uint64_t>{10, 40, 20, 30}) == 25);
    // Integers near the top of their range: no overflow in the midpoint.
    constexpr uint64_t top = std::numeric_limits<uint64_t>::max();
    CHECK(median(std::vector<uint64_t>{top, top - 2}) == top - 1);
}

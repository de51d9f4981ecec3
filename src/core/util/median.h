// The median of a sample: the middle value, or for an even count the midpoint
// of the two middle ones. Takes the values by copy and partly reorders the copy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <type_traits>
#include <vector>

namespace uvmp {

// T{} for no values.
template <class T>
T median(std::vector<T> values) {
    if (values.empty()) return T{};
    const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
    std::nth_element(values.begin(), mid, values.end());
    if (values.size() % 2) return *mid;
    const T lower = *std::max_element(values.begin(), mid);
    // Integers take the midpoint without overflowing their sum.
    if constexpr (std::is_floating_point_v<T>) return (lower + *mid) / 2;
    else return lower + (*mid - lower) / 2;
}

} // namespace uvmp

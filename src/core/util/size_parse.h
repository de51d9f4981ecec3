// Byte sizes as people write them: "4096", "512K", "24G", "1.5GiB", "2TB".
// Every multiple is binary (K = 1024). Used by the option table and the tools.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace uvmp {

std::optional<uint64_t> parse_size(std::string_view text);

// `s` without the white space at either end.
std::string_view trim(std::string_view s);

// A size or a percentage ("80%") of a reference amount that is known later.
struct SizeOrPercent {
    bool is_percent = false;
    uint64_t bytes = 0;
    double percent = 0.0;

    uint64_t resolve(uint64_t reference_bytes) const {
        if (!is_percent) return bytes;
        const double share = static_cast<double>(reference_bytes) * percent / 100.0;
        // Above 100% of a reference near 2^64 the share saturates instead of wrapping.
        return share >= 18446744073709551616.0 ? ~uint64_t{0} : static_cast<uint64_t>(share);
    }
};

std::optional<SizeOrPercent> parse_size_or_percent(std::string_view text);

// "24.0 GiB", "512.0 MiB", "17 B": for logs and summaries.
std::string format_size(uint64_t bytes);

} // namespace uvmp

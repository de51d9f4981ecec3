#include "core/util/size_parse.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace uvmp {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

namespace {

std::optional<double> parse_number(std::string_view s) {
    if (s.empty()) return std::nullopt;
    double value = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value) || value < 0)
        return std::nullopt;
    return value;
}

// The multiplier of a unit suffix, or 0 when the suffix is not a unit.
uint64_t unit_multiplier(std::string_view unit) {
    std::string u;
    for (char c : unit) u.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    if (u.empty() || u == "B") return 1;
    static constexpr const char* kPrefixes = "KMGTP";
    for (int i = 0; kPrefixes[i]; ++i) {
        const char p = kPrefixes[i];
        if (u == std::string(1, p) || u == std::string(1, p) + "B" || u == std::string(1, p) + "IB")
            return uint64_t{1} << (10 * (i + 1));
    }
    return 0;
}

} // namespace

std::optional<uint64_t> parse_size(std::string_view text) {
    text = trim(text);
    size_t split = 0;
    while (split < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[split])) || text[split] == '.'))
        ++split;
    const auto number = parse_number(text.substr(0, split));
    const uint64_t multiplier = unit_multiplier(trim(text.substr(split)));
    if (!number || multiplier == 0) return std::nullopt;
    const double bytes = *number * static_cast<double>(multiplier);
    if (bytes >= 18446744073709551616.0) return std::nullopt;
    return static_cast<uint64_t>(std::llround(bytes));
}

std::optional<SizeOrPercent> parse_size_or_percent(std::string_view text) {
    text = trim(text);
    if (!text.empty() && text.back() == '%') {
        const auto pct = parse_number(trim(text.substr(0, text.size() - 1)));
        if (!pct || *pct <= 0 || *pct > 1000) return std::nullopt;
        return SizeOrPercent{true, 0, *pct};
    }
    const auto bytes = parse_size(text);
    if (!bytes) return std::nullopt;
    return SizeOrPercent{false, *bytes, 0.0};
}

std::string format_size(uint64_t bytes) {
    static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 5) {
        value /= 1024.0;
        ++unit;
    }
    char buffer[32];
    if (unit == 0)
        std::snprintf(buffer, sizeof buffer, "%llu B", static_cast<unsigned long long>(bytes));
    else
        std::snprintf(buffer, sizeof buffer, "%.1f %s", value, kUnits[unit]);
    return buffer;
}

} // namespace uvmp

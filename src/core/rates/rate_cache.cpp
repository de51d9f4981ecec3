#include "core/rates/rate_cache.h"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>

namespace uvmp::rates {
namespace {

std::string set_variable(GetEnv getenv_fn, const char* name) {
    const char* value = getenv_fn(name);
    return value && *value ? std::string(value) : std::string();
}

std::string file_name_part(const std::string& text) {
    std::string out = text.empty() ? std::string("unknown") : text;
    for (char& c : out)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
    return out;
}

} // namespace

std::string cache_directory(GetEnv getenv_fn) {
    if (std::string dir = set_variable(getenv_fn, "UVMP_CACHE_DIR"); !dir.empty()) return dir;
    if (std::string xdg = set_variable(getenv_fn, "XDG_CACHE_HOME"); !xdg.empty())
        return (std::filesystem::path(xdg) / "uvmprefetch").string();
    if (std::string home = set_variable(getenv_fn, "HOME"); !home.empty())
        return (std::filesystem::path(home) / ".cache" / "uvmprefetch").string();
    return {};
}

std::string cache_file_path(const std::string& directory, const DeviceIdentity& device) {
    return (std::filesystem::path(directory) /
            fmt::format("link-rates-{}-driver-{}.json", file_name_part(device.uuid), file_name_part(device.driver_version)))
        .string();
}

std::optional<std::string> stale_reason(const LinkRates& cached, const DeviceIdentity& device, int64_t now_unix_s,
                                        int64_t max_age_seconds) {
    if (cached.device.uuid != device.uuid)
        return fmt::format("measured on device {}, not {}", cached.device.uuid, device.uuid);
    if (cached.device.driver_version != device.driver_version)
        return fmt::format("measured under driver {}, now {}", cached.device.driver_version, device.driver_version);
    if (cached.measured_unix_s <= 0) return "no time of measurement";
    // A clock set back leaves an entry from the future: measured again rather than trusted for ever.
    if (cached.measured_unix_s > now_unix_s) return "measured later than now";
    if (now_unix_s - cached.measured_unix_s > max_age_seconds)
        return fmt::format("measured {} days ago, more than {}", (now_unix_s - cached.measured_unix_s) / 86400,
                           max_age_seconds / 86400);
    return std::nullopt;
}

CacheLookup load_cached_rates(GetEnv getenv_fn, const DeviceIdentity& device, int64_t now_unix_s) {
    const std::string directory = cache_directory(getenv_fn);
    if (directory.empty()) return {std::nullopt, "no cache directory (UVMP_CACHE_DIR, XDG_CACHE_HOME and HOME unset)"};
    const std::string path = cache_file_path(directory, device);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return {std::nullopt, fmt::format("no cache entry {}", path)};
    try {
        LinkRates cached = read_rates_file(path, Source::Cache);
        if (auto stale = stale_reason(cached, device, now_unix_s))
            return {std::nullopt, fmt::format("cache entry {} is stale: {}", path, *stale)};
        return {std::move(cached), {}};
    } catch (const RatesFileError& e) {
        return {std::nullopt, e.what()};
    }
}

std::optional<std::string> store_cached_rates(GetEnv getenv_fn, const LinkRates& rates, std::string* error) {
    const std::string directory = cache_directory(getenv_fn);
    if (directory.empty()) {
        if (error) *error = "no cache directory (UVMP_CACHE_DIR, XDG_CACHE_HOME and HOME unset)";
        return std::nullopt;
    }
    const std::string path = cache_file_path(directory, rates.device);
    try {
        write_rates_file(path, rates);
    } catch (const std::exception& e) {
        if (error) *error = e.what();
        return std::nullopt;
    }
    return path;
}

} // namespace uvmp::rates

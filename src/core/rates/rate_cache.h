// Where a device's measured rates are kept between runs, and when they are
// measured again. One file a GPU and driver version, under
// $UVMP_CACHE_DIR, else $XDG_CACHE_HOME/uvmprefetch, else ~/.cache/uvmprefetch.
// An entry is stale, and the probe runs again, once it is older than
// kMaxCacheAgeSeconds (a link changes with the slot, the BIOS or the IOMMU
// settings, which an upgrade of neither device nor driver shows), or when it
// names another device or driver than the one in use.
#pragma once

#include "core/rates/link_rates.h"

#include <cstdint>
#include <optional>
#include <string>

namespace uvmp::rates {

inline constexpr int64_t kMaxCacheAgeSeconds = 30ll * 24 * 3600;

using GetEnv = const char* (*)(const char*);

// The cache directory by the rule above; empty when none of the variables is
// set (no HOME either): the library then probes every run.
std::string cache_directory(GetEnv getenv_fn);
// The file for one device and driver within `directory`. Characters other than
// letters, digits, '-' and '.' of the UUID and version become '_'.
std::string cache_file_path(const std::string& directory, const DeviceIdentity& device);

// Why a cache entry cannot stand for `device` at `now_unix_s`, or nullopt.
std::optional<std::string> stale_reason(const LinkRates& cached, const DeviceIdentity& device, int64_t now_unix_s,
                                        int64_t max_age_seconds = kMaxCacheAgeSeconds);

struct CacheLookup {
    std::optional<LinkRates> rates; // Source::Cache
    std::string why_not;            // when none: absent, unreadable, stale (for the log)
};
CacheLookup load_cached_rates(GetEnv getenv_fn, const DeviceIdentity& device, int64_t now_unix_s);
// Writes the probe's (or the run's refined) rates for `rates.device`. Returns
// the path written, or nullopt with `error` filled: a cache that cannot be
// written only costs the next run a probe.
std::optional<std::string> store_cached_rates(GetEnv getenv_fn, const LinkRates& rates, std::string* error = nullptr);

} // namespace uvmp::rates

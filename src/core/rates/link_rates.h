// How fast data crosses between host and GPU on the device the library runs
// on, and where those figures came from. Every placement decision, the home
// search and the simulator take their rates from one of these; a value nobody
// measured holds the reference figures (reference.h) and says so.
#pragma once

#include "core/rates/reference.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace uvmp::rates {

enum class Source : uint8_t {
    Reference, // nothing measured: the H200 figures of reference.h
    Probe,     // measured on this device when the library first used it
    Cache,     // a probe's result read back from the user's cache
    File,      // a file given by hand (uvmtrace simulate --rates)
    Refined,   // corrected from the timings of the library's own moves in the run
};

std::string_view to_string(Source source);

// The device and driver a measurement belongs to: another driver or device
// means another measurement (rate_cache.h).
struct DeviceIdentity {
    std::string name;           // "NVIDIA H100 80GB HBM3"
    std::string uuid;           // "GPU-5c1e..."
    std::string driver_version; // "580.159.04"
    bool operator==(const DeviceIdentity&) const = default;
};

struct LinkRates {
    double fetch_gbps = kReferenceFetchGbps;
    double evict_gbps = kReferenceEvictGbps;
    double remote_write_gbps = kReferenceRemoteWriteGbps;
    double remote_read_gbps = kReferenceRemoteReadGbps;
    double memory_gbps = kReferenceMemoryGbps;
    // Fresh pages made on the GPU by a prefetch: a block over memory no one has
    // touched costs this, not a fetch.
    double populate_gbps = kReferencePopulateGbps;
    Source source = Source::Reference;
    DeviceIdentity device;      // empty for the reference
    int64_t measured_unix_s = 0; // when the probe ran; 0 when unknown

    bool measured() const { return source != Source::Reference; }
};

// What a rates file holds wrong, for callers that tell the cases apart (a
// cache entry that is merely unreadable is probed again; a file named by hand
// stops the command).
class RatesFileError : public std::runtime_error {
public:
    enum class Kind { Unreadable, NotJson, MissingField, BadValue };
    RatesFileError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
    Kind kind() const { return kind_; }

private:
    Kind kind_;
};

// The file format: {"format": "uvmprefetch-link-rates", "version": 1,
// "fetch_gbps", "evict_gbps", "remote_write_gbps", "remote_read_gbps",
// "memory_gbps" (positive numbers, required), "populate_gbps" (a positive
// number; a file without it takes the fetch rate, as the figures were used before
// it was measured, and a cache entry without it is measured again), "source",
// "device": {"name", "uuid", "driver_version"}, "measured_unix_s" (optional)}.
nlohmann::json to_json(const LinkRates& rates);
// `loaded_as`: the source the rates take once read (Cache or File); the
// file's own "source" says how they were measured and is not kept. Throws
// RatesFileError naming `origin` (a path, for the message).
LinkRates rates_from_json(const nlohmann::json& json, Source loaded_as, std::string_view origin);
LinkRates read_rates_file(const std::string& path, Source loaded_as = Source::File);
// Writes to a temporary file beside `path` and renames it over, so that a
// process reading the cache never sees half a file. Throws std::runtime_error.
void write_rates_file(const std::string& path, const LinkRates& rates);

// One line: the figures and where they came from.
std::string describe(const LinkRates& rates);

} // namespace uvmp::rates

#include "core/rates/link_rates.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace uvmp::rates {
namespace {

constexpr std::string_view kFormat = "uvmprefetch-link-rates";
constexpr int kVersion = 1;

struct RateField {
    const char* key;
    double LinkRates::*member;
};
constexpr RateField kRateFields[] = {
    {"fetch_gbps", &LinkRates::fetch_gbps},
    {"evict_gbps", &LinkRates::evict_gbps},
    {"remote_write_gbps", &LinkRates::remote_write_gbps},
    {"remote_read_gbps", &LinkRates::remote_read_gbps},
    {"memory_gbps", &LinkRates::memory_gbps},
};
constexpr RateField kPopulateField{"populate_gbps", &LinkRates::populate_gbps};

double positive_rate(const nlohmann::json& value, const char* key, std::string_view origin) {
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0)
        throw RatesFileError(RatesFileError::Kind::BadValue,
                             fmt::format("rates file '{}': '{}' must be a positive number of GB/s, got {}", origin, key,
                                         value.dump()));
    return value.get<double>();
}

std::string text_field(const nlohmann::json& object, const char* key, std::string_view origin) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return {};
    if (!it->is_string())
        throw RatesFileError(RatesFileError::Kind::BadValue,
                             fmt::format("rates file '{}': '{}' must be text, got {}", origin, key, it->dump()));
    return it->get<std::string>();
}

} // namespace

std::string_view to_string(Source source) {
    switch (source) {
    case Source::Reference: return "reference";
    case Source::Probe: return "probe";
    case Source::Cache: return "cache";
    case Source::File: return "file";
    case Source::Refined: return "refined";
    }
    return "reference";
}

nlohmann::json to_json(const LinkRates& rates) {
    nlohmann::json j = {{"format", kFormat}, {"version", kVersion}};
    for (const RateField& field : kRateFields) j[field.key] = rates.*field.member;
    j[kPopulateField.key] = rates.*kPopulateField.member;
    j["source"] = to_string(rates.source);
    j["device"] = {{"name", rates.device.name},
                   {"uuid", rates.device.uuid},
                   {"driver_version", rates.device.driver_version}};
    j["measured_unix_s"] = rates.measured_unix_s;
    return j;
}

LinkRates rates_from_json(const nlohmann::json& json, Source loaded_as, std::string_view origin) {
    using Kind = RatesFileError::Kind;
    if (!json.is_object())
        throw RatesFileError(Kind::NotJson, fmt::format("rates file '{}': expected a JSON object", origin));
    if (const auto format = json.find("format"); format != json.end() && *format != kFormat)
        throw RatesFileError(Kind::BadValue, fmt::format("rates file '{}': format {} is not {}", origin,
                                                         format->dump(), kFormat));
    if (const auto version = json.find("version");
        version != json.end() && !(version->is_number_integer() && version->get<int64_t>() == kVersion))
        throw RatesFileError(Kind::BadValue, fmt::format("rates file '{}': version {} is not {} (written by a newer "
                                                         "library?)", origin, version->dump(), kVersion));
    LinkRates rates;
    for (const RateField& field : kRateFields) {
        const auto it = json.find(field.key);
        if (it == json.end())
            throw RatesFileError(Kind::MissingField, fmt::format("rates file '{}': missing '{}' (GB/s)", origin, field.key));
        rates.*field.member = positive_rate(*it, field.key, origin);
    }
    if (const auto it = json.find(kPopulateField.key); it != json.end())
        rates.*kPopulateField.member = positive_rate(*it, kPopulateField.key, origin);
    else if (loaded_as == Source::Cache)
        throw RatesFileError(Kind::MissingField, fmt::format("rates file '{}': missing '{}' (GB/s)", origin,
                                                             kPopulateField.key));
    else
        rates.populate_gbps = rates.fetch_gbps;
    rates.source = loaded_as;
    if (const auto device = json.find("device"); device != json.end() && !device->is_null()) {
        if (!device->is_object())
            throw RatesFileError(Kind::BadValue, fmt::format("rates file '{}': 'device' must be an object", origin));
        rates.device = {text_field(*device, "name", origin), text_field(*device, "uuid", origin),
                        text_field(*device, "driver_version", origin)};
    }
    if (const auto measured = json.find("measured_unix_s"); measured != json.end() && !measured->is_null()) {
        if (!measured->is_number_integer() || measured->get<int64_t>() < 0)
            throw RatesFileError(Kind::BadValue, fmt::format("rates file '{}': 'measured_unix_s' must be seconds since "
                                                             "1970, got {}", origin, measured->dump()));
        rates.measured_unix_s = measured->get<int64_t>();
    }
    return rates;
}

LinkRates read_rates_file(const std::string& path, Source loaded_as) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in)
        throw RatesFileError(RatesFileError::Kind::Unreadable, fmt::format("rates file '{}': cannot read it", path));
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::parse_error& e) {
        throw RatesFileError(RatesFileError::Kind::NotJson, fmt::format("rates file '{}': not JSON ({})", path, e.what()));
    }
    return rates_from_json(json, loaded_as, path);
}

void write_rates_file(const std::string& path, const LinkRates& rates) {
    namespace fs = std::filesystem;
    const fs::path target(path);
    std::error_code ec;
    if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
    // One temporary name a process: writers racing on the same entry each rename a whole file.
    const std::string temporary = fmt::format("{}.{}.tmp", path, ::getpid());
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out << to_json(rates).dump(2) << "\n";
        if (!out) throw std::runtime_error(fmt::format("cannot write the rates file '{}'", temporary));
    }
    fs::rename(temporary, target, ec);
    if (ec) {
        fs::remove(temporary, ec);
        throw std::runtime_error(fmt::format("cannot write the rates file '{}'", path));
    }
}

std::string describe(const LinkRates& rates) {
    std::string text = fmt::format("fetch {:g}, evict {:g}, remote write {:g}, remote read {:g}, memory {:g}, populate "
                                   "{:g} GB/s ({}",
                                   rates.fetch_gbps, rates.evict_gbps, rates.remote_write_gbps, rates.remote_read_gbps,
                                   rates.memory_gbps, rates.populate_gbps, to_string(rates.source));
    if (!rates.device.name.empty()) text += fmt::format(", {}", rates.device.name);
    if (!rates.device.driver_version.empty()) text += fmt::format(", driver {}", rates.device.driver_version);
    if (rates.measured_unix_s > 0) {
        const std::time_t when = rates.measured_unix_s;
        std::tm utc{};
        gmtime_r(&when, &utc);
        char day[16];
        std::strftime(day, sizeof day, "%Y-%m-%d", &utc);
        text += fmt::format(", measured {}", day);
    }
    return text + ")";
}

} // namespace uvmp::rates

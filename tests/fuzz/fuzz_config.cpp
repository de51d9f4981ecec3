// libFuzzer target: the configuration, read from the environment and from a TOML
// file, must come back as a Config or as one error sentence, never a crash, a hang
// or an exception (the library reads it in its constructor, inside the job); and
// whatever it accepts must keep the rules the rest of the library relies on.
//
// Input: lines of the environment, each a byte that picks an option of the table
// (modulo its size) followed by the variable's value; then a NUL and the text of
// the TOML file named by UVMP_CONFIG (no file when there is no NUL).
#include "core/config/options.h"
#include "core/util/size_parse.h"

#include <unistd.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>

namespace {

std::map<std::string, std::string> g_env;

const char* fuzzed_getenv(const char* name) {
    const auto it = g_env.find(name);
    return it == g_env.end() ? nullptr : it->second.c_str();
}

void require(bool holds) {
    if (!holds) __builtin_trap();
}

// The parsers on their own, on any text.
void parse_alone(std::string_view text) {
    if (const auto bytes = uvmp::parse_size(text)) (void)uvmp::format_size(*bytes);
    if (const auto budget = uvmp::parse_size_or_percent(text)) (void)budget->resolve(~uint64_t{0});
    (void)uvmp::parse_duration_ns(text);
    (void)uvmp::expand_path_pattern(text, 4242, &fuzzed_getenv);
}

void check_accepted(const uvmp::Config& config) {
    const auto table = uvmp::option_table();
    require(config.values.size() == table.size());
    // What was kept is what validation accepts, option by option.
    for (size_t i = 0; i < table.size(); ++i) {
        require(config.values[i].first == table[i].key);
        require(!uvmp::validate_option_value(table[i], config.values[i].second, table[i].env));
    }
    require(config.chunk_size >= (2u << 20) && std::has_single_bit(config.chunk_size));
    require(config.pool_slab_size >= (2u << 20) && config.pool_slab_size % config.chunk_size == 0);
    require(!config.budget || config.budget->is_percent || config.budget->bytes > 0);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t nul = input.find('\0');
    std::string_view lines = input.substr(0, nul);
    const auto table = uvmp::option_table();

    g_env.clear();
    while (!lines.empty()) {
        const size_t end = lines.find('\n');
        const std::string_view line = lines.substr(0, end);
        lines = end == std::string_view::npos ? std::string_view() : lines.substr(end + 1);
        if (line.empty()) continue;
        const uvmp::OptionSpec& spec = table[static_cast<unsigned char>(line.front()) % table.size()];
        const std::string_view value = line.substr(1);
        parse_alone(value);
        (void)uvmp::validate_option_value(spec, value, spec.env);
        g_env[std::string(spec.env)] = std::string(value);
    }

    static const std::string path =
        (std::filesystem::temp_directory_path() / ("fuzz-config-" + std::to_string(getpid()) + ".toml")).string();
    if (nul != std::string_view::npos) {
        std::ofstream(path, std::ios::binary | std::ios::trunc) << input.substr(nul + 1);
        g_env["UVMP_CONFIG"] = path;
    }

    uvmp::Config config;
    const auto error = uvmp::load_config(config, &fuzzed_getenv);
    std::remove(path.c_str());
    // The library prints the error as its one line to the job's stderr.
    if (error)
        require(!error->message.empty() && error->message.find_first_of("\n\r") == std::string::npos);
    else
        check_accepted(config);
    return 0;
}

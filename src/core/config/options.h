// The one table of every configuration knob: environment name, file key, type,
// default, help and the Config field it sets. Config's defaults, the library,
// uvmrun --help and docs/configuration.md all come from it.
#pragma once

#include "core/rates/streaming_line.h"
#include "core/util/log_level.h"
#include "core/util/size_parse.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uvmp {

enum class OptionType { Bool, Size, SizeOrPercent, Choice, Path, Text, Duration, Rate };

enum class ResidencyPolicy { None, DemandLru, Learned };
enum class Populate { Off, Prefetch };

// Where the managed pool puts a block of a chunk or more (core/pool/placement_hint.h).
enum class PoolPlacement : uint8_t {
    OverDead, // over dead bytes still on the GPU where there are any among the pieces that hold it, else best fit
    BestFit,
};

// Whether a layout planned for the learned step places the pool's blocks once
// homes are learned (core/pool/step_layout.h): Auto, where simulating the
// learned steps says it pays (core/homesearch/recorded_homes.h).
enum class LayoutChoice : uint8_t { Off, Auto, On };

// Where converted allocations may live (core/placement): Off, every one on the
// GPU; On, host homes learned from UVMP_TRACE_IN; Auto, from UVMP_TRACE_IN when
// given, else learned within the run once it goes over its budget.
enum class HostHomes { Off, On, Auto };

struct Config;

// One row of the table: everything about an option is declared here, once,
// including the Config field it sets and how (built by option() and choice() in
// options.cpp, which check that the field's type fits the option's type).
struct OptionSpec {
    std::string_view key;      // file key, e.g. "budget"
    std::string_view env;      // environment variable, e.g. "UVMP_BUDGET"
    OptionType type;
    std::string_view default_text;
    std::string_view choices;  // Choice: "a|b|c"
    std::string_view help;
    // Sets the option's field from a value that validate_option_value accepted.
    void (*store)(Config& config, const OptionSpec& spec, std::string_view value);
    // The field it sets, and whether two configurations agree on it: for the
    // tests that hold each field to one row and each default to its row's.
    const void* (*field)(const Config& config);
    bool (*same)(const Config& a, const Config& b);
};

std::span<const OptionSpec> option_table();
const OptionSpec* find_option(std::string_view key_or_env);

// Effective configuration after defaults, the file named by UVMP_CONFIG and the
// environment (environment wins). A default-constructed Config holds every
// row's default (Config() applies the table), so no default is written here.
struct Config {
    Config();

    bool enable{};
    std::optional<SizeOrPercent> budget; // unset: the physical guard's limit
    uint64_t reserve{};
    bool allow_physical_oversubscription{};
    std::optional<SizeOrPercent> host_reserve; // core/hostmem/host_memory.h; unset: the default 5%
    std::string host_memory_root;              // tests only: a fake /proc and /sys/fs/cgroup
    ResidencyPolicy policy{};
    Populate populate{};
    LogLevel log_level{};
    std::string log_file;
    bool summary{};
    std::string stats_file;
    std::string trace_out;
    bool trace_timing{};
    uint64_t trace_buffer{};
    std::string trace_in;
    HostHomes host_homes{};   // core/homesearch/recorded_homes.h, driver/homes/home_learner.h
    std::string link_rates;   // UVMP_RATES: auto, probe, reference or a rates file (driver/rates/device_rates.h)
    rates::StreamingSetting streaming_gbps; // auto: the line of the rates in use (core/rates/streaming_line.h)
    bool remote_trial{};      // core/placement/remote_trial.h
    bool earlier_homes{};     // host homes for allocations made before the learned step (driver/homes/home_learner.h)
    bool host_pages_ahead{};  // host slabs' pages made by host threads (driver/hostmem/host_page_maker.h)
    uint64_t chunk_size{};
    uint64_t pool_slab_size{};     // the managed pool's slabs
    uint64_t pool_retain{};        // wholly free slabs kept however long unused
    uint64_t pool_release_after{}; // ns: idle slabs given back after this
    PoolPlacement pool_placement{};
    LayoutChoice step_layout{};
    bool hide_managed{};
    bool verbose{};
    std::string framework_settings; // NAME=VALUE that uvmrun set for the job's framework

    // Every option's effective value as text, in table order (for --verbose and traces);
    // load_config fills it.
    std::vector<std::pair<std::string, std::string>> values;
};

struct ConfigError {
    std::string message; // one sentence on one line: which variable/key, which value, what is accepted
};

// Checks one value against its option's type. Returns an error sentence or nullopt.
std::optional<std::string> validate_option_value(const OptionSpec& spec, std::string_view value,
                                                 std::string_view source_name);

// Reads defaults, then the TOML file named by UVMP_CONFIG (if any), then UVMP_* variables.
// getenv_fn lets tests supply an environment. On the first bad value returns the error.
using GetEnv = const char* (*)(const char*);
// The process environment, as a GetEnv.
const char* process_getenv(const char* name);
std::optional<ConfigError> load_config(Config& out, GetEnv getenv_fn);

// A positive rate (a plain decimal number such as 1600 or 400.5).
std::optional<double> parse_rate(std::string_view text);

// A duration as people write it, in nanoseconds: "10s", "500ms", "2m", "1.5h",
// "250us", "100ns"; a plain number is seconds.
std::optional<uint64_t> parse_duration_ns(std::string_view text);

// The process's rank in a distributed job (RANK, else LOCAL_RANK, as torchrun
// and most launchers set them), or nullopt outside one.
std::optional<int> process_rank(GetEnv getenv_fn);

// Expands %p (pid) and %r (rank, from RANK or LOCAL_RANK, else 0) in a path.
std::string expand_path_pattern(std::string_view pattern, int pid, GetEnv getenv_fn);

std::string_view to_string(ResidencyPolicy p);
std::string_view to_string(LogLevel l);
std::string_view to_string(HostHomes h);

} // namespace uvmp

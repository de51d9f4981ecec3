#include "core/config/options.h"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <type_traits>

namespace uvmp {
namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::optional<bool> parse_bool(std::string_view text) {
    const std::string v = lower(text);
    if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
    if (v == "0" || v == "false" || v == "no" || v == "off") return false;
    return std::nullopt;
}

// Where value stands among choices ("a|b|c"), or nullopt.
std::optional<size_t> choice_index(std::string_view choices, std::string_view value) {
    size_t start = 0;
    for (size_t index = 0; start <= choices.size(); ++index) {
        const size_t bar = choices.find('|', start);
        const size_t end = bar == std::string_view::npos ? choices.size() : bar;
        if (choices.substr(start, end - start) == value) return index;
        if (bar == std::string_view::npos) break;
        start = bar + 1;
    }
    return std::nullopt;
}

// An option's value as its field holds it, from text that validation accepted.
template <OptionType Type>
auto parsed(std::string_view value) {
    if constexpr (Type == OptionType::Bool) return *parse_bool(value);
    else if constexpr (Type == OptionType::Size) return *parse_size(value);
    else if constexpr (Type == OptionType::SizeOrPercent)
        return value.empty() ? std::optional<SizeOrPercent>() : parse_size_or_percent(value);
    else if constexpr (Type == OptionType::Duration) return *parse_duration_ns(value);
    else if constexpr (Type == OptionType::Rate)
        return rates::StreamingSetting{value == "auto" ? std::nullopt : parse_rate(value)};
    else return std::string(value);
}

template <class Field>
bool same_value(const Field& a, const Field& b) {
    return a == b;
}

bool same_value(const rates::StreamingSetting& a, const rates::StreamingSetting& b) {
    return a.explicit_gbps == b.explicit_gbps;
}

bool same_value(const std::optional<SizeOrPercent>& a, const std::optional<SizeOrPercent>& b) {
    if (!a || !b) return a.has_value() == b.has_value();
    return a->is_percent == b->is_percent && a->bytes == b->bytes && a->percent == b->percent;
}

template <class Member>
struct MemberField;
template <class Field>
struct MemberField<Field Config::*> {
    using type = Field;
};
template <auto Member>
using FieldOf = typename MemberField<decltype(Member)>::type;

template <auto Member>
const void* field_of(const Config& config) {
    return &(config.*Member);
}

template <auto Member>
bool same_field(const Config& a, const Config& b) {
    return same_value(a.*Member, b.*Member);
}

// A row of any type but Choice, setting the field Member.
template <OptionType Type, auto Member>
constexpr OptionSpec option(std::string_view key, std::string_view env, std::string_view default_text,
                            std::string_view help) {
    static_assert(Type != OptionType::Choice, "a choice is declared with choice()");
    static_assert(std::is_same_v<FieldOf<Member>, decltype(parsed<Type>(std::string_view()))>,
                  "the field must hold what the option's type reads");
    return {key, env, Type, default_text, "", help,
            [](Config& config, const OptionSpec&, std::string_view value) { config.*Member = parsed<Type>(value); },
            &field_of<Member>, &same_field<Member>};
}

// A Choice row setting the field Member to the value of Values that stands where
// the text chosen stands in choices ("a|b|c"), whatever the enum's own order.
template <auto Member, auto... Values>
constexpr OptionSpec choice(std::string_view key, std::string_view env, std::string_view default_text,
                            std::string_view choices, std::string_view help) {
    static_assert((std::is_same_v<FieldOf<Member>, decltype(Values)> && ...),
                  "the values must be of the field's type");
    // Reached while the table is built, this stops the build: every choice needs a value.
    if (static_cast<size_t>(std::count(choices.begin(), choices.end(), '|')) + 1 != sizeof...(Values))
        throw std::invalid_argument("a choice row needs one value for each of its choices");
    return {key, env, OptionType::Choice, default_text, choices, help,
            [](Config& config, const OptionSpec& spec, std::string_view value) {
                constexpr std::array kValues{Values...};
                if (const auto index = choice_index(spec.choices, value)) config.*Member = kValues[*index];
            },
            &field_of<Member>, &same_field<Member>};
}

constexpr std::array kOptions = {
    option<OptionType::Bool, &Config::enable>("enable", "UVMP_ENABLE", "1",
        "Master switch. 0 makes the library a pure pass-through."),
    option<OptionType::SizeOrPercent, &Config::budget>("budget", "UVMP_BUDGET", "",
        "GPU memory the job may keep resident (an emulated capacity): bytes with K/M/G/T "
        "suffixes, or a percentage of the device's memory. Unset: the physical guard's limit; "
        "0 is refused (leave it unset for no budget)."),
    option<OptionType::Size, &Config::reserve>("reserve", "UVMP_RESERVE", "1G",
        "Physical guard: converted (managed) memory never exceeds the device's free memory "
        "at start less this reserve."),
    option<OptionType::Bool, &Config::allow_physical_oversubscription>(
        "allow_physical_oversubscription", "UVMP_ALLOW_PHYSICAL_OVERSUBSCRIPTION", "0",
        "Lift the physical guard: let managed memory exceed the device's free memory. A "
        "shared GPU can stall for everyone; use the budget instead."),
    option<OptionType::SizeOrPercent, &Config::host_reserve>("host_reserve", "UVMP_HOST_RESERVE", "5%",
        "Host memory guard: host-homed slabs and evictions to the host are made only while the host "
        "memory left to the job (MemAvailable, and the room under its cgroup's memory limit, the "
        "smaller) stays above this reserve: a size, or a percentage of the job's host memory (the "
        "smaller of MemTotal and the cgroup limit) of at least 1G. Short of it, allocations are "
        "homed on the GPU and evictions are not made (the budget is exceeded rather than the job "
        "killed for memory); 0 keeps no reserve."),
    option<OptionType::Path, &Config::host_memory_root>("host_memory_root", "UVMP_HOST_MEMORY_ROOT", "",
        "For tests only: the host memory guard reads proc/meminfo, proc/self/cgroup and sys/fs/cgroup "
        "under this folder instead of the machine's own."),
    choice<&Config::policy, ResidencyPolicy::None, ResidencyPolicy::DemandLru, ResidencyPolicy::Learned>(
        "policy", "UVMP_POLICY", "learned", "none|demand-lru|learned",
        "Residency policy under the budget: none (convert only; past the budget the driver "
        "alone decides what stays on the GPU), demand-lru (evict least recently used, no "
        "prefetch), learned (prefetch and evict from the learned trace)."),
    choice<&Config::populate, Populate::Off, Populate::Prefetch>(
        "populate", "UVMP_POPULATE", "prefetch", "off|prefetch",
        "Place fresh allocations on the GPU from the library's worker thread while the job "
        "is within its budget, so kernels do not fault on first touch; off leaves that to the "
        "first touch, under every policy."),
    option<OptionType::Size, &Config::chunk_size>("chunk_size", "UVMP_CHUNK_SIZE", "2M",
        "Granularity of the residency model: a power of two of at least 2M (the driver's large "
        "pages), such as 2M, 4M or 64M; the pool's slab size must be a multiple of it."),
    option<OptionType::Size, &Config::pool_slab_size>("pool_slab_size", "UVMP_POOL_SLAB_SIZE", "1G",
        "Size of the managed slabs the pool carves device allocations from (a multiple of 2M and of "
        "the chunk size); "
        "a larger request gets a slab of its own."),
    option<OptionType::Size, &Config::pool_retain>("pool_retain", "UVMP_POOL_RETAIN", "0",
        "Wholly free slabs the pool keeps however long they go unused (the most recently used "
        "are kept); beyond it, idle slabs are given back."),
    choice<&Config::pool_placement, PoolPlacement::OverDead, PoolPlacement::BestFit>(
        "pool_placement", "UVMP_POOL_PLACEMENT", "over-dead", "over-dead|best-fit",
        "Where the pool puts a block of a chunk or more: over-dead places it over memory that freed "
        "blocks left on the GPU where it can, once the budget has bound (under a policy, whose model "
        "knows where that is), so that it finds its pages there and they need not be evicted; "
        "best-fit takes the smallest free piece that holds it, wherever its pages are."),
    choice<&Config::step_layout, LayoutChoice::Auto, LayoutChoice::On, LayoutChoice::Off>(
        "step_layout", "UVMP_STEP_LAYOUT", "auto", "auto|on|off",
        "Whether the blocks of the steps after the learned one go where a layout planned for that step "
        "puts them (each block where it lay a step before, the step's blocks packed into its peak of live "
        "bytes, in an arena apart from the pool's slabs), once homes are learned (UVMP_HOST_HOMES): auto "
        "where simulating the learned steps says it moves out at most 1/16 of the budget a step and is at "
        "most 5% slower than blocks placed as they come; on whenever homes are learned; off never."),
    option<OptionType::Duration, &Config::pool_release_after>("pool_release_after", "UVMP_POOL_RELEASE_AFTER", "10s",
        "A wholly free slab unused this long is given back to the driver: a duration such as "
        "10s, 500ms or 2m (a plain number is seconds). Once the budget has bound, slabs go as soon "
        "as they are wholly free: their dead bytes then leave the GPU without an eviction."),
    option<OptionType::Bool, &Config::hide_managed>("hide_managed", "UVMP_HIDE_MANAGED", "1",
        "Pointer-attribute queries report converted allocations as device memory, so "
        "frameworks keep their device-memory paths."),
    choice<&Config::log_level, LogLevel::Trace, LogLevel::Debug, LogLevel::Info, LogLevel::Warn,
           LogLevel::Error, LogLevel::Off>(
        "log_level", "UVMP_LOG_LEVEL", "warn", "trace|debug|info|warn|error|off",
        "Least severe message that is logged."),
    option<OptionType::Path, &Config::log_file>("log_file", "UVMP_LOG_FILE", "",
        "Log to this file instead of stderr (%p: process id)."),
    option<OptionType::Bool, &Config::summary>("summary", "UVMP_SUMMARY", "0",
        "Print a summary of the counters at exit (uvmrun turns it on)."),
    option<OptionType::Path, &Config::stats_file>("stats_file", "UVMP_STATS_FILE", "",
        "Write the counters as JSON at exit (%p: process id, %r: rank)."),
    option<OptionType::Path, &Config::trace_out>("trace_out", "UVMP_TRACE_OUT", "",
        "Record an access trace to this file (%p: process id, %r: rank)."),
    option<OptionType::Bool, &Config::trace_timing>("trace_timing", "UVMP_TRACE_TIMING", "0",
        "Record kernel durations in the trace (CUPTI)."),
    option<OptionType::Size, &Config::trace_buffer>("trace_buffer", "UVMP_TRACE_BUFFER", "64M",
        "Memory for trace records not yet written; past it records are dropped and "
        "counted."),
    option<OptionType::Path, &Config::trace_in>("trace_in", "UVMP_TRACE_IN", "",
        "With policy learned: start from the last iteration of this earlier trace of the "
        "same program (allocations matched by order and size) instead of learning it first. "
        "With UVMP_HOST_HOMES=auto or on: the trace the host homes are learned from."),
    choice<&Config::host_homes, HostHomes::Auto, HostHomes::On, HostHomes::Off>(
        "host_homes", "UVMP_HOST_HOMES", "auto", "auto|on|off",
        "With policy learned and UVMP_BUDGET: allocations whose every reader streams them (judged "
        "from kernel timings) live on the host, read and written remotely by the GPU and never "
        "migrated, where simulating the step says that shortens it by 10% or more. auto: learned "
        "from UVMP_TRACE_IN when given, else within the run: once the job goes over its budget, "
        "its next steps are recorded in memory with kernel timing, and the allocations of the "
        "steps after them are homed by order and size. on: only from UVMP_TRACE_IN, an earlier "
        "trace of the same program recorded with UVMP_TRACE_TIMING=1. off: every allocation is "
        "homed on the GPU (migration only)."),
    option<OptionType::Text, &Config::link_rates>("rates", "UVMP_RATES", "auto",
        "The link rates (fetch, eviction, remote write and read, memory bandwidth) host homes and the "
        "streaming line are judged by. auto: on a device's first use under a budget, those kept for "
        "that GPU and driver in the cache ($UVMP_CACHE_DIR, else $XDG_CACHE_HOME/uvmprefetch or "
        "~/.cache/uvmprefetch; 30 days), else measured by a probe of well under a second on a 128 MiB "
        "buffer within the physical guard, and kept there. probe: measured every run. reference: the "
        "H200 figures, never measured. Any other value is a rates file (uvmrun --probe-rates writes "
        "one); one that cannot be read is said in one line and the reference figures are used. "
        "Without a budget nothing is measured."),
    option<OptionType::Rate, &Config::streaming_gbps>("streaming_gbps", "UVMP_STREAMING_GBPS", "auto",
        "With host homes: the rate, in GB of named operands per second of a kernel's local run time, "
        "from which a kernel counts as streaming its operands, so that data only such kernels touch "
        "may live on the host (each named byte counted once), where remote trials then time them. "
        "auto: derived from the link rates measured on the device, the memory bandwidth over the reads "
        "of a byte from the host that cost as much as evicting and fetching it (about 1080 on an H200, "
        "1510 on an H100; docs/design.md, \"Rates and the streaming line\"), or 600 where no rates "
        "were measured. On the H200 GPT-2 small's elementwise kernels run at 2600-4400, most of its "
        "GEMMs at 1200-1700 and resnet50's batch-norm kernels at 440-1280. Lower judges more kernels "
        "tolerant of remote operands, and lets remote trials allow more time to a launch kind the run "
        "never timed with its data in place (held to this rate); higher keeps more data on the GPU. "
        "`uvmtrace simulate --homes auto --streaming-gbps R` shows what a value does on a recorded trace."),
    option<OptionType::Bool, &Config::remote_trial>("remote_trial", "UVMP_REMOTE_TRIAL", "1",
        "With host homes learned in the run: time the kernels of the second step run with them, and "
        "give back its GPU home to any allocation whose readers ran slower with it on the host (past "
        "their local time plus two trips of its bytes over the link) by more than migrating it would "
        "cost; if the steps after run slower, those allocations go back to the host. 0 keeps the "
        "homes the timing prior chose."),
    option<OptionType::Bool, &Config::earlier_homes>("earlier_homes", "UVMP_EARLIER_HOMES", "1",
        "With host homes learned in the run, where the step's own allocations gain too little on the "
        "host: allocations made before the learned step and live in it (weights, optimizer state, "
        "caches) are candidates too. Those chosen are moved to the host once, where they stay in "
        "their place (advised to live on the host and be reached by the GPU); remote trials give "
        "them back the GPU as they do the step's own. 0 homes only what the step makes."),
    option<OptionType::Bool, &Config::host_pages_ahead>("host_pages_ahead", "UVMP_HOST_PAGES_AHEAD", "0",
        "With host homes, 1: as each host slab is made, threads of the library (half the host's cores, "
        "at most 8) make its pages on the host by reading a byte of each, from its end, beside the "
        "application (5.4 GB/s on an H100 host, launches left alone), rather than "
        "leaving each page to the GPU's first write of it, a fault that makes pages at 2.8-5 GB/s inside "
        "the first step with homes. The pages' contents are left as they are. 0 leaves every page to "
        "the GPU; off by default until a GPU run shows what it gains."),
    option<OptionType::Bool, &Config::verbose>("verbose", "UVMP_VERBOSE", "0",
        "Print every option's effective value at start."),
    option<OptionType::Text, &Config::framework_settings>("framework_settings", "UVMP_FRAMEWORK_SETTINGS", "",
        "Set by uvmrun: the framework setting it chose so that the library sees every free, as "
        "NAME=VALUE (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync). The library says so in one "
        "line, once, and only in a process of that framework (docs/frameworks.md)."),
};

std::string accepted_text(const OptionSpec& spec) {
    switch (spec.type) {
    case OptionType::Bool: return "expected 1/0, true/false, yes/no or on/off";
    case OptionType::Size: return "expected a size such as 512M, 24G or 1073741824";
    case OptionType::SizeOrPercent:
        return "expected a size such as 512M or 24G, or a percentage such as 80%";
    case OptionType::Choice: {
        std::string s = "expected one of ";
        for (char c : spec.choices) s += c == '|' ? std::string(", ") : std::string(1, c);
        return s;
    }
    case OptionType::Path: return "expected a path";
    case OptionType::Text: return "expected text";
    case OptionType::Duration: return "expected a duration such as 10s, 500ms or 2m (a plain number is seconds)";
    case OptionType::Rate: return "expected auto or a positive number such as 1600 or 400.5";
    }
    return {};
}

// An error is one line on stderr: control characters of the value, a key or the
// TOML parser's description (which quotes the text it read) are written escaped.
std::string one_line(std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (byte < 0x20 || byte == 0x7f) out += std::string("\\x") + kHex[byte >> 4] + kHex[byte & 15];
        else out += c;
    }
    return out;
}

// Rules a well-typed value must also keep, for the library to work with it:
// the sentence saying what is allowed, or nullopt.
constexpr uint64_t kTwoMiB = 2ull << 20; // the driver's large pages

std::optional<std::string> broken_rule(const OptionSpec& spec, std::string_view value) {
    if (spec.key == "pool_slab_size") {
        const uint64_t bytes = *parse_size(value);
        if (bytes < kTwoMiB || bytes % kTwoMiB != 0)
            return "the pool's slab size must be a whole multiple of 2M, such as 2M, 64M or 512M";
    } else if (spec.key == "chunk_size") {
        // The residency model and the pool address chunks by shifts, and a chunk
        // smaller than a large page would split what the driver moves whole.
        const uint64_t bytes = *parse_size(value);
        if (bytes < kTwoMiB || !std::has_single_bit(bytes))
            return "the chunk size must be a power of two of at least 2M, such as 2M, 4M or 64M";
    } else if (spec.key == "budget" && !value.empty()) {
        const SizeOrPercent budget = *parse_size_or_percent(value);
        if (!budget.is_percent && budget.bytes == 0)
            return "a budget of 0 leaves the job no GPU memory; leave the budget unset for none (the physical "
                   "guard's limit), or give a size such as 24G or a percentage such as 80%";
    }
    return std::nullopt;
}

// Rules between options, checked once every value is known: the sentence, or nullopt.
std::optional<std::string> broken_combination(const std::vector<std::string>& values) {
    auto value_of = [&](std::string_view key) -> const std::string& {
        return values[static_cast<size_t>(find_option(key) - kOptions.data())];
    };
    const std::string& chunk = value_of("chunk_size");
    const std::string& slab = value_of("pool_slab_size");
    // The pool lays blocks of a chunk or more on chunk boundaries of their slab.
    if (*parse_size(slab) % *parse_size(chunk) != 0)
        return "invalid UVMP_POOL_SLAB_SIZE='" + slab + "' with UVMP_CHUNK_SIZE='" + chunk +
               "': the pool's slabs hold whole chunks, so the slab size must be a multiple of the chunk size";
    return std::nullopt;
}

// A TOML value as the text an environment variable would hold.
std::optional<std::string> toml_value_text(const toml::node& node) {
    if (auto s = node.value<std::string>()) return *s;
    if (auto b = node.value_exact<bool>()) return *b ? "1" : "0";
    if (auto i = node.value_exact<int64_t>()) return std::to_string(*i);
    if (auto d = node.value_exact<double>()) {
        std::ostringstream os;
        os << *d;
        return os.str();
    }
    return std::nullopt;
}

// toml++ 3.3 reaches undefined behaviour (an "unreachable" branch of its
// whitespace table) on some characters of U+00A1-U+0499, U+2C5E-U+3057 and
// U+FB26-U+FEFE where it looks for whitespace (tomlplusplus issues 190 and 295).
// A file holding one is refused before the parser sees it: the line, or nullopt.
std::optional<size_t> line_toml_mishandles(std::string_view text) {
    size_t line = 1;
    for (size_t i = 0; i < text.size(); ++i) {
        const auto lead = static_cast<unsigned char>(text[i]);
        if (lead == '\n') ++line;
        if (lead < 0xC2 || lead > 0xEF || i + 1 >= text.size()) continue;
        // Two- and three-byte sequences cover every code point concerned.
        const bool three = lead >= 0xE0;
        if (three && i + 2 >= text.size()) continue;
        const uint32_t c = three ? (lead & 0x0Fu) << 12 | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu) << 6 |
                                       (static_cast<unsigned char>(text[i + 2]) & 0x3Fu)
                                 : (lead & 0x1Fu) << 6 | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
        if (c <= 0xA0 || c >= 0xFEFF || c == 0x3000) continue;
        const uint32_t block = (c - 0xA0) / 0x3FA;
        if (block == 0 || block == 11 || block == 63) return line;
    }
    return std::nullopt;
}

std::optional<ConfigError> load_file(const std::string& path,
                                     std::vector<std::string>& values) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    if (!in) return ConfigError{"cannot read the config file '" + path + "' (UVMP_CONFIG)"};
    const std::string text = content.str();
    if (const auto line = line_toml_mishandles(text))
        return ConfigError{"cannot read the config file '" + path + "' (UVMP_CONFIG): line " + std::to_string(*line) +
                           " holds a character outside ASCII that the TOML parser mishandles; write the file in ASCII"};
    toml::table table;
    try {
        table = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
        std::ostringstream os;
        os << "cannot read the config file '" << path << "' (UVMP_CONFIG): " << e.description();
        if (e.source().begin) os << " at line " << e.source().begin.line;
        return ConfigError{os.str()};
    }
    for (const auto& [key, node] : table) {
        const OptionSpec* spec = nullptr;
        for (const auto& candidate : kOptions)
            if (candidate.key == key.str()) spec = &candidate;
        if (!spec)
            return ConfigError{"unknown key '" + std::string(key.str()) + "' in the config file '" +
                               path + "'; see uvmrun --help for the keys"};
        auto text = toml_value_text(node);
        const std::string source = "key '" + std::string(key.str()) + "' in " + path;
        if (!text) return ConfigError{"invalid " + source + ": " + accepted_text(*spec)};
        if (auto err = validate_option_value(*spec, *text, source)) return ConfigError{*err};
        values[static_cast<size_t>(spec - kOptions.data())] = *text;
    }
    return std::nullopt;
}

} // namespace

Config::Config() {
    for (const OptionSpec& spec : kOptions) spec.store(*this, spec, spec.default_text);
}

std::span<const OptionSpec> option_table() { return kOptions; }

const char* process_getenv(const char* name) { return std::getenv(name); }

const OptionSpec* find_option(std::string_view key_or_env) {
    for (const auto& spec : kOptions)
        if (spec.key == key_or_env || spec.env == key_or_env) return &spec;
    return nullptr;
}

std::optional<std::string> validate_option_value(const OptionSpec& spec, std::string_view value,
                                                 std::string_view source_name) {
    bool ok = true;
    switch (spec.type) {
    case OptionType::Bool: ok = parse_bool(value).has_value(); break;
    case OptionType::Size: ok = parse_size(value).has_value(); break;
    case OptionType::SizeOrPercent: ok = value.empty() || parse_size_or_percent(value).has_value(); break;
    case OptionType::Choice: ok = choice_index(spec.choices, value).has_value(); break;
    case OptionType::Path:
    case OptionType::Text: ok = true; break;
    case OptionType::Duration: ok = parse_duration_ns(value).has_value(); break;
    case OptionType::Rate: ok = value == "auto" || parse_rate(value).has_value(); break;
    }
    const std::string invalid = "invalid " + std::string(source_name) + "='" + std::string(value) + "': ";
    if (!ok) return one_line(invalid + accepted_text(spec));
    if (auto broken = broken_rule(spec, value)) return one_line(invalid + *broken);
    return std::nullopt;
}

std::optional<ConfigError> load_config(Config& out, GetEnv getenv_fn) {
    std::vector<std::string> values;
    for (const auto& spec : kOptions) values.emplace_back(spec.default_text);

    if (const char* path = getenv_fn("UVMP_CONFIG"); path && *path)
        if (auto err = load_file(path, values)) return ConfigError{one_line(err->message)};

    for (size_t i = 0; i < kOptions.size(); ++i) {
        const char* env = getenv_fn(std::string(kOptions[i].env).c_str());
        if (!env) continue;
        if (auto err = validate_option_value(kOptions[i], env, kOptions[i].env))
            return ConfigError{*err};
        values[i] = env;
    }

    if (auto broken = broken_combination(values)) return ConfigError{one_line(*broken)};

    Config config;
    for (size_t i = 0; i < kOptions.size(); ++i) {
        kOptions[i].store(config, kOptions[i], values[i]);
        config.values.emplace_back(std::string(kOptions[i].key), values[i]);
    }
    out = std::move(config);
    return std::nullopt;
}

std::optional<double> parse_rate(std::string_view text) {
    text = trim(text);
    double value = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::fixed);
    if (ec != std::errc{} || ptr != end || !std::isfinite(value) || value <= 0) return std::nullopt;
    return value;
}

std::optional<uint64_t> parse_duration_ns(std::string_view text) {
    auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    while (!text.empty() && space(text.front())) text.remove_prefix(1);
    while (!text.empty() && space(text.back())) text.remove_suffix(1);
    // Whole and fractional digits, read exactly (no locale, no rounding of 0.1).
    unsigned __int128 whole = 0, fraction = 0, fraction_scale = 1;
    size_t i = 0;
    bool digits = false;
    for (; i < text.size() && digit(text[i]); ++i, digits = true) {
        whole = whole * 10 + static_cast<unsigned>(text[i] - '0');
        if (whole > ~uint64_t{0}) return std::nullopt;
    }
    if (i < text.size() && text[i] == '.')
        for (++i; i < text.size() && digit(text[i]); ++i, digits = true)
            if (fraction_scale < 1'000'000'000'000'000'000ull) {
                fraction = fraction * 10 + static_cast<unsigned>(text[i] - '0');
                fraction_scale *= 10;
            }
    if (!digits) return std::nullopt;
    std::string_view unit = text.substr(i);
    while (!unit.empty() && space(unit.front())) unit.remove_prefix(1);
    const std::string u = lower(unit);
    uint64_t scale = 0; // nanoseconds a unit
    if (u.empty() || u == "s") scale = 1'000'000'000ull;
    else if (u == "ms") scale = 1'000'000ull;
    else if (u == "us") scale = 1'000ull;
    else if (u == "ns") scale = 1;
    else if (u == "m" || u == "min") scale = 60'000'000'000ull;
    else if (u == "h") scale = 3'600'000'000'000ull;
    else return std::nullopt;
    const unsigned __int128 ns = whole * scale + (fraction * scale + fraction_scale / 2) / fraction_scale;
    if (ns > ~uint64_t{0}) return std::nullopt;
    return static_cast<uint64_t>(ns);
}

std::optional<int> process_rank(GetEnv getenv_fn) {
    for (const char* name : {"RANK", "LOCAL_RANK"}) {
        const char* value = getenv_fn(name);
        if (!value || !*value) continue;
        char* end = nullptr;
        const long rank = std::strtol(value, &end, 10);
        if (*end == '\0' && rank >= 0 && rank <= INT32_MAX) return static_cast<int>(rank);
    }
    return std::nullopt;
}

std::string expand_path_pattern(std::string_view pattern, int pid, GetEnv getenv_fn) {
    std::string out;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '%' && i + 1 < pattern.size()) {
            const char c = pattern[i + 1];
            if (c == 'p') { out += std::to_string(pid); ++i; continue; }
            if (c == 'r') {
                out += std::to_string(process_rank(getenv_fn).value_or(0));
                ++i;
                continue;
            }
            if (c == '%') { out += '%'; ++i; continue; }
        }
        out += pattern[i];
    }
    return out;
}

std::string_view to_string(ResidencyPolicy p) {
    switch (p) {
    case ResidencyPolicy::None: return "none";
    case ResidencyPolicy::DemandLru: return "demand-lru";
    case ResidencyPolicy::Learned: return "learned";
    }
    return "none";
}

std::string_view to_string(LogLevel l) {
    static constexpr std::array kLevels = {"trace", "debug", "info", "warn", "error", "off"};
    return kLevels[static_cast<size_t>(l)];
}

std::string_view to_string(HostHomes h) {
    static constexpr std::array kModes = {"off", "on", "auto"};
    return kModes[static_cast<size_t>(h)];
}

} // namespace uvmp

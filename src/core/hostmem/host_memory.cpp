#include "core/hostmem/host_memory.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace uvmp::hostmem {
namespace {

// A cgroup v1 counter this large means no limit (the kernel's PAGE_COUNTER_MAX, page-rounded).
constexpr uint64_t kV1Unlimited = 1ull << 60;

std::optional<std::string> read_text(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream out;
    out << in.rdbuf();
    if (in.bad()) return std::nullopt;
    return out.str();
}

std::optional<uint64_t> parse_number(std::string_view text) {
    text = trim(text);
    uint64_t value = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc{} || ptr != end) return std::nullopt;
    return value;
}

// The first value `pick` finds in a line of `text` (an optional), or nullopt.
template <class Pick>
auto first_in_lines(std::string_view text, Pick pick) -> decltype(pick(text)) {
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        if (auto value = pick(text.substr(start, end - start))) return value;
        start = end + 1;
    }
    return std::nullopt;
}

// A "key value" line of a memory.stat file.
std::optional<uint64_t> stat_field(std::string_view stat, std::string_view key) {
    return first_in_lines(stat, [&](std::string_view line) -> std::optional<uint64_t> {
        if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ')
            return parse_number(line.substr(key.size() + 1));
        return std::nullopt;
    });
}

// The limit and the room left under it of one cgroup folder: limit, usage and
// inactive page cache in the given files. nullopt: no limit there, or unreadable.
struct Level {
    uint64_t limit;
    uint64_t left;
};

std::optional<Level> read_level(const std::string& folder, const char* limit_file, const char* usage_file,
                                std::string_view inactive_key, bool v1) {
    const auto limit_text = read_text(folder + "/" + limit_file);
    if (!limit_text || trim(*limit_text) == "max") return std::nullopt;
    const auto limit = parse_number(*limit_text);
    if (!limit || (v1 && *limit >= kV1Unlimited)) return std::nullopt;
    const auto usage_text = read_text(folder + "/" + usage_file);
    const auto usage = usage_text ? parse_number(*usage_text) : std::nullopt;
    // A limit without its usage cannot say what is left: none is taken as all used.
    if (!usage) return Level{*limit, 0};
    uint64_t used = *usage;
    if (const auto stat = read_text(folder + "/memory.stat"))
        if (const auto inactive = stat_field(*stat, inactive_key)) used -= std::min(used, *inactive);
    return Level{*limit, *limit > used ? *limit - used : 0};
}

// The tightest level of `path` and its ancestors below `mount`. A path the
// mount does not show (a container whose cgroup is its mount's root) leaves
// the ancestors that it does, the mount's root last.
void tightest(const std::string& mount, std::string path, const char* limit_file, const char* usage_file,
              std::string_view inactive_key, bool v1, Reading& out) {
    while (true) {
        while (path.size() > 1 && path.back() == '/') path.pop_back();
        if (const auto level = read_level(mount + (path == "/" ? "" : path), limit_file, usage_file, inactive_key, v1)) {
            if (!out.cgroup_left || level->left < *out.cgroup_left) {
                out.cgroup_left = level->left;
                out.cgroup_limit = level->limit;
            }
        }
        if (path.empty() || path == "/") return;
        const size_t slash = path.rfind('/');
        path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
}

} // namespace

Sources Sources::under(std::string_view root) {
    std::string base(root);
    while (!base.empty() && base.back() == '/') base.pop_back();
    return {base + "/proc/meminfo", base + "/proc/self/cgroup", base + "/sys/fs/cgroup"};
}

std::optional<uint64_t> Reading::available() const {
    if (mem_available && cgroup_left) return std::min(*mem_available, *cgroup_left);
    return mem_available ? mem_available : cgroup_left;
}

std::optional<uint64_t> Reading::total() const {
    if (mem_total && cgroup_limit) return std::min(*mem_total, *cgroup_limit);
    return mem_total ? mem_total : cgroup_limit;
}

std::optional<uint64_t> meminfo_field(std::string_view meminfo, std::string_view field) {
    // Garbage in the field's line is read as the field missing.
    std::optional<uint64_t> found;
    first_in_lines(meminfo, [&](std::string_view line) -> std::optional<bool> {
        if (line.size() <= field.size() || line.substr(0, field.size()) != field || line[field.size()] != ':')
            return std::nullopt;
        line = trim(line.substr(field.size() + 1));
        // The kernel writes "12345 kB"; a bare number is taken as bytes.
        uint64_t scale = 1;
        if (line.size() > 2 && line.substr(line.size() - 2) == "kB") {
            scale = 1024;
            line = line.substr(0, line.size() - 2);
        }
        const auto value = parse_number(line);
        if (value && *value <= ~uint64_t{0} / scale) found = *value * scale;
        return true;
    });
    return found;
}

std::optional<std::string> cgroup_v2_path(std::string_view self_cgroup) {
    return first_in_lines(self_cgroup, [](std::string_view line) -> std::optional<std::string> {
        if (line.substr(0, 3) == "0::" && line.size() > 3 && line[3] == '/') return std::string(line.substr(3));
        return std::nullopt;
    });
}

std::optional<std::string> cgroup_v1_path(std::string_view self_cgroup, std::string_view controller) {
    return first_in_lines(self_cgroup, [&](std::string_view line) -> std::optional<std::string> {
        const size_t first = line.find(':');
        const size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
        if (second == std::string_view::npos || second + 1 >= line.size() || line[second + 1] != '/')
            return std::nullopt;
        std::string_view controllers = line.substr(first + 1, second - first - 1);
        while (!controllers.empty()) {
            const size_t comma = controllers.find(',');
            if (controllers.substr(0, comma) == controller) return std::string(line.substr(second + 1));
            if (comma == std::string_view::npos) break;
            controllers.remove_prefix(comma + 1);
        }
        return std::nullopt;
    });
}

Reading read_host_memory(const Sources& sources) {
    Reading reading;
    if (const auto meminfo = read_text(sources.meminfo)) {
        reading.mem_total = meminfo_field(*meminfo, "MemTotal");
        reading.mem_available = meminfo_field(*meminfo, "MemAvailable");
    }
    const auto self_cgroup = read_text(sources.self_cgroup);
    if (!self_cgroup) return reading;
    if (const auto path = cgroup_v2_path(*self_cgroup))
        tightest(sources.cgroup_mount, *path, "memory.max", "memory.current", "inactive_file", false, reading);
    // A hybrid machine lists a v2 path whose hierarchy holds no memory controller.
    if (!reading.cgroup_left)
        if (const auto path = cgroup_v1_path(*self_cgroup, "memory"))
            tightest(sources.cgroup_mount + "/memory", *path, "memory.limit_in_bytes", "memory.usage_in_bytes",
                     "total_inactive_file", true, reading);
    return reading;
}

uint64_t reserve_bytes(const SizeOrPercent& setting, const Reading& reading) {
    if (!setting.is_percent) return setting.bytes;
    const auto total = reading.total();
    return std::max(kReserveFloor, total ? setting.resolve(*total) : 0);
}

} // namespace uvmp::hostmem

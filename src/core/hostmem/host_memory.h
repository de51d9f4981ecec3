// The host memory this job can still take: MemAvailable of /proc/meminfo and
// what is left under the memory limit of the process's cgroup (v2, else v1),
// the smaller of them, less a reserve. Host-homed slabs and evictions to the
// host need it: the kernel's OOM killer ends a job that takes more, where the
// GPU would only have run slower. Every path is given, so that tests read a
// fake tree; nothing here touches a GPU.
#pragma once

#include "core/util/size_parse.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace uvmp::hostmem {

// Where the figures are read. under("") is the machine's own; under(ROOT) the
// same paths below ROOT (a fake tree for tests).
struct Sources {
    std::string meminfo;      // /proc/meminfo
    std::string self_cgroup;  // /proc/self/cgroup
    std::string cgroup_mount; // /sys/fs/cgroup: v2 unified there, v1 controllers in its subfolders

    static Sources under(std::string_view root);
};

// One reading. Each figure is nullopt where it could not be read.
struct Reading {
    std::optional<uint64_t> mem_total;
    std::optional<uint64_t> mem_available;
    // The tightest limit of the process's cgroup and its ancestors, and what the
    // cgroup holds of it now (less its inactive page cache, which the kernel
    // reclaims before it kills): nullopt without a limit.
    std::optional<uint64_t> cgroup_limit;
    std::optional<uint64_t> cgroup_left;

    // The smaller of MemAvailable and the cgroup's room; nullopt when neither is known.
    std::optional<uint64_t> available() const;
    // All the memory the job may have: the smaller of MemTotal and the cgroup limit.
    std::optional<uint64_t> total() const;
};

Reading read_host_memory(const Sources& sources);

// The parsers, for tests. A meminfo field ("MemAvailable") in bytes.
std::optional<uint64_t> meminfo_field(std::string_view meminfo, std::string_view field);
// The cgroup path of the v2 hierarchy ("0::/path") or of the v1 hierarchy that
// holds `controller` ("4:memory:/path") in a /proc/self/cgroup text.
std::optional<std::string> cgroup_v2_path(std::string_view self_cgroup);
std::optional<std::string> cgroup_v1_path(std::string_view self_cgroup, std::string_view controller);

// The reserve kept free of the library's host placements: a size as given, or
// a percentage of the job's total host memory but never less than kReserveFloor
// (a few percent of a large machine is still too little for the job's own
// growth, and of a small one too little for the system). Without a known
// total, a percentage is the floor.
inline constexpr uint64_t kReserveFloor = 1ull << 30;
uint64_t reserve_bytes(const SizeOrPercent& setting, const Reading& reading);

} // namespace uvmp::hostmem

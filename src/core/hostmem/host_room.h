// The decisions of the host memory guard, apart from clocks and locks: whether
// `bytes` more may go to the host, by a reading of the host's figures
// (host_memory.h) kept for a while. A reading costs a few file reads, so it is
// taken again only once it is old or once what was let through since has grown
// large; in between, what was let through is taken off the reading's figure,
// which keeps the answers on the safe side.
#pragma once

#include "core/hostmem/host_memory.h"

#include <cstdint>
#include <functional>
#include <optional>

namespace uvmp::hostmem {

struct RereadRule {
    uint64_t after_ns = 250'000'000;   // a reading older than this is taken again
    uint64_t after_bytes = 256ull << 20; // as is one that has let this much through since
};

class HostRoom {
public:
    using Reader = std::function<Reading()>;

    HostRoom(Reader reader, SizeOrPercent reserve, RereadRule rule = {})
        : reader_(std::move(reader)), reserve_setting_(reserve), rule_(rule) {}

    // Whether `bytes` more may be placed on the host at `now_ns` (any steady
    // clock); counts them as taken when so. Where nothing can be read of the
    // host's memory, everything may: the guard cannot judge, and the library
    // behaves as it did without it.
    bool take(uint64_t bytes, uint64_t now_ns);

    // As of the latest reading: what the host had available (nullopt: not
    // known) and the reserve kept free.
    std::optional<uint64_t> available() const { return reading_ ? reading_->available() : std::nullopt; }
    uint64_t reserve() const { return reserve_; }
    // What may still go to the host by the latest reading, less what was let through since.
    std::optional<uint64_t> room() const;
    uint64_t readings() const { return readings_; }

private:
    void read(uint64_t now_ns);

    Reader reader_;
    SizeOrPercent reserve_setting_;
    RereadRule rule_;
    std::optional<Reading> reading_;
    uint64_t reserve_ = 0;
    uint64_t read_at_ns_ = 0;
    uint64_t taken_since_reading_ = 0;
    uint64_t readings_ = 0;
};

} // namespace uvmp::hostmem

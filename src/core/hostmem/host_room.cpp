#include "core/hostmem/host_room.h"

namespace uvmp::hostmem {

void HostRoom::read(uint64_t now_ns) {
    reading_ = reader_();
    reserve_ = reserve_bytes(reserve_setting_, *reading_);
    read_at_ns_ = now_ns;
    taken_since_reading_ = 0;
    ++readings_;
}

std::optional<uint64_t> HostRoom::room() const {
    const auto left = available();
    if (!left) return std::nullopt;
    const uint64_t kept = reserve_ + taken_since_reading_;
    return *left > kept ? *left - kept : 0;
}

bool HostRoom::take(uint64_t bytes, uint64_t now_ns) {
    if (!reading_ || now_ns - read_at_ns_ >= rule_.after_ns || taken_since_reading_ >= rule_.after_bytes)
        read(now_ns);
    const auto left = room();
    if (!left) return true;
    if (bytes > *left) return false;
    taken_since_reading_ += bytes;
    return true;
}

} // namespace uvmp::hostmem

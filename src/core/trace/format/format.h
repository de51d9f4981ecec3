// Encoding constants and primitive encoders shared by the trace writer and
// reader. The layout they produce is specified in docs/trace-format.md; keep
// the two in step.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

namespace uvmp::trace::format {

inline constexpr char kMagic[8] = {'U', 'V', 'M', 'P', 'T', 'R', 'C', '\0'};
inline constexpr size_t kMagicBytes = sizeof(kMagic);
inline constexpr size_t kPreambleBytes = kMagicBytes + 2 + 2; // magic, u16 major, u16 minor

// A trace compressed with zstd (`zstd trace.uvmt`) starts with a zstd frame's magic
// number; uvmtrace decompresses it, the reader itself takes only the plain file.
inline constexpr unsigned char kZstdMagic[4] = {0x28, 0xb5, 0x2f, 0xfd};
inline bool is_zstd_compressed(const void* bytes, size_t size) {
    return size >= sizeof(kZstdMagic) && std::memcmp(bytes, kZstdMagic, sizeof(kZstdMagic)) == 0;
}

// Record types. A reader skips types it does not know within its major version,
// so new types may be added in a minor version; existing numbers never change.
enum class RecordType : uint8_t {
    Header = 1,
    KernelName = 2,
    Alloc = 3,
    Free = 4,
    Launch = 5,
    KernelDuration = 6,
    Move = 7,
    Iteration = 8,
    End = 9,
    PoolSlab = 10,       // format 1.1
    CapturedLaunch = 11, // format 1.2
    GraphLaunch = 12,    // format 1.2
};

// Launch flag bits.
inline constexpr uint8_t kLaunchFlat = 0x01;       // grid and block have y == z == 1: only x is stored
inline constexpr uint8_t kLaunchSameStream = 0x02; // stream equals the previous launch's: not stored

// Whether a launch's shape abbreviates to its x extents (kLaunchFlat).
inline bool is_flat(const uint32_t (&grid)[3], const uint32_t (&block)[3]) {
    return grid[1] == 1 && grid[2] == 1 && block[1] == 1 && block[2] == 1;
}

// Kernel ids index a dense table; a larger id means a corrupt file, and
// refusing it keeps a bad file from asking for a huge allocation.
inline constexpr uint32_t kMaxKernelId = (1u << 20) - 1;

// Longest LEB128 encoding of a 64-bit value.
inline constexpr size_t kMaxVarintBytes = 10;

inline uint64_t zigzag_encode(int64_t value) {
    return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}

inline int64_t zigzag_decode(uint64_t value) {
    return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
}

// Writes value as LEB128 at out (room for kMaxVarintBytes) and returns the end.
// The trace writer encodes launch records with it straight into its buffer.
inline uint8_t* put_varint(uint8_t* out, uint64_t value) {
    while (value >= 0x80) {
        *out++ = static_cast<uint8_t>(value | 0x80);
        value >>= 7;
    }
    *out++ = static_cast<uint8_t>(value);
    return out;
}

// Appends little-endian primitives to a byte vector.
class Encoder {
public:
    explicit Encoder(std::vector<uint8_t>& out) : out_(out) {}

    void u8(uint8_t value) { out_.push_back(value); }

    void u16(uint16_t value) {
        out_.push_back(static_cast<uint8_t>(value));
        out_.push_back(static_cast<uint8_t>(value >> 8));
    }

    void varint(uint64_t value) {
        uint8_t bytes[kMaxVarintBytes];
        out_.insert(out_.end(), bytes, put_varint(bytes, value));
    }

    void svarint(int64_t value) { varint(zigzag_encode(value)); }

    void string(std::string_view text) {
        varint(text.size());
        out_.insert(out_.end(), text.begin(), text.end());
    }

    // Appends each value as the format stores its type: an enum or a byte as
    // one byte, a signed integer zigzagged, text with its length, any other
    // integer as a varint. A record is then the list of its fields, in order.
    template <class... Values>
    void fields(const Values&... values) {
        (field(values), ...);
    }

private:
    template <class Value>
    void field(const Value& value) {
        if constexpr (std::is_enum_v<Value>) u8(static_cast<uint8_t>(value));
        else if constexpr (std::is_same_v<Value, uint8_t>) u8(value);
        else if constexpr (std::is_convertible_v<Value, std::string_view>) string(value);
        else if constexpr (std::is_signed_v<Value>) svarint(value);
        else varint(value);
    }

    std::vector<uint8_t>& out_;
};

inline size_t varint_size(uint64_t value) { return (static_cast<size_t>(std::bit_width(value | 1)) + 6) / 7; }

} // namespace uvmp::trace::format

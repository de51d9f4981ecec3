#include "core/trace/format/reader.h"

#include "core/util/file_bytes.h"
#include "core/trace/format/format.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace uvmp::trace {

TraceFormatError::TraceFormatError(uint64_t offset, const std::string& message)
    : std::runtime_error(message), offset_(offset) {}

namespace {

using format::RecordType;

const char* record_name(RecordType type) {
    switch (type) {
    case RecordType::Header: return "header";
    case RecordType::KernelName: return "kernel name";
    case RecordType::Alloc: return "alloc";
    case RecordType::Free: return "free";
    case RecordType::Launch: return "launch";
    case RecordType::KernelDuration: return "kernel duration";
    case RecordType::Move: return "move";
    case RecordType::Iteration: return "iteration";
    case RecordType::End: return "end";
    case RecordType::PoolSlab: return "pool slab";
    case RecordType::CapturedLaunch: return "captured launch";
    case RecordType::GraphLaunch: return "graph launch";
    }
    return "unknown";
}

// Reads little-endian primitives from a byte range whose first byte is at
// file offset base. Every read is checked against the end of the range, so a
// corrupt length can never make the reader look past it.
class Decoder {
public:
    // context names what is being decoded in error messages; it is called only
    // on failure, so that decoding pays nothing for it.
    using Context = std::string (*)(const void* subject);

    Decoder(const uint8_t* begin, const uint8_t* end, uint64_t base, Context context, const void* subject)
        : begin_(begin), cursor_(begin), end_(end), base_(base), context_(context), subject_(subject) {}

    uint64_t offset() const { return base_ + static_cast<uint64_t>(cursor_ - begin_); }
    size_t remaining() const { return static_cast<size_t>(end_ - cursor_); }
    bool at_end() const { return cursor_ == end_; }

    [[noreturn]] void fail(const std::string& what) const {
        throw TraceFormatError(offset(), context_(subject_) + what + " at byte " + std::to_string(offset()));
    }

    uint8_t u8() {
        if (cursor_ == end_) fail("runs out of bytes");
        return *cursor_++;
    }

    uint16_t u16() {
        if (remaining() < 2) fail("runs out of bytes");
        uint16_t value = static_cast<uint16_t>(cursor_[0] | (cursor_[1] << 8));
        cursor_ += 2;
        return value;
    }

    // Most values are one byte: that case is inlined where numbers are read,
    // the rest (and every error) is a call.
    [[gnu::always_inline]] uint64_t varint() {
        if (cursor_ != end_ && *cursor_ < 0x80) [[likely]]
            return *cursor_++;
        return longer_varint();
    }

    [[gnu::always_inline]] int64_t svarint() { return format::zigzag_decode(varint()); }

    [[gnu::always_inline]] uint32_t u32_varint(const char* field) {
        uint64_t value = varint();
        if (value > UINT32_MAX) fail(std::string("has ") + field + " " + std::to_string(value) + ", above 32 bits");
        return static_cast<uint32_t>(value);
    }

    int32_t i32_svarint(const char* field) {
        int64_t value = svarint();
        if (value < INT32_MIN || value > INT32_MAX) fail(std::string("has ") + field + " out of range");
        return static_cast<int32_t>(value);
    }

    std::string string() {
        uint64_t length = varint();
        if (length > remaining()) {
            fail("has a text of " + std::to_string(length) + " bytes but only " +
                 std::to_string(remaining()) + " remain");
        }
        std::string text(reinterpret_cast<const char*>(cursor_), length);
        cursor_ += length;
        return text;
    }

    // A count of items, each at least min_item_bytes long: checked against the
    // bytes left so that a corrupt count cannot ask for a huge reservation.
    uint64_t count(const char* items, size_t min_item_bytes) {
        uint64_t value = varint();
        if (value > remaining() / min_item_bytes) {
            fail("claims " + std::to_string(value) + " " + items + " but only " +
                 std::to_string(remaining()) + " bytes remain");
        }
        return value;
    }

    const uint8_t* cursor() const { return cursor_; }
    void skip(size_t bytes) { cursor_ += bytes; }

private:
    [[gnu::noinline]] uint64_t longer_varint() {
        // Ten bytes hold any 64-bit number: with that many left, no byte needs
        // its own check against the end.
        const bool room = remaining() >= 10;
        uint64_t value = 0;
        for (unsigned shift = 0; shift < 64; shift += 7) {
            if (!room && cursor_ == end_) fail("runs out of bytes inside a number");
            uint8_t byte = *cursor_++;
            if (shift == 63 && byte > 1) fail("has a number wider than 64 bits");
            value |= static_cast<uint64_t>(byte & 0x7f) << shift;
            if (byte < 0x80) return value;
        }
        fail("has a number wider than 64 bits");
    }

    const uint8_t* begin_;
    const uint8_t* cursor_;
    const uint8_t* end_;
    uint64_t base_;
    Context context_;
    const void* subject_;
};

// What a record decoder names in its messages.
struct RecordSubject {
    RecordType type;
    uint64_t offset;
};

std::string describe_record(const void* subject) {
    const auto* record = static_cast<const RecordSubject*>(subject);
    return std::string("the ") + record_name(record->type) + " record at byte " + std::to_string(record->offset) + " ";
}

std::string describe_file(const void*) { return "the trace "; }
std::string describe_version(const void*) { return "the version "; }

// Whether a whole record starts at `at`: its type byte, its length and as many
// bytes as the length says. Never reads past `end`.
bool whole_record_at(const uint8_t* at, const uint8_t* end) {
    if (at == end) return false;
    ++at;
    uint64_t length = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (at == end || shift > 63) return false;
        const uint8_t byte = *at++;
        length |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if (byte < 0x80) break;
    }
    return length <= static_cast<uint64_t>(end - at);
}

class TraceParser {
public:
    // With `cut`, a trace that ends early is read up to its last whole record.
    explicit TraceParser(std::span<const std::byte> bytes, std::optional<TraceCut>* cut = nullptr)
        : begin_(reinterpret_cast<const uint8_t*>(bytes.data())), end_(begin_ + bytes.size()), cut_(cut) {}

    Trace parse() {
        read_preamble();
        reserve_for_records();
        Decoder file(begin_ + format::kPreambleBytes, end_, format::kPreambleBytes, describe_file, nullptr);
        bool seen_header = false;
        bool seen_end = false;
        uint64_t records = 0;
        while (!file.at_end()) {
            uint64_t record_offset = file.offset();
            if (cut_ && seen_header && !seen_end && !whole_record_at(file.cursor(), end_)) {
                *cut_ = TraceCut{record_offset, records};
                break;
            }
            ++records;
            if (seen_end) {
                throw TraceFormatError(record_offset, "the trace has data after its end record at byte " +
                                                          std::to_string(record_offset));
            }
            uint8_t type_byte = file.u8();
            uint64_t length = file.varint();
            if (length > file.remaining()) {
                throw TraceFormatError(record_offset,
                                       "the record at byte " + std::to_string(record_offset) + " claims " +
                                           std::to_string(length) + " bytes but only " +
                                           std::to_string(file.remaining()) +
                                           " remain: the file is truncated or corrupt");
            }
            auto type = static_cast<RecordType>(type_byte);
            RecordSubject subject{type, record_offset};
            Decoder payload(file.cursor(), file.cursor() + length, file.offset(), describe_record, &subject);
            file.skip(length);
            if (!seen_header && type != RecordType::Header) {
                throw TraceFormatError(record_offset, "the trace does not start with a header record (byte " +
                                                          std::to_string(record_offset) + " holds type " +
                                                          std::to_string(type_byte) + ")");
            }
            if (seen_header && type == RecordType::Header) payload.fail("repeats the header");
            // Fields added at the end of a known record in a later minor version
            // are skipped with the rest of the payload.
            switch (type) {
            case RecordType::Header: read_header(payload); seen_header = true; break;
            case RecordType::KernelName: read_kernel_name(payload); break;
            case RecordType::Alloc: read_alloc(payload); break;
            case RecordType::Free: read_free(payload); break;
            case RecordType::Launch: read_launch(payload); break;
            case RecordType::KernelDuration: read_kernel_duration(payload); break;
            case RecordType::Move: read_move(payload); break;
            case RecordType::Iteration: read_iteration(payload); break;
            case RecordType::PoolSlab: read_slab(payload); break;
            case RecordType::CapturedLaunch: read_captured_launch(payload); break;
            case RecordType::GraphLaunch: read_graph_launch(payload); break;
            case RecordType::End:
                trace_.dropped_records = payload.varint();
                seen_end = true;
                break;
            default: break; // a record type from a later minor version
            }
        }
        if (!seen_header) throw TraceFormatError(file.offset(), "the trace ends at byte " + std::to_string(file.offset()) +
                                                                      " before its header record: the file is truncated");
        if (!seen_end && cut_ && !*cut_) *cut_ = TraceCut{file.offset(), records};
        if (!seen_end && !cut_) {
            throw TraceFormatError(file.offset(), "the trace ends at byte " + std::to_string(file.offset()) +
                                                      " without its end record: the file is truncated "
                                                      "(was the recording cut short?)");
        }
        finish();
        return std::move(trace_);
    }

private:
    void read_preamble() {
        size_t size = static_cast<size_t>(end_ - begin_);
        if (size == 0) throw TraceFormatError(0, "the file is empty, not a uvmprefetch trace");
        if (format::is_zstd_compressed(begin_, size)) {
            throw TraceFormatError(0, "the trace is compressed with zstd: uvmtrace reads it as it is; "
                                      "for anything else decompress it first (zstd -d)");
        }
        size_t magic_bytes = std::min(size, format::kMagicBytes);
        if (std::memcmp(begin_, format::kMagic, magic_bytes) != 0) {
            throw TraceFormatError(0, "the file is not a uvmprefetch trace (wrong magic bytes at byte 0)");
        }
        if (size < format::kPreambleBytes) {
            throw TraceFormatError(size, "the trace is truncated at byte " + std::to_string(size) +
                                             ", inside its version number");
        }
        Decoder version(begin_ + format::kMagicBytes, end_, format::kMagicBytes, describe_version, nullptr);
        uint16_t major = version.u16();
        uint16_t minor = version.u16();
        if (major > kFormatMajor) {
            throw TraceFormatError(format::kMagicBytes,
                                   "trace format " + std::to_string(major) + "." + std::to_string(minor) +
                                       " is newer than this reader (" + std::to_string(kFormatMajor) +
                                       ".x); read it with a newer uvmprefetch");
        }
        if (major < kFormatMajor) {
            throw TraceFormatError(format::kMagicBytes, "trace format " + std::to_string(major) + "." +
                                                            std::to_string(minor) + " is not supported");
        }
        trace_.header.format_major = major;
        trace_.header.format_minor = minor;
    }

    // Growing the record vectors one push at a time costs more than decoding
    // (copies and fresh pages), so a quick pass over the record frames counts
    // them first. A framing error stops the count; the real pass reports it.
    void reserve_for_records() {
        std::array<size_t, 256> records_of_type{};
        size_t launch_bytes = 0;
        Decoder frames(begin_ + format::kPreambleBytes, end_, format::kPreambleBytes, describe_file, nullptr);
        try {
            while (!frames.at_end()) {
                uint8_t type = frames.u8();
                uint64_t length = frames.varint();
                if (length > frames.remaining()) break;
                frames.skip(length);
                ++records_of_type[type];
                if (type == static_cast<uint8_t>(RecordType::Launch)) launch_bytes += length;
            }
        } catch (const TraceFormatError&) {
        }
        auto count = [&](RecordType type) { return records_of_type[static_cast<uint8_t>(type)]; };
        trace_.launches.reserve(count(RecordType::Launch));
        trace_.allocs.reserve(count(RecordType::Alloc));
        trace_.frees.reserve(count(RecordType::Free));
        trace_.moves.reserve(count(RecordType::Move));
        trace_.iterations.reserve(count(RecordType::Iteration));
        trace_.slabs.reserve(count(RecordType::PoolSlab));
        trace_.captured_launches.reserve(count(RecordType::CapturedLaunch));
        trace_.graph_launches.reserve(count(RecordType::GraphLaunch));
        // An access takes at least three bytes of its launch's record: room for
        // that many never copies the vector, and the pages a large vector
        // reserves but does not use are never touched.
        trace_.accesses.reserve(launch_bytes / 3);
    }

    void read_header(Decoder& in) {
        Header& header = trace_.header;
        header.library_version = in.string();
        header.device_name = in.string();
        header.device_total_bytes = in.varint();
        header.driver_version = in.i32_svarint("driver version");
        header.chunk_bytes = in.varint();
        header.budget_bytes = in.varint();
        header.start_time_ns = in.varint();
        header.pid = in.i32_svarint("pid");
        header.rank = in.i32_svarint("rank");
        uint64_t options = in.count("options", 2);
        for (uint64_t i = 0; i < options; ++i) {
            std::string key = in.string();
            header.options[std::move(key)] = in.string();
        }
        // Traces before 1.4 end the header here.
        if (!in.at_end() && in.u8() != 0) header.rates = read_rates(in);
    }

    static rates::LinkRates read_rates(Decoder& in) {
        rates::LinkRates r;
        const uint8_t source = in.u8();
        if (source > static_cast<uint8_t>(rates::Source::Refined))
            in.fail("has a rates source " + std::to_string(source) + " this reader does not know");
        r.source = static_cast<rates::Source>(source);
        for (double* gbps : {&r.fetch_gbps, &r.evict_gbps, &r.remote_write_gbps, &r.remote_read_gbps, &r.memory_gbps}) {
            const uint64_t mbps = in.varint();
            if (mbps == 0) in.fail("has a link rate of 0");
            *gbps = static_cast<double>(mbps) / 1e3;
        }
        r.device.name = in.string();
        r.device.uuid = in.string();
        r.device.driver_version = in.string();
        r.measured_unix_s = in.svarint();
        // Before 1.5 fresh memory was taken to cost a fetch.
        r.populate_gbps = r.fetch_gbps;
        if (!in.at_end()) {
            const uint64_t mbps = in.varint();
            if (mbps == 0) in.fail("has a population rate of 0");
            r.populate_gbps = static_cast<double>(mbps) / 1e3;
        }
        return r;
    }

    void read_kernel_name(Decoder& in) {
        uint32_t id = in.u32_varint("kernel id");
        if (id > format::kMaxKernelId) in.fail("has kernel id " + std::to_string(id) + ", above the limit");
        if (id >= trace_.kernel_names.size()) trace_.kernel_names.resize(id + 1);
        trace_.kernel_names[id] = in.string();
    }

    void read_alloc(Decoder& in) {
        Alloc& record = trace_.allocs.emplace_back();
        record.id = in.u32_varint("allocation id");
        record.address = in.varint();
        record.size = in.varint();
        uint8_t kind = in.u8();
        if (kind > static_cast<uint8_t>(AllocKind::Host)) in.fail("has unknown allocation kind " + std::to_string(kind));
        record.kind = static_cast<AllocKind>(kind);
        record.device = in.i32_svarint("device");
        record.time_ns = in.varint();
        record.launches_before = in.varint();
        // Format 1.1: a converted allocation that names a slab (not 0) is a block of the pool.
        if (!in.at_end()) {
            record.slab = in.u32_varint("slab id");
            if (record.slab != 0) {
                if (record.kind != AllocKind::Converted) in.fail("names a pool slab but is not converted memory");
                record.kind = AllocKind::Pooled;
            }
        }
    }

    void read_free(Decoder& in) {
        Free& record = trace_.frees.emplace_back();
        record.id = in.u32_varint("allocation id");
        record.time_ns = in.varint();
        record.launches_before = in.varint();
    }

    void read_launch(Decoder& in) {
        uint8_t flags = in.u8();
        Launch record;
        record.seq = previous_seq_ + static_cast<uint64_t>(in.svarint());
        record.time_ns = previous_time_ns_ + static_cast<uint64_t>(in.svarint());
        record.kernel_id = kernel_id(in);
        read_shape(in, flags, record.grid, record.block);
        if (flags & format::kLaunchSameStream) {
            if (trace_.launches.empty()) in.fail("repeats the stream of a previous launch, but there is none");
            record.stream = previous_stream_;
        } else {
            record.stream = in.varint();
        }
        read_accesses(in, trace_.accesses, record.first_access, record.access_count);
        previous_seq_ = record.seq;
        previous_time_ns_ = record.time_ns;
        previous_stream_ = record.stream;
        trace_.launches.push_back(record);
    }

    [[gnu::always_inline]] uint32_t kernel_id(Decoder& in) {
        const uint32_t id = in.u32_varint("kernel id");
        if (id > format::kMaxKernelId) in.fail("has kernel id " + std::to_string(id) + ", above the limit");
        max_kernel_id_ = std::max(max_kernel_id_, id);
        return id;
    }

    [[gnu::always_inline]] static void read_shape(Decoder& in, uint8_t flags, uint32_t (&grid)[3], uint32_t (&block)[3]) {
        if (flags & format::kLaunchFlat) {
            grid[0] = in.u32_varint("grid extent");
            block[0] = in.u32_varint("block extent");
        } else {
            for (uint32_t& extent : grid) extent = in.u32_varint("grid extent");
            for (uint32_t& extent : block) extent = in.u32_varint("block extent");
        }
    }

    [[gnu::always_inline]] static void read_accesses(Decoder& in, LargeVector<Access>& table, uint32_t& first,
                                                     uint32_t& count) {
        uint64_t access_count = in.count("accesses", 3);
        if (table.size() + access_count > UINT32_MAX) in.fail("brings the access count above 32 bits");
        first = static_cast<uint32_t>(table.size());
        count = static_cast<uint32_t>(access_count);
        for (uint64_t i = 0; i < access_count; ++i) {
            Access& access = table.emplace_back();
            access.alloc_id = in.u32_varint("allocation id");
            access.offset = in.varint();
            access.length = in.varint();
        }
    }

    void read_captured_launch(Decoder& in) {
        CapturedLaunch& record = trace_.captured_launches.emplace_back();
        const uint8_t flags = in.u8();
        record.capture_id = in.varint();
        record.kernel_id = kernel_id(in);
        read_shape(in, flags, record.grid, record.block);
        record.stream = in.varint();
        record.time_ns = in.varint();
        record.launches_before = in.varint();
        read_accesses(in, trace_.captured_accesses, record.first_access, record.access_count);
    }

    void read_graph_launch(Decoder& in) {
        GraphLaunch& record = trace_.graph_launches.emplace_back();
        record.graph_id = in.u32_varint("graph id");
        record.flags = in.u8();
        record.stream = in.varint();
        record.time_ns = in.varint();
        record.launches_before = in.varint();
        record.replayed = in.u32_varint("replayed launch count");
        record.nodes_skipped = in.u32_varint("skipped node count");
    }

    void read_kernel_duration(Decoder& in) {
        uint64_t seq = in.varint();
        uint64_t duration = in.varint();
        // With no launch dropped, seq is the index of a launch already read.
        if (seq < trace_.launches.size() && trace_.launches[seq].seq == seq) trace_.launches[seq].duration_ns = duration;
        else unplaced_durations_.emplace_back(seq, duration);
    }

    void read_move(Decoder& in) {
        Move& record = trace_.moves.emplace_back();
        uint8_t kind = in.u8();
        if (kind > static_cast<uint8_t>(MoveKind::Discard)) in.fail("has unknown move kind " + std::to_string(kind));
        record.kind = static_cast<MoveKind>(kind);
        record.alloc_id = in.u32_varint("allocation id");
        record.offset = in.varint();
        record.length = in.varint();
        record.time_ns = in.varint();
        record.duration_ns = in.varint();
        record.launches_before = in.varint();
    }

    void read_slab(Decoder& in) {
        Slab& record = trace_.slabs.emplace_back();
        const uint8_t action = in.u8();
        if (action > static_cast<uint8_t>(SlabAction::Released)) in.fail("has unknown slab action " + std::to_string(action));
        record.action = static_cast<SlabAction>(action);
        record.id = in.u32_varint("slab id");
        record.base = in.varint();
        record.size = in.varint();
        record.device = in.i32_svarint("device");
        record.time_ns = in.varint();
        record.launches_before = in.varint();
    }

    void read_iteration(Decoder& in) {
        Iteration& record = trace_.iterations.emplace_back();
        record.index = in.varint();
        record.launches_before = in.varint();
        record.time_ns = in.varint();
    }

    void finish() {
        // Every kernel a launch names gets a slot, with an empty name when its
        // name record was dropped.
        if ((!trace_.launches.empty() || !trace_.captured_launches.empty()) &&
            max_kernel_id_ >= trace_.kernel_names.size()) {
            trace_.kernel_names.resize(static_cast<size_t>(max_kernel_id_) + 1);
        }
        fold_durations();
    }

    // Durations arrive after their launches, named by sequence number. Those
    // whose sequence number is not their launch's index (launches were dropped)
    // are placed through a map at the end.
    void fold_durations() {
        if (unplaced_durations_.empty()) return;
        auto& launches = trace_.launches;
        std::unordered_map<uint64_t, size_t> index_of_seq;
        index_of_seq.reserve(launches.size());
        for (size_t i = 0; i < launches.size(); ++i) index_of_seq.emplace(launches[i].seq, i);
        for (const auto& [seq, duration] : unplaced_durations_) {
            auto found = index_of_seq.find(seq);
            if (found != index_of_seq.end()) launches[found->second].duration_ns = duration;
        }
    }

    const uint8_t* begin_;
    const uint8_t* end_;
    std::optional<TraceCut>* cut_;
    Trace trace_;
    std::vector<std::pair<uint64_t, uint64_t>> unplaced_durations_;
    uint64_t previous_seq_ = 0;
    uint64_t previous_time_ns_ = 0;
    uint64_t previous_stream_ = 0;
    uint32_t max_kernel_id_ = 0;
};

} // namespace

Trace read_trace_bytes(std::span<const std::byte> bytes) {
    return TraceParser(bytes).parse();
}

namespace {

template <class Read>
Trace with_source(const std::string& source, Read&& read) {
    try {
        return read();
    } catch (const TraceFormatError& error) {
        throw TraceFormatError(error.offset(), source + ": " + error.what());
    }
}

} // namespace

Trace read_trace_bytes(std::span<const std::byte> bytes, const std::string& source) {
    return with_source(source, [&] { return read_trace_bytes(bytes); });
}

Trace read_trace_bytes(std::span<const std::byte> bytes, const std::string& source, std::optional<TraceCut>& cut) {
    cut.reset();
    return with_source(source, [&] { return TraceParser(bytes, &cut).parse(); });
}

Trace read_trace_file(const std::string& path) {
    const FileBytes file(path, "trace file");
    return read_trace_bytes(file.bytes(), path);
}

} // namespace uvmp::trace

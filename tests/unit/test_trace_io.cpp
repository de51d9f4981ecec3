#include "trace_fixtures.h"

#include "core/trace/format/format.h"
#include "core/trace/format/reader.h"
#include "core/trace/analysis/summary.h"
#include "core/trace/format/writer.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <thread>

using namespace uvmp::trace;

namespace {

std::vector<std::byte> synthetic_trace_bytes(const std::string& name) {
    TrainingLoopShape shape;
    shape.steps = 5;
    shape.mark_iterations = true;
    std::string path = fixtures::scratch_path(name);
    write_trace_file(make_training_loop(shape), path);
    return fixtures::read_file(path);
}

std::vector<std::byte> bytes_of(std::initializer_list<int> values) {
    std::vector<std::byte> bytes;
    for (int value : values) bytes.push_back(static_cast<std::byte>(value));
    return bytes;
}

std::vector<std::byte> preamble(uint16_t major, uint16_t minor) {
    std::vector<std::byte> bytes(format::kMagicBytes);
    std::memcpy(bytes.data(), format::kMagic, format::kMagicBytes);
    for (int value : {major & 0xff, major >> 8, minor & 0xff, minor >> 8}) bytes.push_back(static_cast<std::byte>(value));
    return bytes;
}

// Where each record ends, the header's first.
std::vector<size_t> record_ends(const std::vector<std::byte>& bytes) {
    std::vector<size_t> ends;
    for (size_t at = format::kPreambleBytes; at < bytes.size();) {
        ++at; // the type
        uint64_t length = 0;
        for (unsigned shift = 0;; shift += 7) {
            auto byte = static_cast<uint8_t>(bytes.at(at++));
            length |= uint64_t{byte & 0x7fu} << shift;
            if (byte < 0x80) break;
        }
        at += length;
        ends.push_back(at);
    }
    return ends;
}

// Offset just past the header record.
size_t end_of_header(const std::vector<std::byte>& bytes) { return record_ends(bytes).front(); }

std::string format_error_of(std::span<const std::byte> bytes) {
    try {
        read_trace_bytes(bytes);
    } catch (const TraceFormatError& error) {
        return error.what();
    }
    return "no error";
}

} // namespace

TEST_CASE("a written trace reads back field by field", "[trace_io]") {
    TrainingLoopShape shape;
    shape.steps = 6;
    shape.mark_iterations = true;
    Trace original = make_training_loop(shape);
    original.launches[3].grid[2] = 7; // a 3-D launch among the flat ones
    std::string path = fixtures::scratch_path("round_trip.uvmt");
    REQUIRE(write_trace_file(original, path) == 0);

    Trace read = read_trace_file(path);
    CHECK(read.header.format_major == kFormatMajor);
    CHECK(read.header.format_minor == kFormatMinor);
    CHECK(read.header.library_version == original.header.library_version);
    CHECK(read.header.device_name == original.header.device_name);
    CHECK(read.header.device_total_bytes == original.header.device_total_bytes);
    CHECK(read.header.driver_version == original.header.driver_version);
    CHECK(read.header.budget_bytes == original.header.budget_bytes);
    CHECK(read.header.start_time_ns == original.header.start_time_ns);
    CHECK(read.header.pid == original.header.pid);
    CHECK(read.header.rank == original.header.rank);
    CHECK(read.header.options == original.header.options);
    CHECK(read.kernel_names == original.kernel_names);
    CHECK(read.dropped_records == 0);

    REQUIRE(read.allocs.size() == original.allocs.size());
    for (size_t i = 0; i < read.allocs.size(); ++i) {
        const Alloc& a = read.allocs[i];
        const Alloc& b = original.allocs[i];
        CHECK((a.id == b.id && a.address == b.address && a.size == b.size && a.kind == b.kind &&
               a.device == b.device && a.time_ns == b.time_ns && a.launches_before == b.launches_before));
    }
    REQUIRE(read.frees.size() == original.frees.size());
    for (size_t i = 0; i < read.frees.size(); ++i) {
        CHECK(read.frees[i].id == original.frees[i].id);
        CHECK(read.frees[i].launches_before == original.frees[i].launches_before);
    }
    REQUIRE(read.launches.size() == original.launches.size());
    for (size_t i = 0; i < read.launches.size(); ++i) {
        const Launch& a = read.launches[i];
        const Launch& b = original.launches[i];
        CHECK((a.seq == b.seq && a.kernel_id == b.kernel_id && a.stream == b.stream && a.time_ns == b.time_ns &&
               a.duration_ns == b.duration_ns && a.access_count == b.access_count));
        CHECK(std::equal(std::begin(a.grid), std::end(a.grid), std::begin(b.grid)));
        CHECK(std::equal(std::begin(a.block), std::end(a.block), std::begin(b.block)));
        for (uint32_t k = 0; k < a.access_count; ++k) {
            const Access& x = read.accesses[a.first_access + k];
            const Access& y = original.accesses[b.first_access + k];
            CHECK((x.alloc_id == y.alloc_id && x.offset == y.offset && x.length == y.length));
        }
    }
    REQUIRE(read.moves.size() == original.moves.size());
    for (size_t i = 0; i < read.moves.size(); ++i) {
        CHECK(read.moves[i].kind == original.moves[i].kind);
        CHECK(read.moves[i].length == original.moves[i].length);
        CHECK(read.moves[i].duration_ns == original.moves[i].duration_ns);
    }
    REQUIRE(read.iterations.size() == original.iterations.size());
    CHECK(read.iterations.back().launches_before == original.iterations.back().launches_before);
}

TEST_CASE("appends from several threads all arrive, each thread's in order", "[trace_io]") {
    std::string path = fixtures::scratch_path("concurrent.uvmt");
    std::string error;
    auto writer = TraceWriter::open({path, 64ull << 20}, Header{}, error);
    REQUIRE(writer);
    constexpr uint64_t kThreads = 4;
    constexpr uint64_t kPerThread = 20000;
    std::vector<std::thread> threads;
    for (uint64_t t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            writer->kernel(static_cast<uint32_t>(t), "kernel_" + std::to_string(t));
            for (uint64_t i = 0; i < kPerThread; ++i) {
                Launch launch;
                launch.seq = t * 1'000'000 + i;
                launch.kernel_id = static_cast<uint32_t>(t);
                launch.stream = 0x1000 * (t + 1);
                launch.time_ns = i * 100;
                Access access{static_cast<uint32_t>(i % 97), i * 8, 64};
                writer->launch(launch, std::span(&access, 1));
            }
        });
    }
    for (auto& thread : threads) thread.join();
    writer->close();
    writer->close(); // a second close does nothing
    CHECK(writer->records_dropped() == 0);

    Trace read = read_trace_file(path);
    REQUIRE(read.launches.size() == kThreads * kPerThread);
    REQUIRE(read.kernel_names.size() == kThreads);
    std::vector<uint64_t> next(kThreads, 0);
    for (const Launch& launch : read.launches) {
        uint64_t t = launch.seq / 1'000'000;
        REQUIRE(t < kThreads);
        uint64_t i = launch.seq % 1'000'000;
        CHECK(i == next[t]);
        next[t] = i + 1;
        CHECK(launch.kernel_id == t);
        CHECK(launch.stream == 0x1000 * (t + 1));
        CHECK(launch.time_ns == i * 100);
        REQUIRE(launch.access_count == 1);
        CHECK(read.accesses[launch.first_access].alloc_id == i % 97);
        CHECK(read.accesses[launch.first_access].offset == i * 8);
    }
    CHECK(read.kernel_names[2] == "kernel_2");
}

TEST_CASE("a full buffer drops records and the trace says how many", "[trace_io]") {
    constexpr uint64_t kLaunches = 20000;
    SECTION("a buffer smaller than any record keeps nothing but the end record") {
        std::string path = fixtures::scratch_path("dropped_all.uvmt");
        std::string error;
        auto writer = TraceWriter::open({path, 8}, Header{}, error);
        REQUIRE(writer);
        for (uint64_t i = 0; i < kLaunches; ++i) writer->launch(Launch{.seq = i}, {});
        writer->close();
        CHECK(writer->records_dropped() == kLaunches);
        Trace read = read_trace_file(path);
        CHECK(read.launches.empty());
        CHECK(read.dropped_records == kLaunches);
    }
    SECTION("a small buffer keeps some, and kept plus dropped is all") {
        std::string path = fixtures::scratch_path("dropped_some.uvmt");
        std::string error;
        auto writer = TraceWriter::open({path, 256}, Header{}, error);
        REQUIRE(writer);
        for (uint64_t i = 0; i < kLaunches; ++i) writer->launch(Launch{.seq = i, .time_ns = i * 1000}, {});
        writer->close();
        Trace read = read_trace_file(path);
        CHECK(read.dropped_records > 0);
        CHECK(read.dropped_records == writer->records_dropped());
        CHECK(read.launches.size() + read.dropped_records == kLaunches);
        // Launches after a dropped one still decode to their own numbers.
        for (const Launch& launch : read.launches) CHECK(launch.time_ns == launch.seq * 1000);
    }
}

TEST_CASE("records longer than the writer's chunks are kept whole", "[trace_io]") {
    // An 8 KiB buffer writes in chunks of 2 KiB; the launch record is longer.
    const std::string path = fixtures::scratch_path("long_records.uvmt");
    std::string error;
    auto writer = TraceWriter::open({path, 8192}, Header{}, error);
    REQUIRE(writer);
    const std::string name(1500, 'k');
    std::vector<Access> accesses;
    for (uint32_t i = 0; i < 300; ++i) accesses.push_back({i + 1, uint64_t{i} << 30, 4096});
    writer->kernel(0, name);
    writer->launch(Launch{.seq = 0, .time_ns = 5}, accesses);
    writer->launch(Launch{.seq = 1, .time_ns = 9}, std::span(accesses).first(2));
    writer->close();
    CHECK(writer->records_dropped() == 0);

    const Trace read = read_trace_file(path);
    REQUIRE(read.kernel_names.size() == 1);
    CHECK(read.kernel_names[0] == name);
    REQUIRE(read.launches.size() == 2);
    REQUIRE(read.launches[0].access_count == accesses.size());
    for (size_t i = 0; i < accesses.size(); ++i) {
        const Access& a = read.accesses[read.launches[0].first_access + i];
        CHECK((a.alloc_id == accesses[i].alloc_id && a.offset == accesses[i].offset && a.length == 4096));
    }
    CHECK(read.launches[1].time_ns == 9);
    CHECK(read.launches[1].access_count == 2);
}

TEST_CASE("a quiet program's records reach the file without a close", "[trace_io]") {
    // The flusher writes what there is about once a second, so that a crash loses
    // little; waiting up to ten seconds keeps a loaded machine from failing it.
    const std::string path = fixtures::scratch_path("quiet.uvmt");
    std::string error;
    auto writer = TraceWriter::open({path, 64ull << 20}, Header{}, error);
    REQUIRE(writer);
    const auto header_bytes = std::filesystem::file_size(path);
    Access access{1, 0, 64};
    writer->launch(Launch{.seq = 0, .time_ns = 1}, std::span(&access, 1));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::filesystem::file_size(path) == header_bytes && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(std::filesystem::file_size(path) > header_bytes);
    writer->launch(Launch{.seq = 1, .time_ns = 2}, std::span(&access, 1));
    writer->close();
    const Trace read = read_trace_file(path);
    CHECK(read.launches.size() == 2);
}

TEST_CASE("a trace reads the same through a pipe as from a file", "[trace_io]") {
    const std::string file = fixtures::scratch_path("piped.uvmt");
    TrainingLoopShape shape;
    shape.steps = 4;
    REQUIRE(write_trace_file(make_training_loop(shape), file) == 0);
    const std::vector<std::byte> bytes = fixtures::read_file(file);
    const std::string fifo = fixtures::scratch_path("piped.fifo");
    std::remove(fifo.c_str());
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    std::thread writer([&] {
        std::FILE* out = std::fopen(fifo.c_str(), "wb");
        if (!out) return;
        std::fwrite(bytes.data(), 1, bytes.size(), out);
        std::fclose(out);
    });
    const Trace piped = read_trace_file(fifo);
    writer.join();
    const Trace mapped = read_trace_file(file);
    CHECK(piped.launches.size() == mapped.launches.size());
    CHECK(piped.accesses.size() == mapped.accesses.size());
    CHECK(piped.allocs.size() == mapped.allocs.size());
    CHECK(piped.launches.back().time_ns == mapped.launches.back().time_ns);
}

TEST_CASE("a path that is not a readable file names the path and the reason", "[trace_io]") {
    auto message_of = [](const std::string& path) {
        try {
            read_trace_file(path);
        } catch (const std::runtime_error& error) {
            return std::string(error.what());
        }
        return std::string("no error");
    };
    CHECK_THAT(message_of("/nonexistent-dir/trace.uvmt"), Catch::Contains("cannot open trace file '/nonexistent-dir/trace.uvmt'"));
    CHECK_THAT(message_of("/"), Catch::Contains("cannot read trace file '/'"));
}

TEST_CASE("durations find their launches when earlier launches were dropped", "[trace_io]") {
    const std::string path = fixtures::scratch_path("durations_after_drops.uvmt");
    std::string error;
    auto writer = TraceWriter::open({path, 1 << 20}, Header{}, error);
    REQUIRE(writer);
    // Launches 2 and 3 never reached the trace: from launch 4 on, seq is not the index.
    for (uint64_t seq : {0, 1, 4, 5, 6}) writer->launch(Launch{.seq = seq}, {});
    for (uint64_t seq : {0, 1, 4, 5, 6}) writer->kernel_duration(seq, 1000 + seq);
    writer->kernel_duration(3, 999); // a dropped launch's duration goes nowhere
    writer->close();
    const Trace read = read_trace_file(path);
    REQUIRE(read.launches.size() == 5);
    for (const Launch& launch : read.launches) CHECK(launch.duration_ns == 1000 + launch.seq);
}

TEST_CASE("the writer reports a path it cannot open", "[trace_io]") {
    std::string error;
    auto writer = TraceWriter::open({"/nonexistent-dir/trace.uvmt"}, Header{}, error);
    CHECK_FALSE(writer);
    CHECK_THAT(error, Catch::Contains("/nonexistent-dir/trace.uvmt"));
}

TEST_CASE("bad files are refused with a reason and an offset", "[trace_io]") {
    SECTION("empty") {
        CHECK_THAT(format_error_of({}), Catch::Contains("empty"));
    }
    SECTION("compressed with zstd") {
        auto bytes = bytes_of({0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0});
        CHECK_THAT(format_error_of(bytes), Catch::Contains("compressed with zstd"));
    }
    SECTION("wrong magic") {
        auto bytes = bytes_of({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0});
        CHECK_THAT(format_error_of(bytes), Catch::Contains("not a uvmprefetch trace"));
    }
    SECTION("a newer major version") {
        auto bytes = preamble(2, 3);
        CHECK_THAT(format_error_of(bytes), Catch::Contains("trace format 2.3 is newer than this reader (1.x)"));
    }
    SECTION("truncated anywhere") {
        auto bytes = synthetic_trace_bytes("truncated.uvmt");
        for (size_t size : {size_t{1}, size_t{7}, size_t{9}, format::kPreambleBytes, format::kPreambleBytes + 1,
                            end_of_header(bytes) - 1, end_of_header(bytes), bytes.size() / 3, bytes.size() / 2,
                            bytes.size() - 2, bytes.size() - 1}) {
            INFO("truncated to " << size << " bytes");
            try {
                read_trace_bytes(std::span(bytes).first(size));
                FAIL("a truncated trace was accepted");
            } catch (const TraceFormatError& error) {
                CHECK(error.offset() <= size);
                CHECK_THAT(std::string(error.what()), Catch::Contains("byte"));
            }
        }
    }
    SECTION("a record length beyond the end of the file") {
        auto bytes = synthetic_trace_bytes("corrupt_length.uvmt");
        size_t record = end_of_header(bytes);
        // A ten-byte varint claiming an enormous payload.
        std::vector<std::byte> corrupt(bytes.begin(), bytes.begin() + static_cast<long>(record) + 1);
        for (int i = 0; i < 9; ++i) corrupt.push_back(std::byte{0xff});
        corrupt.push_back(std::byte{0x01});
        corrupt.insert(corrupt.end(), bytes.begin() + static_cast<long>(record) + 1, bytes.end());
        std::string message = format_error_of(corrupt);
        CHECK_THAT(message, Catch::Contains("byte " + std::to_string(record)));
        CHECK_THAT(message, Catch::Contains("truncated or corrupt"));
    }
    SECTION("bytes after the end record") {
        auto bytes = synthetic_trace_bytes("trailing.uvmt");
        bytes.push_back(std::byte{4});
        CHECK_THAT(format_error_of(bytes), Catch::Contains("after its end record"));
    }
}

TEST_CASE("a trace cut at any byte reads up to its last whole record", "[trace_io]") {
    const auto bytes = synthetic_trace_bytes("cut_anywhere.uvmt");
    const std::vector<size_t> ends = record_ends(bytes);
    const Trace whole = read_trace_bytes(bytes);
    for (size_t size = 0; size <= bytes.size(); ++size) {
        INFO("cut to " << size << " bytes");
        std::optional<TraceCut> cut;
        const auto first = std::span(bytes).first(size);
        if (size < ends.front()) {
            // Nothing to read without the header.
            CHECK_THROWS_AS(read_trace_bytes(first, "cut.uvmt", cut), TraceFormatError);
            continue;
        }
        const Trace read = read_trace_bytes(first, "cut.uvmt", cut);
        if (size == bytes.size()) {
            CHECK_FALSE(cut);
            continue;
        }
        const auto whole_records = static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), size) - ends.begin());
        REQUIRE(cut);
        CHECK(cut->byte == ends[whole_records - 1]);
        CHECK(cut->records == whole_records);
        // The bytes of a partial record add nothing: the same as the whole records alone.
        std::optional<TraceCut> at_boundary;
        const Trace bounded = read_trace_bytes(std::span(bytes).first(cut->byte), "cut.uvmt", at_boundary);
        CHECK(read.launches.size() == bounded.launches.size());
        CHECK(read.accesses.size() == bounded.accesses.size());
        CHECK(read.allocs.size() == bounded.allocs.size());
        CHECK(read.iterations.size() == bounded.iterations.size());
        REQUIRE(read.launches.size() <= whole.launches.size());
        if (!read.launches.empty()) CHECK(read.launches.back().seq == whole.launches[read.launches.size() - 1].seq);
    }
}

TEST_CASE("flipped bytes give a format error or a trace, never anything else", "[trace_io]") {
    auto bytes = synthetic_trace_bytes("flipped.uvmt");
    std::mt19937 random(7);
    for (int round = 0; round < 3000; ++round) {
        auto damaged = bytes;
        for (int flips = 0; flips < 1 + round % 4; ++flips) {
            damaged[random() % damaged.size()] ^= static_cast<std::byte>(1 + random() % 255);
        }
        try {
            read_trace_bytes(damaged);
        } catch (const TraceFormatError&) {
        }
    }
    SUCCEED("no crash, no other exception");
}

TEST_CASE("unknown record types of the same major version are skipped", "[trace_io]") {
    auto bytes = synthetic_trace_bytes("unknown_record.uvmt");
    size_t at = end_of_header(bytes);
    auto unknown = bytes_of({200, 3, 1, 2, 3});
    bytes.insert(bytes.begin() + static_cast<long>(at), unknown.begin(), unknown.end());
    Trace read = read_trace_bytes(bytes);
    CHECK(read.launches.size() == make_training_loop({.steps = 5, .mark_iterations = true}).launches.size());
}

TEST_CASE("a newer minor version is read", "[trace_io]") {
    auto bytes = synthetic_trace_bytes("newer_minor.uvmt");
    bytes[format::kMagicBytes + 2] = std::byte{9};
    Trace read = read_trace_bytes(bytes);
    CHECK(read.header.format_minor == 9);
}

namespace {

// The payload of the first record of `type` after the header.
std::vector<uint8_t> first_payload_of(const std::vector<std::byte>& bytes, format::RecordType type) {
    size_t at = end_of_header(bytes);
    while (at < bytes.size()) {
        const auto record_type = static_cast<uint8_t>(bytes[at++]);
        uint64_t length = 0;
        for (unsigned shift = 0;; shift += 7) {
            const auto byte = static_cast<uint8_t>(bytes.at(at++));
            length |= uint64_t{byte & 0x7fu} << shift;
            if (byte < 0x80) break;
        }
        if (record_type == static_cast<uint8_t>(type)) {
            std::vector<uint8_t> payload(length);
            std::memcpy(payload.data(), bytes.data() + at, length);
            return payload;
        }
        at += length;
    }
    return {};
}

Trace one_pooled_block() {
    Trace t;
    t.slabs.push_back({SlabAction::Created, 3, 0x6000'0000'0000, 512ull << 20, 1, 5, 0});
    t.allocs.push_back({7, 0x6000'0020'0000, 3 << 20, AllocKind::Pooled, 1, 6, 0, 3});
    t.frees.push_back({7, 8, 0});
    t.slabs.push_back({SlabAction::Released, 3, 0x6000'0000'0000, 512ull << 20, 1, 9, 0});
    return t;
}

} // namespace

TEST_CASE("blocks of the pool and slab records read back field by field", "[trace_io]") {
    TrainingLoopShape shape;
    shape.steps = 3;
    shape.pooled = true;
    const Trace original = make_training_loop(shape);
    REQUIRE_FALSE(original.slabs.empty());
    const std::string path = fixtures::scratch_path("pooled_round_trip.uvmt");
    REQUIRE(write_trace_file(original, path) == 0);
    const Trace read = read_trace_file(path);
    CHECK(read.header.format_minor == kFormatMinor);
    REQUIRE(read.allocs.size() == original.allocs.size());
    size_t pooled = 0;
    for (size_t i = 0; i < read.allocs.size(); ++i) {
        const Alloc& a = read.allocs[i];
        const Alloc& b = original.allocs[i];
        CHECK((a.id == b.id && a.address == b.address && a.size == b.size && a.kind == b.kind && a.slab == b.slab));
        pooled += a.kind == AllocKind::Pooled;
    }
    CHECK(pooled + 1 == read.allocs.size()); // all but the pinned host buffer
    REQUIRE(read.slabs.size() == original.slabs.size());
    for (size_t i = 0; i < read.slabs.size(); ++i) {
        const Slab& a = read.slabs[i];
        const Slab& b = original.slabs[i];
        CHECK((a.action == b.action && a.id == b.id && a.base == b.base && a.size == b.size && a.device == b.device &&
               a.time_ns == b.time_ns && a.launches_before == b.launches_before));
    }
    CHECK(read.frees.size() == original.frees.size());

    const Trace small = one_pooled_block();
    const std::string small_path = fixtures::scratch_path("pooled_block.uvmt");
    REQUIRE(write_trace_file(small, small_path) == 0);
    const Trace back = read_trace_file(small_path);
    REQUIRE(back.slabs.size() == 2);
    CHECK(back.slabs[1].action == SlabAction::Released);
    CHECK(back.slabs[1].device == 1);
    REQUIRE(back.allocs.size() == 1);
    CHECK(back.allocs[0].kind == AllocKind::Pooled);
    CHECK(back.allocs[0].slab == 3);
}

TEST_CASE("a block of the pool is a converted allocation to a reader of format 1.0", "[trace_io]") {
    const std::string path = fixtures::scratch_path("pooled_for_1_0.uvmt");
    REQUIRE(write_trace_file(one_pooled_block(), path) == 0);
    const std::vector<uint8_t> payload = first_payload_of(fixtures::read_file(path), format::RecordType::Alloc);
    // id 7, address, size, kind, device 1 (zigzag 2), time 6, launches 0: the fields
    // of 1.0, with kind 0 (converted); then the slab, which a 1.0 reader skips.
    std::vector<uint8_t> fields_1_0;
    format::Encoder out(fields_1_0);
    out.varint(7);
    out.varint(0x6000'0020'0000);
    out.varint(3 << 20);
    out.u8(0);
    out.svarint(1);
    out.varint(6);
    out.varint(0);
    REQUIRE(payload.size() == fields_1_0.size() + 1);
    CHECK(std::equal(fields_1_0.begin(), fields_1_0.end(), payload.begin()));
    CHECK(payload.back() == 3);
}

TEST_CASE("an allocation of another kind that names a slab is refused, slab 0 names none", "[trace_io]") {
    const std::string path = fixtures::scratch_path("pooled_kind.uvmt");
    REQUIRE(write_trace_file(one_pooled_block(), path) == 0);
    std::vector<std::byte> bytes = fixtures::read_file(path);
    const std::vector<uint8_t> payload = first_payload_of(bytes, format::RecordType::Alloc);
    // The kind byte follows id, address and size.
    const size_t kind_at = 1 + format::varint_size(0x6000'0020'0000) + format::varint_size(3 << 20);
    auto found = std::search(bytes.begin(), bytes.end(), reinterpret_cast<const std::byte*>(payload.data()),
                             reinterpret_cast<const std::byte*>(payload.data() + payload.size()));
    REQUIRE(found != bytes.end());
    const size_t payload_at = static_cast<size_t>(found - bytes.begin());
    auto passed_through = bytes;
    passed_through[payload_at + kind_at] = std::byte{1};
    CHECK_THAT(format_error_of(passed_through), Catch::Contains("names a pool slab but is not converted memory"));
    auto slab_zero = bytes;
    slab_zero[payload_at + payload.size() - 1] = std::byte{0};
    const Trace read = read_trace_bytes(slab_zero);
    REQUIRE(read.allocs.size() == 1);
    CHECK(read.allocs[0].kind == AllocKind::Converted);
}

TEST_CASE("info counts the pool's blocks, frees and slabs", "[trace_io]") {
    const TraceSummary summary = summarize(one_pooled_block());
    CHECK(summary.allocs_by_kind[static_cast<size_t>(AllocKind::Pooled)].count == 1);
    CHECK(summary.pool.pooled_frees == 1);
    CHECK(summary.pool.slabs_created == 1);
    CHECK(summary.pool.slabs_released == 1);
    CHECK(summary.pool.peak_slab_bytes == 512ull << 20);
    CHECK(summary.peak_live_bytes == 3 << 20);
    CHECK(std::string(alloc_kind_name(AllocKind::Pooled)) == "pooled");
    CHECK_FALSE(summarize(make_training_loop({.steps = 2})).pool.any());
}

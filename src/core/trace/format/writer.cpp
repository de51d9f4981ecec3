#include "core/trace/format/writer.h"

#include "core/trace/format/format.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <span>
#include <thread>
#include <unistd.h>
#include <unordered_set>
#include <utility>

namespace uvmp::trace {
namespace {

using format::Encoder;
using format::RecordType;

// Writes all of data or reports errno; write() may be partial or interrupted.
bool write_fully(int fd, const uint8_t* data, size_t size, int& error) {
    while (size > 0) {
        ssize_t written = ::write(fd, data, size);
        if (written < 0) {
            if (errno == EINTR) continue;
            error = errno;
            return false;
        }
        data += written;
        size -= static_cast<size_t>(written);
    }
    return true;
}

void encode_header_payload(Encoder& out, const Header& header) {
    out.fields(header.library_version, header.device_name, header.device_total_bytes, header.driver_version,
               header.chunk_bytes, header.budget_bytes, header.start_time_ns, header.pid, header.rank,
               header.options.size());
    for (const auto& [key, value] : header.options) out.fields(key, value);
    // 1.4: the rates, in MB/s, after a byte that says whether they follow.
    out.u8(header.rates ? 1 : 0);
    if (const auto& r = header.rates) {
        auto mbps = [](double gbps) { return static_cast<uint64_t>(std::llround(gbps * 1e3)); };
        out.fields(r->source, mbps(r->fetch_gbps), mbps(r->evict_gbps), mbps(r->remote_write_gbps),
                   mbps(r->remote_read_gbps), mbps(r->memory_gbps), r->device.name, r->device.uuid,
                   r->device.driver_version, r->measured_unix_s);
        // 1.5: the population rate, appended.
        out.fields(mbps(r->populate_gbps));
    }
}

// The fields a launch record shares with a captured launch's, in the file's
// order, handed one varint at a time to `put`: the same order serves to count a
// record's bytes and to write them.
template <class Put>
void put_shape(const uint32_t (&grid)[3], const uint32_t (&block)[3], bool flat, Put&& put) {
    const int extents = flat ? 1 : 3;
    for (int i = 0; i < extents; ++i) put(grid[i]);
    for (int i = 0; i < extents; ++i) put(block[i]);
}

template <class Put>
void put_accesses(std::span<const Access> accesses, Put&& put) {
    put(accesses.size());
    for (const Access& access : accesses) {
        put(access.alloc_id);
        put(access.offset);
        put(access.length);
    }
}

void frame_record(std::vector<uint8_t>& out, RecordType type, const std::vector<uint8_t>& payload) {
    Encoder encoder(out);
    encoder.u8(static_cast<uint8_t>(type));
    encoder.varint(payload.size());
    out.insert(out.end(), payload.begin(), payload.end());
}

// The lock of the append path. Launch records are written on the application's
// thread between two of its launches, when the program's own work has left
// little of this code and data in the caches and the TLB; a flag spun on keeps
// that path within this library's pages, where a std::mutex would call into the
// C library. It is held for the few hundred nanoseconds of one append, and
// contended only by the application's other threads and the flusher's hand-over.
class SpinLock {
public:
    void lock() noexcept {
        while (held_.exchange(true, std::memory_order_acquire)) {
            for (int spins = 0; held_.load(std::memory_order_relaxed); ++spins)
                if (spins >= 64) std::this_thread::yield(); // the holder may be descheduled
        }
    }
    void unlock() noexcept { held_.store(false, std::memory_order_release); }

private:
    std::atomic<bool> held_{false};
};

// Bytes appended to and then written out as one block.
struct Chunk {
    std::unique_ptr<uint8_t[]> bytes;
    size_t capacity = 0;
    size_t used = 0;
};

// Application threads encode records straight into the current chunk under the
// append lock; chunks that are full (or a second old) are handed to a
// background thread that writes them. The bytes held in memory (current
// chunk, queued chunks, the chunk being written) never exceed buffer_bytes: a
// record that would cross the limit is dropped.
class BufferedTraceWriter final : public TraceWriter {
public:
    BufferedTraceWriter(int fd, uint64_t buffer_bytes)
        : fd_(fd), buffer_limit_(buffer_bytes), chunk_bytes_(choose_chunk_bytes(buffer_bytes)) {
        current_ = new_chunk(chunk_bytes_);
        flusher_ = std::thread([this] { flush_loop(); });
    }

    ~BufferedTraceWriter() override { close(); }

    void kernel(uint32_t id, std::string_view name) override {
        std::lock_guard lock(append_lock_);
        if (named_kernels_.contains(id)) return;
        if (append_record_locked(RecordType::KernelName, [&](Encoder& out) { out.fields(id, name); }))
            named_kernels_.insert(id);
    }

    void alloc(const Alloc& record) override {
        append_record(RecordType::Alloc, [&](Encoder& out) {
            // A 1.0 reader refuses kinds it does not know but skips fields appended
            // to a record: a block of the pool is a converted allocation with its slab.
            const bool pooled = record.kind == AllocKind::Pooled;
            out.fields(record.id, record.address, record.size, pooled ? AllocKind::Converted : record.kind,
                       record.device, record.time_ns, record.launches_before);
            if (pooled) out.varint(record.slab);
        });
    }

    void free(const Free& record) override {
        append_fields(RecordType::Free, record.id, record.time_ns, record.launches_before);
    }

    void launch(const Launch& record, std::span<const Access> accesses) override {
        // Most of a trace: its size is counted first, then it is encoded straight
        // into the chunk, with no copy and no call outside this library.
        std::lock_guard lock(append_lock_);
        // Sequence numbers and times are stored as differences from the previous
        // launch kept in the file, which makes most of them one or two bytes.
        const bool flat = format::is_flat(record.grid, record.block);
        const bool same_stream = has_previous_launch_ && record.stream == previous_stream_;
        const uint64_t seq_delta = format::zigzag_encode(static_cast<int64_t>(record.seq - previous_seq_));
        const uint64_t time_delta = format::zigzag_encode(static_cast<int64_t>(record.time_ns - previous_time_ns_));
        const auto fields = [&](auto&& put) {
            put(seq_delta);
            put(time_delta);
            put(record.kernel_id);
            put_shape(record.grid, record.block, flat, put);
            if (!same_stream) put(record.stream);
            put_accesses(accesses, put);
        };
        size_t payload = 1; // the flags
        fields([&](uint64_t value) { payload += format::varint_size(value); });

        uint8_t* out = start_record_locked(RecordType::Launch, payload);
        if (!out) return;
        *out++ = static_cast<uint8_t>((flat ? format::kLaunchFlat : 0) | (same_stream ? format::kLaunchSameStream : 0));
        fields([&](uint64_t value) { out = format::put_varint(out, value); });
        has_previous_launch_ = true;
        previous_seq_ = record.seq;
        previous_time_ns_ = record.time_ns;
        previous_stream_ = record.stream;
    }

    void captured_launch(const CapturedLaunch& record, std::span<const Access> accesses) override {
        // Rare (a capture is made once), and skipped by readers of 1.1: encoded
        // whole, not as differences from the launches around it.
        append_record(RecordType::CapturedLaunch, [&](Encoder& out) {
            const bool flat = format::is_flat(record.grid, record.block);
            const auto put = [&](uint64_t value) { out.varint(value); };
            out.fields(flat ? format::kLaunchFlat : uint8_t{0}, record.capture_id, record.kernel_id);
            put_shape(record.grid, record.block, flat, put);
            out.fields(record.stream, record.time_ns, record.launches_before);
            put_accesses(accesses, put);
        });
    }

    void graph_launch(const GraphLaunch& record) override {
        append_fields(RecordType::GraphLaunch, record.graph_id, record.flags, record.stream, record.time_ns,
                      record.launches_before, record.replayed, record.nodes_skipped);
    }

    void kernel_duration(uint64_t launch_seq, uint64_t duration_ns) override {
        append_fields(RecordType::KernelDuration, launch_seq, duration_ns);
    }

    void move(const Move& record) override {
        append_fields(RecordType::Move, record.kind, record.alloc_id, record.offset, record.length, record.time_ns,
                      record.duration_ns, record.launches_before);
    }

    void iteration(const Iteration& record) override {
        append_fields(RecordType::Iteration, record.index, record.launches_before, record.time_ns);
    }

    void slab(const Slab& record) override {
        append_fields(RecordType::PoolSlab, record.action, record.id, record.base, record.size, record.device,
                      record.time_ns, record.launches_before);
    }

    void close() override {
        {
            std::lock_guard lock(append_lock_);
            if (closing_) return;
            // The end record is always kept, whatever the buffer holds: it carries
            // the dropped count and tells the reader the file is complete.
            encode_scratch_locked([&](Encoder& out) { out.fields(dropped_.load(std::memory_order_relaxed)); });
            copy_scratch(frame_locked(RecordType::End, scratch_.size(), framed_bytes(scratch_.size())));
            closing_ = true;
            hand_over_current_locked();
        }
        {
            std::lock_guard lock(queue_mutex_);
            stop_ = true;
        }
        wake_flusher_.notify_one();
        if (flusher_.joinable()) flusher_.join();
        ::close(fd_);
    }

    uint64_t records_written() const override { return written_.load(std::memory_order_relaxed); }
    uint64_t records_dropped() const override { return dropped_.load(std::memory_order_relaxed); }

private:
    static uint64_t choose_chunk_bytes(uint64_t buffer_bytes) {
        // Several chunks fit in the buffer so that appends continue while one is
        // being written; small enough that a quiet program still sees its records
        // reach the file within the periodic flush.
        uint64_t chunk = buffer_bytes / 4;
        if (chunk > (1ull << 20)) chunk = 1ull << 20;
        if (chunk < 64) chunk = 64;
        return chunk;
    }

    static Chunk new_chunk(size_t capacity) {
        return {std::make_unique_for_overwrite<uint8_t[]>(capacity), capacity, 0};
    }

    // A record's bytes: its type, its length and its payload.
    static size_t framed_bytes(size_t payload) { return 1 + format::varint_size(payload) + payload; }

    // Room in the current chunk for a record of `payload` bytes, its type and
    // length written, or nullptr when the record is dropped because the memory
    // limit would be crossed.
    uint8_t* start_record_locked(RecordType type, size_t payload) {
        const size_t record_bytes = framed_bytes(payload);
        if (closing_ || held_bytes_.load(std::memory_order_relaxed) + record_bytes > buffer_limit_) {
            dropped_.fetch_add(1, std::memory_order_relaxed);
            return nullptr;
        }
        return frame_locked(type, payload, record_bytes);
    }

    // The same whatever the limit, the record counted as written and held.
    uint8_t* frame_locked(RecordType type, size_t payload, size_t record_bytes) {
        held_bytes_.fetch_add(record_bytes, std::memory_order_relaxed);
        written_.fetch_add(1, std::memory_order_relaxed);
        return format::put_varint(place_locked(type, record_bytes), payload);
    }

    // Takes record_bytes at the end of the current chunk, starting a new chunk
    // when they do not fit, and writes the type byte.
    uint8_t* place_locked(RecordType type, size_t record_bytes) {
        if (current_.capacity - current_.used < record_bytes) {
            hand_over_current_locked();
            if (current_.capacity < record_bytes) current_ = new_chunk(record_bytes);
        }
        uint8_t* out = current_.bytes.get() + current_.used;
        current_.used += record_bytes;
        *out = static_cast<uint8_t>(type);
        return out + 1;
    }

    // Appends the record made of these fields (Encoder::fields), under the append lock.
    template <class... Values>
    void append_fields(RecordType type, const Values&... values) {
        append_record(type, [&](Encoder& out) { out.fields(values...); });
    }

    // Appends the record that `fields` encodes, under the append lock.
    template <class Fields>
    bool append_record(RecordType type, Fields&& fields) {
        std::lock_guard lock(append_lock_);
        return append_record_locked(type, fields);
    }

    // The same with the lock held; false when the record was dropped.
    template <class Fields>
    bool append_record_locked(RecordType type, Fields&& fields) {
        encode_scratch_locked(fields);
        uint8_t* out = start_record_locked(type, scratch_.size());
        if (!out) return false;
        copy_scratch(out);
        return true;
    }

    // A record's payload, encoded by `fields` into scratch_ (its size is known
    // only once encoded, and the record is framed by it).
    template <class Fields>
    void encode_scratch_locked(Fields&& fields) {
        scratch_.clear();
        Encoder out(scratch_);
        fields(out);
    }

    void copy_scratch(uint8_t* out) const { std::memcpy(out, scratch_.data(), scratch_.size()); }

    // Queues the current chunk for writing (when it holds anything) and starts
    // another, one written before when there is one.
    void hand_over_current_locked() {
        if (current_.used == 0) return;
        {
            std::lock_guard lock(queue_mutex_);
            full_chunks_.push_back(std::move(current_));
            if (!spare_chunks_.empty()) {
                current_ = std::move(spare_chunks_.back());
                spare_chunks_.pop_back();
            }
        }
        if (!current_.bytes) current_ = new_chunk(chunk_bytes_);
        current_.used = 0;
        wake_flusher_.notify_one();
    }

    void flush_loop() {
        std::unique_lock lock(queue_mutex_);
        while (true) {
            const bool woken = wake_flusher_.wait_for(lock, std::chrono::seconds(1),
                                                      [this] { return stop_ || !full_chunks_.empty(); });
            // A quiet program fills no chunk: write what there is now and then so
            // that a crash loses at most about a second of records. The append
            // lock comes first, as for an append that hands a chunk over.
            if (!woken) {
                lock.unlock();
                {
                    std::lock_guard append(append_lock_);
                    hand_over_current_locked();
                }
                lock.lock();
            }
            while (!full_chunks_.empty()) {
                Chunk chunk = std::move(full_chunks_.front());
                full_chunks_.pop_front();
                lock.unlock();
                if (write_error_ == 0) write_fully(fd_, chunk.bytes.get(), chunk.used, write_error_);
                held_bytes_.fetch_sub(chunk.used, std::memory_order_relaxed);
                lock.lock();
                if (spare_chunks_.size() < 2 && chunk.capacity == chunk_bytes_) spare_chunks_.push_back(std::move(chunk));
            }
            if (stop_) return;
        }
    }

    const int fd_;
    const uint64_t buffer_limit_;
    const uint64_t chunk_bytes_;

    // Guarded by append_lock_.
    SpinLock append_lock_;
    Chunk current_;
    std::vector<uint8_t> scratch_; // the payload of a record other than a launch
    bool closing_ = false;
    std::unordered_set<uint32_t> named_kernels_;
    bool has_previous_launch_ = false;
    uint64_t previous_seq_ = 0;
    uint64_t previous_time_ns_ = 0;
    uint64_t previous_stream_ = 0;

    // Guarded by queue_mutex_.
    std::mutex queue_mutex_;
    std::condition_variable wake_flusher_;
    std::deque<Chunk> full_chunks_;
    std::vector<Chunk> spare_chunks_;
    bool stop_ = false;

    std::atomic<uint64_t> held_bytes_{0}; // added to under append_lock_, taken from by the flusher
    std::atomic<uint64_t> written_{0};
    std::atomic<uint64_t> dropped_{0};
    int write_error_ = 0; // touched only by the flusher thread
    std::thread flusher_;
};

} // namespace

std::unique_ptr<TraceWriter> TraceWriter::open(const Options& options, const Header& header,
                                               std::string& error) {
    int fd = ::open(options.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        error = "cannot open trace file '" + options.path + "' for writing: " + std::strerror(errno);
        return nullptr;
    }
    std::vector<uint8_t> start(format::kMagic, format::kMagic + format::kMagicBytes);
    Encoder out(start);
    out.u16(kFormatMajor);
    out.u16(kFormatMinor);
    std::vector<uint8_t> payload;
    Encoder header_out(payload);
    encode_header_payload(header_out, header);
    frame_record(start, RecordType::Header, payload);
    int write_error = 0;
    if (!write_fully(fd, start.data(), start.size(), write_error)) {
        error = "cannot write trace file '" + options.path + "': " + std::strerror(write_error);
        ::close(fd);
        return nullptr;
    }
    return std::make_unique<BufferedTraceWriter>(fd, options.buffer_bytes);
}

uint64_t write_trace_file(const Trace& trace, const std::string& path, uint64_t buffer_bytes) {
    std::string error;
    auto writer = TraceWriter::open({path, buffer_bytes}, trace.header, error);
    if (!writer) throw std::runtime_error(error);
    size_t next_alloc = 0, next_free = 0, next_move = 0, next_mark = 0, next_slab = 0, next_captured = 0, next_graph = 0;
    auto name_kernel = [&](uint32_t id) {
        if (id < trace.kernel_names.size()) writer->kernel(id, trace.kernel_names[id]);
    };
    // Writes the records of `records` from `next` on that come before launch i.
    const auto write_before = [](size_t i, const auto& records, size_t& next, auto&& write) {
        for (; next < records.size() && records[next].launches_before <= i; ++next) write(records[next]);
    };
    for (size_t i = 0; i <= trace.launches.size(); ++i) {
        // Everything placed before launch i, then launch i itself.
        write_before(i, trace.iterations, next_mark, [&](const Iteration& r) { writer->iteration(r); });
        write_before(i, trace.slabs, next_slab, [&](const Slab& r) { writer->slab(r); });
        write_before(i, trace.allocs, next_alloc, [&](const Alloc& r) { writer->alloc(r); });
        write_before(i, trace.moves, next_move, [&](const Move& r) { writer->move(r); });
        write_before(i, trace.frees, next_free, [&](const Free& r) { writer->free(r); });
        write_before(i, trace.captured_launches, next_captured, [&](const CapturedLaunch& captured) {
            name_kernel(captured.kernel_id);
            writer->captured_launch(captured, trace.accesses_of(captured));
        });
        write_before(i, trace.graph_launches, next_graph, [&](const GraphLaunch& r) { writer->graph_launch(r); });
        if (i == trace.launches.size()) break;
        const Launch& launch = trace.launches[i];
        name_kernel(launch.kernel_id);
        writer->launch(launch, std::span(trace.accesses).subspan(launch.first_access, launch.access_count));
        if (launch.duration_ns != 0) writer->kernel_duration(launch.seq, launch.duration_ns);
    }
    writer->close();
    return writer->records_dropped();
}

} // namespace uvmp::trace

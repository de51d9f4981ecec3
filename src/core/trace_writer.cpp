#include "core/trace_writer.h"

#include "core/trace_format.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <mutex>
#include <stdexcept>
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
    out.string(header.library_version);
    out.string(header.device_name);
    out.varint(header.device_total_bytes);
    out.svarint(header.driver_version);
    out.varint(header.chunk_bytes);
    out.varint(header.budget_bytes);
    out.varint(header.start_time_ns);
    out.svarint(header.pid);
    out.svarint(header.rank);
    out.varint(header.options.size());
    for (const auto& [key, value] : header.options) {
        out.string(key);
        out.string(value);
    }
}

void frame_record(std::vector<uint8_t>& out, RecordType type, const std::vector<uint8_t>& payload) {
    Encoder encoder(out);
    encoder.u8(static_cast<uint8_t>(type));
    encoder.varint(payload.size());
    out.insert(out.end(), payload.begin(), payload.end());
}

// Application threads encode records into the current chunk under a short
// lock; full chunks are handed to a background thread that writes them. The
// bytes held in memory (current chunk, queued chunks, the chunk being written)
// never exceed buffer_bytes: a record that would cross the limit is dropped.
class BufferedTraceWriter final : public TraceWriter {
public:
    BufferedTraceWriter(int fd, uint64_t buffer_bytes)
        : fd_(fd), buffer_limit_(buffer_bytes),
          chunk_bytes_(choose_chunk_bytes(buffer_bytes)) {
        current_.reserve(chunk_bytes_);
        flusher_ = std::thread([this] { flush_loop(); });
    }

    ~BufferedTraceWriter() override { close(); }

    void kernel(uint32_t id, std::string_view name) override {
        std::lock_guard lock(mutex_);
        if (named_kernels_.contains(id)) return;
        scratch_.clear();
        Encoder out(scratch_);
        out.varint(id);
        out.string(name);
        if (append_locked(RecordType::KernelName)) named_kernels_.insert(id);
    }

    void alloc(const Alloc& record) override {
        std::lock_guard lock(mutex_);
        scratch_.clear();
        Encoder out(scratch_);
        out.varint(record.id);
        out.varint(record.address);
        out.varint(record.size);
        out.u8(static_cast<uint8_t>(record.kind));
        out.svarint(record.device);
        out.varint(record.time_ns);
        out.varint(record.launches_before);
        append_locked(RecordType::Alloc);
    }

    void free(const Free& record) override {
        std::lock_guard lock(mutex_);
        scratch_.clear();
        Encoder out(scratch_);
        out.varint(record.id);
        out.varint(record.time_ns);
        out.varint(record.launches_before);
        append_locked(RecordType::Free);
    }

    void launch(const Launch& record, std::span<const Access> accesses) override {
        std::lock_guard lock(mutex_);
        // Sequence numbers and times are stored as differences from the previous
        // launch kept in the file, which makes most of them one or two bytes.
        bool flat = record.grid[1] == 1 && record.grid[2] == 1 && record.block[1] == 1 &&
                    record.block[2] == 1;
        bool same_stream = has_previous_launch_ && record.stream == previous_stream_;
        uint8_t flags = (flat ? format::kLaunchFlat : 0) | (same_stream ? format::kLaunchSameStream : 0);
        scratch_.clear();
        Encoder out(scratch_);
        out.u8(flags);
        out.svarint(static_cast<int64_t>(record.seq - previous_seq_));
        out.svarint(static_cast<int64_t>(record.time_ns - previous_time_ns_));
        out.varint(record.kernel_id);
        if (flat) {
            out.varint(record.grid[0]);
            out.varint(record.block[0]);
        } else {
            for (uint32_t extent : record.grid) out.varint(extent);
            for (uint32_t extent : record.block) out.varint(extent);
        }
        if (!same_stream) out.varint(record.stream);
        out.varint(accesses.size());
        for (const Access& access : accesses) {
            out.varint(access.alloc_id);
            out.varint(access.offset);
            out.varint(access.length);
        }
        if (append_locked(RecordType::Launch)) {
            has_previous_launch_ = true;
            previous_seq_ = record.seq;
            previous_time_ns_ = record.time_ns;
            previous_stream_ = record.stream;
        }
    }

    void kernel_duration(uint64_t launch_seq, uint64_t duration_ns) override {
        std::lock_guard lock(mutex_);
        scratch_.clear();
        Encoder out(scratch_);
        out.varint(launch_seq);
        out.varint(duration_ns);
        append_locked(RecordType::KernelDuration);
    }

    void move(const Move& record) override {
        std::lock_guard lock(mutex_);
        scratch_.clear();
        Encoder out(scratch_);
        out.u8(static_cast<uint8_t>(record.kind));
        out.varint(record.alloc_id);
        out.varint(record.offset);
        out.varint(record.length);
        out.varint(record.time_ns);
        out.varint(record.duration_ns);
        out.varint(record.launches_before);
        append_locked(RecordType::Move);
    }

    void iteration(const Iteration& record) override {
        std::lock_guard lock(mutex_);
        scratch_.clear();
        Encoder out(scratch_);
        out.varint(record.index);
        out.varint(record.launches_before);
        out.varint(record.time_ns);
        append_locked(RecordType::Iteration);
    }

    void close() override {
        {
            std::lock_guard lock(mutex_);
            if (closing_) return;
            // The end record is always kept, whatever the buffer holds: it carries
            // the dropped count and tells the reader the file is complete.
            scratch_.clear();
            Encoder out(scratch_);
            out.varint(dropped_.load(std::memory_order_relaxed));
            frame_record(current_, RecordType::End, scratch_);
            written_.fetch_add(1, std::memory_order_relaxed);
            closing_ = true;
            hand_over_current_locked();
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

    // Frames scratch_ as a record of the given type into the current chunk, or
    // drops it when the memory limit would be crossed.
    bool append_locked(RecordType type) {
        size_t record_bytes = 1 + format::varint_size(scratch_.size()) + scratch_.size();
        if (closing_ || held_bytes_ + record_bytes > buffer_limit_) {
            dropped_.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        frame_record(current_, type, scratch_);
        held_bytes_ += record_bytes;
        written_.fetch_add(1, std::memory_order_relaxed);
        if (current_.size() >= chunk_bytes_) {
            hand_over_current_locked();
            wake_flusher_.notify_one();
        }
        return true;
    }

    void hand_over_current_locked() {
        if (current_.empty()) return;
        full_chunks_.push_back(std::move(current_));
        if (spare_chunks_.empty()) {
            current_ = std::vector<uint8_t>();
            current_.reserve(chunk_bytes_);
        } else {
            current_ = std::move(spare_chunks_.back());
            spare_chunks_.pop_back();
            current_.clear();
        }
    }

    void flush_loop() {
        std::unique_lock lock(mutex_);
        while (true) {
            wake_flusher_.wait_for(lock, std::chrono::seconds(1), [this] {
                return closing_ || !full_chunks_.empty();
            });
            // A quiet program never fills a chunk: write what there is now and
            // then so that a crash loses at most about a second of records.
            if (full_chunks_.empty()) hand_over_current_locked();
            while (!full_chunks_.empty()) {
                std::vector<uint8_t> chunk = std::move(full_chunks_.front());
                full_chunks_.pop_front();
                lock.unlock();
                if (write_error_ == 0) write_fully(fd_, chunk.data(), chunk.size(), write_error_);
                lock.lock();
                // The end record was framed without being counted in held_bytes_.
                held_bytes_ -= std::min<uint64_t>(held_bytes_, chunk.size());
                if (spare_chunks_.size() < 2) spare_chunks_.push_back(std::move(chunk));
            }
            if (closing_ && full_chunks_.empty() && current_.empty()) return;
        }
    }

    const int fd_;
    const uint64_t buffer_limit_;
    const uint64_t chunk_bytes_;

    std::mutex mutex_;
    std::condition_variable wake_flusher_;
    std::vector<uint8_t> scratch_;
    std::vector<uint8_t> current_;
    std::deque<std::vector<uint8_t>> full_chunks_;
    std::vector<std::vector<uint8_t>> spare_chunks_;
    uint64_t held_bytes_ = 0;
    bool closing_ = false;
    int write_error_ = 0; // touched only by the flusher thread
    std::unordered_set<uint32_t> named_kernels_;

    bool has_previous_launch_ = false;
    uint64_t previous_seq_ = 0;
    uint64_t previous_time_ns_ = 0;
    uint64_t previous_stream_ = 0;

    std::atomic<uint64_t> written_{0};
    std::atomic<uint64_t> dropped_{0};
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
    size_t next_alloc = 0, next_free = 0, next_move = 0, next_mark = 0;
    for (size_t i = 0; i <= trace.launches.size(); ++i) {
        // Everything placed before launch i, then launch i itself.
        while (next_mark < trace.iterations.size() && trace.iterations[next_mark].launches_before <= i) {
            writer->iteration(trace.iterations[next_mark++]);
        }
        while (next_alloc < trace.allocs.size() && trace.allocs[next_alloc].launches_before <= i) {
            writer->alloc(trace.allocs[next_alloc++]);
        }
        while (next_move < trace.moves.size() && trace.moves[next_move].launches_before <= i) {
            writer->move(trace.moves[next_move++]);
        }
        while (next_free < trace.frees.size() && trace.frees[next_free].launches_before <= i) {
            writer->free(trace.frees[next_free++]);
        }
        if (i == trace.launches.size()) break;
        const Launch& launch = trace.launches[i];
        if (launch.kernel_id < trace.kernel_names.size()) writer->kernel(launch.kernel_id, trace.kernel_names[launch.kernel_id]);
        writer->launch(launch, std::span(trace.accesses).subspan(launch.first_access, launch.access_count));
        if (launch.duration_ns != 0) writer->kernel_duration(launch.seq, launch.duration_ns);
    }
    writer->close();
    return writer->records_dropped();
}

} // namespace uvmp::trace

#include "trace_file.h"

#include "core/util/file_bytes.h"
#include "core/util/large_pages.h"
#include "core/trace/format/format.h"
#include "core/trace/format/reader.h"

#include <zstd.h>

#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace uvmp::tools {
namespace {

// Decompresses every frame; errors name the offset in the compressed file. A
// file cut inside a frame (compressed as it was written, then killed) gives what
// was decompressed before the cut, and `cut_note` says where it is.
LargeVector<std::byte> decompressed(std::span<const std::byte> compressed, const std::string& path,
                                    std::string& cut_note) {
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> context(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!context) throw std::runtime_error("cannot decompress '" + path + "': out of memory");
    LargeVector<std::byte> out;
    const unsigned long long content = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
    // A size the frame states is a hint only (a corrupt one must not reserve terabytes).
    if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != ZSTD_CONTENTSIZE_ERROR && content <= 64 * compressed.size())
        out.reserve(content);
    ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
    // Non-zero while a frame is unfinished: input still to come, or output held
    // inside the decoder once the input is used up.
    size_t unfinished = 0;
    while (in.pos < in.size || unfinished != 0) {
        const size_t produced = out.size();
        out.resize(produced + ZSTD_DStreamOutSize());
        ZSTD_outBuffer piece{out.data() + produced, ZSTD_DStreamOutSize(), 0};
        unfinished = ZSTD_decompressStream(context.get(), &piece, &in);
        out.resize(produced + piece.pos);
        if (ZSTD_isError(unfinished)) {
            throw trace::TraceFormatError(in.pos, path + ": the zstd stream is corrupt at byte " + std::to_string(in.pos) +
                                                      " of the compressed file (" + ZSTD_getErrorName(unfinished) + ")");
        }
        if (in.pos == in.size && unfinished != 0 && piece.pos == 0) {
            cut_note = "the compressed file is truncated at byte " + std::to_string(in.pos) + ", inside a zstd frame; ";
            break;
        }
    }
    return out;
}

} // namespace

trace::Trace load_trace(const std::string& path) {
    const FileBytes file(path, "trace file");
    const std::span<const std::byte> bytes = file.bytes();
    std::optional<trace::TraceCut> cut;
    std::string cut_note;
    trace::Trace trace;
    if (!trace::format::is_zstd_compressed(bytes.data(), bytes.size())) {
        trace = trace::read_trace_bytes(bytes, path, cut);
    } else {
        const LargeVector<std::byte> plain = decompressed(bytes, path, cut_note);
        try {
            trace = trace::read_trace_bytes(plain, path + " (decompressed)", cut);
        } catch (const trace::TraceFormatError& error) {
            if (cut_note.empty()) throw;
            throw trace::TraceFormatError(error.offset(), path + ": " + cut_note + "what came before does not read (" +
                                                              error.what() + ")");
        }
    }
    // A job killed mid-run leaves its trace without an end record, and a record
    // may be cut in two: what is whole is still worth reading.
    if (cut) {
        std::cerr << "uvmtrace: " << path << ": " << cut_note << "trace cut at byte " << cut->byte << " after "
                  << cut->records << " records (the job was killed?); reading what is whole\n";
    } else if (!cut_note.empty()) {
        std::cerr << "uvmtrace: " << path << ": " << cut_note << "reading what is whole\n";
    }
    return trace;
}

} // namespace uvmp::tools

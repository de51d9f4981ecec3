#include "trace_file.h"

#include "core/util/file_bytes.h"
#include "core/util/large_pages.h"
#include "core/trace/format/format.h"
#include "core/trace/format/reader.h"

#include <zstd.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace uvmp::tools {
namespace {

// Decompresses every frame; errors name the offset in the compressed file.
LargeVector<std::byte> decompressed(std::span<const std::byte> compressed, const std::string& path) {
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
            throw trace::TraceFormatError(in.pos, path + ": the compressed file is truncated at byte " +
                                                      std::to_string(in.pos) + ", inside a zstd frame");
        }
    }
    return out;
}

} // namespace

trace::Trace load_trace(const std::string& path) {
    const FileBytes file(path, "trace file");
    const std::span<const std::byte> bytes = file.bytes();
    if (!trace::format::is_zstd_compressed(bytes.data(), bytes.size())) return trace::read_trace_bytes(bytes, path);
    return trace::read_trace_bytes(decompressed(bytes, path), path + " (decompressed)");
}

} // namespace uvmp::tools

#include "trace_file.h"

#include "core/large_pages.h"
#include "core/trace_format.h"
#include "core/trace_reader.h"

#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <vector>

namespace uvmp::tools {
namespace {

bool starts_compressed(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    unsigned char head[sizeof(trace::format::kZstdMagic)] = {};
    file.read(reinterpret_cast<char*>(head), sizeof head);
    return file && trace::format::is_zstd_compressed(head, sizeof head);
}

std::vector<char> read_whole(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw std::runtime_error("cannot open trace file '" + path + "': " + std::strerror(errno));
    std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (file.bad()) throw std::runtime_error("cannot read trace file '" + path + "': " + std::strerror(errno));
    return bytes;
}

// Decompresses every frame of the file; errors name the offset in the compressed file.
LargeVector<std::byte> decompressed(const std::string& path) {
    const std::vector<char> compressed = read_whole(path);
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
    if (!starts_compressed(path)) return trace::read_trace_file(path);
    const LargeVector<std::byte> bytes = decompressed(path);
    try {
        return trace::read_trace_bytes(bytes);
    } catch (const trace::TraceFormatError& error) {
        throw trace::TraceFormatError(error.offset(), path + " (decompressed): " + error.what());
    }
}

} // namespace uvmp::tools

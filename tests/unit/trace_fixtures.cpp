#include "trace_fixtures.h"

#include <filesystem>
#include <cstring>
#include <stdexcept>
#include <fstream>
#include <iterator>

namespace uvmp::trace::fixtures {

std::string scratch_path(const std::string& name) {
    std::filesystem::path dir = std::filesystem::path(UVMP_BINARY_DIR) / "test-scratch";
    std::filesystem::create_directories(dir);
    return (dir / name).string();
}

std::vector<std::byte> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> bytes(chars.size());
    std::memcpy(bytes.data(), chars.data(), chars.size());
    return bytes;
}

} // namespace uvmp::trace::fixtures

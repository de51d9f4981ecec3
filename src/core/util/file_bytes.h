// A whole file's bytes for reading: mapped when it is a regular file (no copy, and
// its pages come from the page cache instead of fresh memory), else read whole, so
// that pipes and other streams work too.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace uvmp {

class FileBytes {
public:
    // Throws std::runtime_error naming `what` ("trace file") and the path when the
    // file cannot be opened or read.
    FileBytes(const std::string& path, const char* what);
    ~FileBytes();
    FileBytes(const FileBytes&) = delete;
    FileBytes& operator=(const FileBytes&) = delete;

    std::span<const std::byte> bytes() const { return mapped_ ? std::span(mapped_, size_) : std::span(read_); }

private:
    const std::byte* mapped_ = nullptr;
    size_t size_ = 0;
    std::vector<std::byte> read_;
};

} // namespace uvmp

#include "core/util/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace uvmp {

FileBytes::FileBytes(const std::string& path, const char* what) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(std::string("cannot open ") + what + " '" + path + "': " + std::strerror(errno));
    struct stat info {};
    if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0) {
        // The reader reads every byte: map them all at once rather than fault
        // them in a few pages at a time.
        void* mapped = mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        if (mapped != MAP_FAILED) {
            madvise(mapped, static_cast<size_t>(info.st_size), MADV_SEQUENTIAL);
            mapped_ = static_cast<const std::byte*>(mapped);
            size_ = static_cast<size_t>(info.st_size);
        }
    }
    std::byte buffer[1 << 16];
    while (!mapped_) {
        const ssize_t got = read(fd, buffer, sizeof buffer);
        if (got == 0) break;
        if (got < 0) {
            if (errno == EINTR) continue;
            const int error = errno;
            close(fd);
            throw std::runtime_error(std::string("cannot read ") + what + " '" + path + "': " + std::strerror(error));
        }
        read_.insert(read_.end(), buffer, buffer + got);
    }
    close(fd);
}

FileBytes::~FileBytes() {
    if (mapped_) munmap(const_cast<std::byte*>(mapped_), size_);
}

} // namespace uvmp

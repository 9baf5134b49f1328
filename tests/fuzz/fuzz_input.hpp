// The fuzz input as a file, for parsers that read files: an in-memory file (memfd) rewritten for
// every input and named by its /proc/self/fd path, so no disk is touched.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace normnet::fuzz {

inline std::string as_file(const uint8_t* data, size_t size) {
    static const int fd = ::memfd_create("normnet-fuzz-input", 0);
    if (fd < 0 || ::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
    return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace normnet::fuzz

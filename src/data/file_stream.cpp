#include "file_stream.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "normnet/error.hpp"

namespace normnet::detail {

void FileStream::GzCloser::operator()(gzFile_s* g) const { gzclose(g); }

FileStream::FileStream(const std::string& path) : path_(path) {
    errno = 0;
    file_.reset(std::fopen(path.c_str(), "rb"));
    if (!file_) fail("cannot open ", path, ": ", std::strerror(errno));
    std::error_code ec;
    file_size = std::filesystem::file_size(path, ec);
    if (ec) fail("cannot read ", path, ": ", ec.message());
    uint8_t magic[2] = {0, 0};
    gzip = std::fread(magic, 1, 2, file_.get()) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (gzip) {
        open_gzip();
    } else {
        std::rewind(file_.get());
    }
}

FileStream::~FileStream() = default;

size_t FileStream::read(uint8_t* dst, size_t n) {
    if (!gzip) {
        size_t got = std::fread(dst, 1, n, file_.get());
        if (got < n && std::ferror(file_.get())) fail("cannot read ", path_, ": ", std::strerror(errno));
        return got;
    }
    size_t total = 0;
    while (total < n) {
        // gzread takes an unsigned count and returns an int.
        unsigned want = unsigned(std::min<size_t>(n - total, size_t{1} << 30));
        int got = gzread(gz_.get(), dst + total, want);
        if (got > 0) total += size_t(got);
        if (got < 0 || unsigned(got) < want) {
            int errnum = Z_OK;
            std::string message = gzerror(gz_.get(), &errnum);
            // Z_BUF_ERROR is zlib's "unexpected end of file": the caller reports it as truncation.
            if (errnum == Z_BUF_ERROR) truncated_ = true;
            else if (errnum != Z_OK) {
                // zlib puts the path in front of its messages; we do that ourselves.
                if (message.starts_with(path_ + ": ")) message.erase(0, path_.size() + 2);
                fail(path_, ": corrupt gzip data: ", message);
            }
            break;
        }
    }
    return total;
}

void FileStream::open_gzip() {
    uint8_t trailer[4];
    if (file_size >= 18 && std::fseek(file_.get(), -4, SEEK_END) == 0 && std::fread(trailer, 1, 4, file_.get()) == 4) {
        gzip_isize = uint32_t{trailer[0]} | uint32_t{trailer[1]} << 8 | uint32_t{trailer[2]} << 16 |
                     uint32_t{trailer[3]} << 24;
    }
    file_.reset();
    errno = 0;
    gz_.reset(gzopen(path_.c_str(), "rb"));
    if (!gz_) fail("cannot open ", path_, ": ", errno ? std::strerror(errno) : "out of memory");
    gzbuffer(gz_.get(), 1u << 17);  // zlib's 8 KiB default makes big files needlessly slow
}

}  // namespace normnet::detail

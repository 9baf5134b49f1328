// A file read front to back, raw or gzip-compressed (told apart by gzip's magic bytes, not the
// name): the one reader under the IDX and CSV parsers. Errors are normnet::Errors naming the file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

struct gzFile_s;

namespace normnet::detail {

class FileStream {
public:
    explicit FileStream(const std::string& path);
    ~FileStream();
    FileStream(const FileStream&) = delete;
    FileStream& operator=(const FileStream&) = delete;

    /// Reads up to n bytes into dst; returns fewer only where the data ends.
    size_t read(uint8_t* dst, size_t n);
    /// True once a gzip stream has ended before its end-of-stream marker and trailer.
    bool truncated() const { return truncated_; }

    bool gzip = false;
    uint64_t file_size = 0;
    /// The gzip trailer's ISIZE: the uncompressed size mod 2^32 (of the last member only).
    std::optional<uint32_t> gzip_isize;

private:
    void open_gzip();

    struct FileCloser {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    struct GzCloser {
        void operator()(gzFile_s* g) const;
    };
    std::string path_;
    std::unique_ptr<std::FILE, FileCloser> file_;
    std::unique_ptr<gzFile_s, GzCloser> gz_;
    bool truncated_ = false;
};

}  // namespace normnet::detail

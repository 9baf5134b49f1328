// The IDX reader. IDX layout: two zero bytes, a type code (0x08 = unsigned byte), the number of
// dimensions, one big-endian uint32 per dimension, then the elements, row-major.
// Files may be raw or gzipped (file_stream.hpp). The header is
// checked against what the file can really hold before anything is allocated, so a corrupt or
// hostile header is an error message, never a huge allocation.
#include "normnet/idx.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>

#include "file_stream.hpp"
#include "normnet/error.hpp"

namespace normnet {
namespace {

namespace fs = std::filesystem;
using detail::FileStream;

constexpr int kUnsignedByte = 0x08;
constexpr uint32_t kImagesMagic = 0x00000803;  // 2051: unsigned bytes, 3 dims
constexpr uint32_t kLabelsMagic = 0x00000801;  // 2049: unsigned bytes, 1 dim
// Deflate cannot turn one compressed byte into more than ~1032 bytes, so this bounds what a gzip
// file can decompress to without decompressing it.
constexpr uint64_t kMaxDeflateRatio = 1032;
// Image data rarely shrinks more than 8x under gzip (MNIST: 4.8x, Fashion-MNIST: 1.8x). Reserving
// more than that for a gzip file would trust its trailer, which anyone can forge.
constexpr uint64_t kReserveRatio = 8;
constexpr size_t kChunk = size_t{1} << 20;

uint32_t big_endian_u32(const uint8_t* p) {
    return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

// The product of the dimensions, or nullopt if the product of the non-zero ones overflows int64
// (a corrupt or hostile header). A zero count does not excuse huge image sizes: rows * cols must
// still fit, or Dataset::features() would overflow.
std::optional<int64_t> element_count(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    bool empty = false;
    for (int64_t d : dims) {
        if (d == 0) {
            empty = true;
            continue;
        }
        if (n > std::numeric_limits<int64_t>::max() / d) return std::nullopt;
        n *= d;
    }
    return empty ? 0 : n;
}

std::string hex_byte(uint8_t b) {
    const char* digits = "0123456789abcdef";
    return {'0', 'x', digits[b >> 4], digits[b & 15]};
}

std::string join_dims(const std::vector<int64_t>& dims) {
    std::string out;
    for (size_t i = 0; i < dims.size(); ++i) out += (i ? " x " : "") + std::to_string(dims[i]);
    return out;
}

// The dimensions and elements of one IDX file of unsigned bytes.
struct IdxData {
    std::vector<int64_t> dims;  // dims[0] counts the records kept
    std::vector<uint8_t> data;
    int64_t records = 0;        // the records the header declares
};

// Reads an IDX file whose magic must be `magic`; `what` ("images", "labels") is for messages.
// Only the first `max_records` records along the first dimension are kept (0: all), so that a
// run on the first N images does not hold the whole file at its peak; the rest is still read
// (gzip) or measured (raw), so a truncated or corrupt file is an error either way.
IdxData read_idx(const std::string& path, uint32_t magic, const char* what, int64_t max_records) {
    FileStream in(path);
    const int ndim = int(magic & 0xff);
    const uint64_t header_bytes = 4 + 4 * uint64_t(ndim);

    uint8_t head[4];
    NORMNET_CHECK(in.read(head, 4) == 4, path, ": truncated: the file ends inside the IDX header");
    const uint32_t got_magic = big_endian_u32(head);
    if (got_magic != magic) {
        std::string why;
        if (head[0] != 0 || head[1] != 0) why = "; not an IDX file";
        else if (head[2] != kUnsignedByte)
            why = std::string(": data type code ") + hex_byte(head[2]) + ", expected 0x08 (unsigned byte)";
        else
            why = ": " + std::to_string(int(head[3])) + " dimensions, expected " + std::to_string(ndim);
        fail(path, ": bad magic number ", got_magic, ", expected ", magic, " (", what, ")", why);
    }

    IdxData idx;
    for (int i = 0; i < ndim; ++i) {
        uint8_t dim[4];
        NORMNET_CHECK(in.read(dim, 4) == 4, path, ": truncated: the file ends inside the IDX header");
        idx.dims.push_back(int64_t{big_endian_u32(dim)});
    }
    const std::string shape = join_dims(idx.dims);
    idx.records = idx.dims[0];
    const std::optional<int64_t> count = element_count(idx.dims);
    NORMNET_CHECK(count.has_value(), path, ": header dimensions ", shape, " overflow 64 bits");
    const uint64_t n = uint64_t(*count);

    // Bound the declared size by what the file can hold before allocating for it.
    if (!in.gzip) {
        const uint64_t body = in.file_size - header_bytes;  // the header was read, so no underflow
        NORMNET_CHECK(n <= body, path, ": truncated: header declares ", n, " bytes of data (", shape, ") but only ",
              body, " follow the header");
        NORMNET_CHECK(n == body, path, ": ", body - n, " trailing bytes after the ", n, " bytes of data (", shape,
              ") the header declares");
    } else {
        const uint64_t most = in.file_size * kMaxDeflateRatio;
        NORMNET_CHECK(n <= most, path, ": header declares ", n, " bytes of data (", shape, "), more than a ",
              in.file_size, "-byte gzip file can hold (at most ", most, "); truncated or corrupt file");
    }

    // Reserve up front when the size is known to be right (raw), or the gzip trailer agrees with the
    // header (the normal single-member case), up to kReserveRatio times the file; otherwise let the
    // buffer grow only as data really arrives, so a lying header or trailer cannot make us allocate
    // for data the file does not have.
    const bool size_trusted = !in.gzip || in.gzip_isize == uint32_t(header_bytes + n);
    uint64_t keep = n;
    if (max_records > 0 && max_records < idx.dims[0]) {
        keep = n / uint64_t(idx.dims[0]) * uint64_t(max_records);  // dims[0] > max_records > 0: no division by 0
        idx.dims[0] = max_records;
    }
    if (size_trusted) idx.data.reserve(size_t(in.gzip ? std::min(keep, in.file_size * kReserveRatio) : keep));
    std::vector<uint8_t> skipped;  // scratch for the records read past and dropped
    for (uint64_t done = 0; done < n;) {
        const size_t want = size_t(std::min<uint64_t>(done < keep ? keep - done : n - done, kChunk));
        uint8_t* dst = nullptr;
        if (done < keep) {
            idx.data.resize(size_t(done) + want);
            dst = idx.data.data() + done;
        } else if (!in.gzip) {
            break;  // the file's size was checked against the header: nothing left to verify
        } else {
            skipped.resize(want);
            dst = skipped.data();
        }
        const size_t got = in.read(dst, want);
        NORMNET_CHECK(got == want, path, ": truncated: header declares ", n, " bytes of data (", shape, ") but the ",
              in.gzip ? "gzip stream" : "file", " ends after ", done + got);
        done += want;
    }
    if (keep < n && !in.gzip) return idx;
    // Reading one byte past the data also makes zlib check the gzip trailer's CRC and length.
    uint8_t extra;
    NORMNET_CHECK(in.read(&extra, 1) == 0, path, ": trailing data after the ", n, " bytes of data (", shape,
          ") the header declares");
    NORMNET_CHECK(!in.truncated(), path, ": truncated: the gzip stream ends before its trailer");
    return idx;
}

// `dir/base` if it exists, else `dir/base.gz`.
std::string find_raw_or_gz(const std::string& dir, const std::string& base) {
    std::error_code ec;
    const fs::path raw = fs::path(dir) / base;
    if (fs::exists(raw, ec)) return raw.string();
    const fs::path gz = fs::path(dir) / (base + ".gz");
    if (fs::exists(gz, ec)) return gz.string();
    fail("cannot find ", raw.string(), " or ", gz.string());
}

ImageSet image_set(IdxData idx) {
    return ImageSet{.count = idx.dims[0], .rows = idx.dims[1], .cols = idx.dims[2], .pixels = std::move(idx.data)};
}

void check_max_count(const char* where, int64_t max_count) {
    NORMNET_CHECK(max_count >= 0, where, ": max_count must be >= 0 (0: all), got ", max_count);
}

}  // namespace

ImageSet read_idx_images(const std::string& path, int64_t max_count) {
    check_max_count("read_idx_images", max_count);
    return image_set(read_idx(path, kImagesMagic, "images", max_count));
}

std::vector<uint8_t> read_idx_labels(const std::string& path, int64_t max_count) {
    check_max_count("read_idx_labels", max_count);
    return read_idx(path, kLabelsMagic, "labels", max_count).data;
}

Dataset load_idx_dataset(const std::string& images_path, const std::string& labels_path, int num_classes,
                         int64_t max_count) {
    NORMNET_CHECK(num_classes >= 1 && num_classes <= 256, "load_idx_dataset: num_classes must be in [1, 256], got ",
          num_classes);
    Dataset ds;
    check_max_count("load_idx_dataset", max_count);
    // The small file first: its errors surface at once. The counts compared are the headers'.
    IdxData labels = read_idx(labels_path, kLabelsMagic, "labels", max_count);
    IdxData images = read_idx(images_path, kImagesMagic, "images", max_count);
    NORMNET_CHECK(labels.records == images.records, images_path, " has ", images.records, " images but ", labels_path,
          " has ", labels.records, " labels");
    ds.labels = std::move(labels.data);
    ds.images = image_set(std::move(images));
    const auto bad = std::find_if(ds.labels.begin(), ds.labels.end(), [&](uint8_t y) { return y >= num_classes; });
    if (bad != ds.labels.end())
        fail(labels_path, ": label ", int(*bad), " at index ", bad - ds.labels.begin(), " is out of range for ",
             num_classes, " classes");
    ds.num_classes = num_classes;
    ds.name = images_path;
    return ds;
}

Dataset load_mnist_split(const std::string& dir, const std::string& split, int64_t max_count) {
    NORMNET_CHECK(split == "train" || split == "test", "load_mnist_split: unknown split \"", split,
          "\", expected \"train\" or \"test\"");
    const std::string prefix = split == "train" ? "train" : "t10k";
    const std::string images = find_raw_or_gz(dir, prefix + "-images-idx3-ubyte");
    const std::string labels = find_raw_or_gz(dir, prefix + "-labels-idx1-ubyte");
    Dataset ds = load_idx_dataset(images, labels, 10, max_count);
    // "data/mnist/" -> "mnist/train": short enough for logs, still says which dataset it is.
    fs::path folder = fs::path(dir).lexically_normal();
    if (!folder.has_filename()) folder = folder.parent_path();
    ds.name = folder.filename().string() + "/" + split;
    return ds;
}

}  // namespace normnet

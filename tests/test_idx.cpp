// Tests of the IDX reader: small files written here (raw and gzip) read back, every kind of
// malformed file rejected with a message naming the problem, and the real MNIST and
// Fashion-MNIST files when they are on this machine.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "normnet/error.hpp"
#include "normnet/idx.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using Catch::Contains;
using Bytes = std::vector<uint8_t>;

namespace {

struct TempDir : normnet::test::ScratchDir {
    TempDir() : ScratchDir("normnet_test_idx_") {}
};

void put_u32(Bytes& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(uint8_t(v >> shift));
}

// An IDX file: magic bytes 0 0 type ndim, big-endian dims, then the data.
Bytes idx_file(const std::vector<uint32_t>& dims, const Bytes& data, uint8_t type = 0x08) {
    Bytes out = {0, 0, type, uint8_t(dims.size())};
    for (uint32_t d : dims) put_u32(out, d);
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

Bytes iota_bytes(size_t n, uint8_t start = 0) {
    Bytes out(n);
    std::iota(out.begin(), out.end(), start);
    return out;
}

// Noise does not compress, so a gzip of it is long enough to cut in interesting places.
Bytes random_bytes(size_t n) {
    std::mt19937 rng(42);
    Bytes out(n);
    for (auto& b : out) b = uint8_t(rng());
    return out;
}

void write_raw(const std::string& path, const Bytes& bytes) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

void write_gz(const std::string& path, const Bytes& bytes) {
    gzFile gz = gzopen(path.c_str(), "wb");
    REQUIRE(gz != nullptr);
    REQUIRE(gzwrite(gz, bytes.data(), unsigned(bytes.size())) == int(bytes.size()));
    REQUIRE(gzclose(gz) == Z_OK);
}

Bytes read_raw(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Three 2x4 images with distinct pixels, and their labels.
const Bytes kPixels = iota_bytes(3 * 2 * 4, 10);
const Bytes kLabels = {7, 0, 9};

}  // namespace

TEST_CASE("idx: reads raw and gzipped image and label files alike", "[idx]") {
    TempDir dir;
    write_raw(dir / "images", idx_file({3, 2, 4}, kPixels));
    write_gz(dir / "images.gz", idx_file({3, 2, 4}, kPixels));
    write_raw(dir / "labels", idx_file({3}, kLabels));
    write_gz(dir / "labels.gz", idx_file({3}, kLabels));
    // gzip is told by its magic bytes, not by the name.
    write_gz(dir / "gz-without-extension", idx_file({3}, kLabels));
    write_raw(dir / "raw-with-extension.gz", idx_file({3}, kLabels));

    for (const char* name : {"images", "images.gz"}) {
        const normnet::ImageSet images = normnet::read_idx_images(dir / name);
        CHECK(images.count == 3);
        CHECK(images.rows == 2);
        CHECK(images.cols == 4);
        CHECK(images.pixels == kPixels);
    }
    for (const char* name : {"labels", "labels.gz", "gz-without-extension", "raw-with-extension.gz"})
        CHECK(normnet::read_idx_labels(dir / name) == kLabels);

    // An empty set is a valid file.
    write_raw(dir / "empty", idx_file({0, 28, 28}, {}));
    CHECK(normnet::read_idx_images(dir / "empty").count == 0);

    // Big enough to take several read chunks and gzip buffers.
    const Bytes big = random_bytes(3'000'000);
    write_gz(dir / "big.gz", idx_file({3000, 25, 40}, big));
    CHECK(normnet::read_idx_images(dir / "big.gz").pixels == big);
}

TEST_CASE("idx: load_idx_dataset and load_mnist_split pair images with labels", "[idx]") {
    TempDir dir;
    write_raw(dir / "train-images-idx3-ubyte", idx_file({3, 2, 4}, kPixels));
    write_raw(dir / "train-labels-idx1-ubyte", idx_file({3}, kLabels));
    write_gz(dir / "t10k-images-idx3-ubyte.gz", idx_file({1, 2, 4}, iota_bytes(8)));
    write_gz(dir / "t10k-labels-idx1-ubyte.gz", idx_file({1}, {4}));

    const normnet::Dataset train = normnet::load_idx_dataset(dir / "train-images-idx3-ubyte", dir / "train-labels-idx1-ubyte");
    CHECK(train.size() == 3);
    CHECK(train.features() == 8);
    CHECK(train.num_classes == 10);
    CHECK(train.labels == kLabels);
    CHECK(train.images.pixels == kPixels);

    const normnet::Dataset test = normnet::load_mnist_split(dir.path.string() + "/", "test");
    CHECK(test.size() == 1);
    CHECK(test.labels == Bytes{4});
    CHECK(test.name == dir.path.filename().string() + "/test");
    CHECK(normnet::load_mnist_split(dir.path.string(), "train").labels == kLabels);

    CHECK_THROWS_WITH(normnet::load_mnist_split(dir.path.string(), "val"),
                      Contains("unknown split \"val\", expected \"train\" or \"test\""));
    fs::remove(dir / "t10k-labels-idx1-ubyte.gz");
    CHECK_THROWS_WITH(normnet::load_mnist_split(dir.path.string(), "test"),
                      Contains("cannot find " + (dir / "t10k-labels-idx1-ubyte")));
    // The library names no repository script: that hint is the command line's to give.
    CHECK_THROWS_WITH(normnet::load_mnist_split(dir.path.string(), "test"), !Contains("fetch_mnist"));
}

TEST_CASE("idx: max_count keeps the first images and labels but still checks the whole file", "[idx]") {
    TempDir dir;
    const Bytes big = random_bytes(3000 * 25 * 40);
    for (const char* name : {"big", "big.gz"}) {
        const std::string path = dir / name;
        (std::string(name).ends_with(".gz") ? write_gz : write_raw)(path, idx_file({3000, 25, 40}, big));
        const normnet::ImageSet first = normnet::read_idx_images(path, 7);
        CHECK(first.count == 7);
        CHECK(first.rows == 25);
        CHECK(first.pixels == Bytes(big.begin(), big.begin() + 7 * 25 * 40));
        CHECK(normnet::read_idx_images(path, 3000).pixels == big);  // a count >= the file's: all of it
        CHECK(normnet::read_idx_images(path, 5000).count == 3000);
    }
    // What lies past the kept images is still read: a truncated or corrupt tail is an error.
    const Bytes gz = read_raw(dir / "big.gz");
    write_raw(dir / "cut.gz", Bytes(gz.begin(), gz.begin() + long(gz.size() * 3 / 4)));
    CHECK_THROWS_WITH(normnet::read_idx_images(dir / "cut.gz", 7), Contains("truncated: header declares 3000000 bytes"));
    write_raw(dir / "cut", idx_file({3000, 25, 40}, Bytes(big.begin(), big.end() - 1)));
    CHECK_THROWS_WITH(normnet::read_idx_images(dir / "cut", 7), Contains("truncated: header declares 3000000 bytes"));
    CHECK_THROWS_WITH(normnet::read_idx_images(dir / "big", -1), Contains("read_idx_images: max_count must be >= 0"));

    // load_idx_dataset compares the counts the headers declare, not the counts kept.
    write_raw(dir / "labels", idx_file({3}, kLabels));
    write_raw(dir / "images", idx_file({3, 2, 4}, kPixels));
    const normnet::Dataset two = normnet::load_idx_dataset(dir / "images", dir / "labels", 10, 2);
    CHECK(two.size() == 2);
    CHECK(two.labels == Bytes{7, 0});
    CHECK(two.images.pixels == Bytes(kPixels.begin(), kPixels.begin() + 16));
    write_raw(dir / "labels", idx_file({4}, {7, 0, 9, 1}));
    CHECK_THROWS_WITH(normnet::load_idx_dataset(dir / "images", dir / "labels", 10, 2),
                      Contains("has 3 images but") && Contains("has 4 labels"));
}

TEST_CASE("idx: malformed files are rejected with a message naming the file and the problem", "[idx]") {
    TempDir dir;
    const std::string path = dir / "bad-idx";
    const Bytes images = idx_file({3, 2, 4}, kPixels);

    SECTION("missing file") {
        CHECK_THROWS_AS(normnet::read_idx_labels(dir / "nope"), normnet::Error);
        CHECK_THROWS_WITH(normnet::read_idx_labels(dir / "nope"),
                          "cannot open " + (dir / "nope") + ": No such file or directory");
    }
    SECTION("a directory") {
        CHECK_THROWS_WITH(normnet::read_idx_labels(dir.path.string()), Contains(dir.path.string()));
    }
    SECTION("labels where images are expected, and the reverse") {
        write_raw(path, idx_file({3}, kLabels));
        CHECK_THROWS_WITH(normnet::read_idx_images(path),
                          path + ": bad magic number 2049, expected 2051 (images): 1 dimensions, expected 3");
        write_raw(path, images);
        CHECK_THROWS_WITH(normnet::read_idx_labels(path), Contains(path + ": bad magic number 2051, expected 2049 (labels)"));
    }
    SECTION("not an IDX file at all") {
        write_raw(path, {'P', 'K', 3, 4, 0, 0, 0, 0});
        CHECK_THROWS_WITH(normnet::read_idx_labels(path), Contains("bad magic number") && Contains("not an IDX file"));
    }
    SECTION("wrong data type code") {
        write_raw(path, idx_file({3, 2, 4}, kPixels, 0x0D));  // 0x0D: float
        CHECK_THROWS_WITH(normnet::read_idx_images(path),
                          Contains("bad magic number 3331, expected 2051 (images): data type code 0x0d, expected 0x08"));
    }
    SECTION("wrong number of dimensions") {
        write_raw(path, idx_file({6, 4}, kPixels));
        CHECK_THROWS_WITH(normnet::read_idx_images(path), Contains("2 dimensions, expected 3"));
    }
    SECTION("file ends inside the header") {
        write_raw(path, Bytes(images.begin(), images.begin() + 10));
        CHECK_THROWS_WITH(normnet::read_idx_images(path), Contains("truncated: the file ends inside the IDX header"));
        write_raw(path, {});
        CHECK_THROWS_WITH(normnet::read_idx_images(path), Contains("truncated"));
    }
    SECTION("truncated raw data") {
        write_raw(path, Bytes(images.begin(), images.end() - 1));
        CHECK_THROWS_WITH(normnet::read_idx_images(path),
                          path + ": truncated: header declares 24 bytes of data (3 x 2 x 4) but only 23 follow the header");
    }
    SECTION("trailing bytes after raw data") {
        Bytes longer = images;
        longer.insert(longer.end(), {1, 2});
        write_raw(path, longer);
        CHECK_THROWS_WITH(normnet::read_idx_images(path), Contains("2 trailing bytes after the 24 bytes of data (3 x 2 x 4)"));
    }
    SECTION("truncated gzip stream") {
        const Bytes pixels = random_bytes(100 * 28 * 28);
        write_gz(path, idx_file({100, 28, 28}, pixels));
        const Bytes gz = read_raw(path);
        write_raw(path, Bytes(gz.begin(), gz.begin() + long(gz.size() / 2)));
        CHECK_THROWS_WITH(normnet::read_idx_images(path),
                          Contains("truncated: header declares 78400 bytes of data (100 x 28 x 28) but the gzip stream ends after"));
        // All the data but not the 8-byte trailer (CRC and length).
        write_raw(path, Bytes(gz.begin(), gz.end() - 8));
        CHECK_THROWS_WITH(normnet::read_idx_images(path), Contains("truncated"));
    }
    SECTION("gzip stream holding more than the header declares") {
        write_gz(path, idx_file({2, 2, 4}, kPixels));
        CHECK_THROWS_WITH(normnet::read_idx_images(path), Contains("trailing data after the 16 bytes of data (2 x 2 x 4)"));
    }
    SECTION("gzip checksum mismatch") {
        write_gz(path, images);
        Bytes gz = read_raw(path);
        gz[gz.size() - 8] ^= 0xff;  // first byte of the CRC-32
        write_raw(path, gz);
        CHECK_THROWS_WITH(normnet::read_idx_images(path), Contains(path + ": corrupt gzip data: incorrect data check"));
    }
    // A header must be checked against the file before allocating: these would ask for 4 EiB.
    SECTION("huge header, raw") {
        write_raw(path, idx_file({1u << 31, 1u << 31, 1}, kPixels));
        CHECK_THROWS_WITH(normnet::read_idx_images(path),
                          Contains("header declares 4611686018427387904 bytes of data (2147483648 x 2147483648 x 1) "
                                   "but only 24 follow the header"));
    }
    SECTION("huge header, gzip") {
        write_gz(path, idx_file({1u << 31, 1u << 31, 1}, kPixels));
        CHECK_THROWS_WITH(normnet::read_idx_images(path),
                          Contains("header declares 4611686018427387904 bytes of data") && Contains("gzip file can hold"));
    }
    SECTION("header dimensions whose product overflows 64 bits") {
        write_raw(path, idx_file({1u << 31, 1u << 31, 1u << 31}, kPixels));
        CHECK_THROWS_WITH(normnet::read_idx_images(path),
                          path + ": header dimensions 2147483648 x 2147483648 x 2147483648 overflow 64 bits");
        write_gz(path, idx_file({0xffffffffu, 0xffffffffu, 0xffffffffu}, kPixels));
        CHECK_THROWS_WITH(normnet::read_idx_images(path), Contains("overflow 64 bits"));
    }
    SECTION("a zero count with image sizes whose product overflows") {
        // Empty, but rows x cols = (2^32 - 1)^2 would overflow features().
        write_raw(path, idx_file({0, 0xffffffffu, 0xffffffffu}, {}));
        CHECK_THROWS_WITH(normnet::read_idx_images(path),
                          path + ": header dimensions 0 x 4294967295 x 4294967295 overflow 64 bits");
        write_raw(path, idx_file({0xffffffffu, 0, 0xffffffffu}, {}));
        CHECK_THROWS_WITH(normnet::read_idx_images(path), Contains("overflow 64 bits"));
        write_raw(path, idx_file({0, 65536, 65536}, {}));  // big but representable: an empty set
        CHECK(normnet::read_idx_images(path).count == 0);
    }
    SECTION("image and label counts disagree") {
        write_raw(dir / "images", images);
        write_raw(dir / "labels", idx_file({2}, {1, 2}));
        CHECK_THROWS_WITH(normnet::load_idx_dataset(dir / "images", dir / "labels"),
                          (dir / "images") + " has 3 images but " + (dir / "labels") + " has 2 labels");
    }
    SECTION("label out of range") {
        write_raw(dir / "images", images);
        write_raw(dir / "labels", idx_file({3}, {1, 10, 11}));
        CHECK_THROWS_WITH(normnet::load_idx_dataset(dir / "images", dir / "labels"),
                          (dir / "labels") + ": label 10 at index 1 is out of range for 10 classes");
        CHECK(normnet::load_idx_dataset(dir / "images", dir / "labels", 12).num_classes == 12);
        CHECK_THROWS_WITH(normnet::load_idx_dataset(dir / "images", dir / "labels", 0),
                          Contains("num_classes must be in [1, 256], got 0"));
    }
}

// Runs f in a child process whose address space may grow by at most `headroom` bytes; returns
// the child's exit status: 0 when f returned, 1 when it threw normnet::Error, 2 on bad_alloc.
int with_memory_limit(uint64_t headroom, const std::function<void()>& f) {
    const pid_t child = fork();
    if (child == 0) {
        std::ifstream statm("/proc/self/statm");
        uint64_t pages = 0;
        statm >> pages;
        const rlim_t limit = pages * uint64_t(sysconf(_SC_PAGESIZE)) + headroom;
        rlimit r{limit, limit};
        setrlimit(RLIMIT_AS, &r);
        try {
            f();
        } catch (const normnet::Error&) {
            _exit(1);
        } catch (const std::bad_alloc&) {
            _exit(2);
        }
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_CASE("idx: a forged gzip trailer cannot make the reader reserve more than the file can hold", "[idx]") {
#ifdef NORMNET_SANITIZED
    NORMNET_SKIP("an address-space limit cannot be tested under ASan (its shadow memory)");
#endif
    TempDir dir;
    const std::string path = dir / "forged.gz";
    // 1 MB of noise (it does not compress) under a header claiming 1,000,000 images (784 MB), less
    // than deflate's 1032x bound allows for the file, with the trailer's ISIZE forged to agree.
    const Bytes noise = random_bytes(1 << 20);
    write_gz(path, idx_file({1000000, 28, 28}, noise));
    Bytes gz = read_raw(path);
    const uint32_t claimed = uint32_t(16 + uint64_t{1000000} * 784);
    for (int i = 0; i < 4; ++i) gz[gz.size() - 4 + size_t(i)] = uint8_t(claimed >> (8 * i));
    write_raw(path, gz);
    // With 256 MB of headroom a 784 MB reservation fails; reading what is really there does not.
    const int status = with_memory_limit(256u << 20, [&] { normnet::read_idx_images(path); });
    CHECK(status == 1);  // normnet::Error (the forged length), not std::bad_alloc (2)
    CHECK_THROWS_WITH(normnet::read_idx_images(path), Contains(path + ": corrupt gzip data: incorrect length check"));
}

// Facts about the real files, computed independently with Python's gzip module.
TEST_CASE("idx: real MNIST from data/mnist", "[idx][data]") {
    const std::string dir = std::string(NORMNET_SOURCE_DIR) + "/data/mnist";
    if (!fs::exists(dir + "/train-images-idx3-ubyte") && !fs::exists(dir + "/train-images-idx3-ubyte.gz")) {
        NORMNET_SKIP("MNIST not found in " << dir << " (run data/fetch_mnist.sh)");
    }
    const normnet::Dataset train = normnet::load_mnist_split(dir, "train");
    const normnet::Dataset test = normnet::load_mnist_split(dir, "test");
    CHECK(train.name == "mnist/train");
    CHECK(train.size() == 60000);
    CHECK(test.size() == 10000);
    CHECK(train.images.rows == 28);
    CHECK(train.images.cols == 28);
    CHECK(train.features() == 784);
    CHECK(Bytes(train.labels.begin(), train.labels.begin() + 5) == Bytes{5, 0, 4, 1, 9});
    CHECK(Bytes(test.labels.begin(), test.labels.begin() + 5) == Bytes{7, 2, 1, 0, 4});
    CHECK(std::accumulate(train.images.pixels.begin(), train.images.pixels.begin() + 784, 0) == 27525);
    std::array<int, 10> per_class{};
    for (uint8_t y : train.labels) ++per_class[y];
    CHECK(per_class == std::array<int, 10>{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949});
}

TEST_CASE("idx: real Fashion-MNIST from the Debian package", "[idx][data]") {
    const std::string dir = "/usr/share/datasets/fashion-mnist";
    if (!fs::exists(dir + "/train-images-idx3-ubyte.gz")) {
        NORMNET_SKIP("Fashion-MNIST not found in " << dir << " (apt-get install dataset-fashion-mnist)");
    }
    const normnet::Dataset train = normnet::load_mnist_split(dir, "train");
    const normnet::Dataset test = normnet::load_mnist_split(dir, "test");
    CHECK(train.size() == 60000);
    CHECK(test.size() == 10000);
    CHECK(train.features() == 784);
    CHECK(Bytes(train.labels.begin(), train.labels.begin() + 5) == Bytes{9, 0, 0, 3, 0});
    CHECK(Bytes(test.labels.begin(), test.labels.begin() + 5) == Bytes{9, 2, 1, 1, 6});
    CHECK(std::accumulate(test.images.pixels.begin(), test.images.pixels.begin() + 784, 0) == 33456);
    std::array<int, 10> per_class{};
    for (uint8_t y : train.labels) ++per_class[y];
    CHECK(per_class == std::array<int, 10>{6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000});
}

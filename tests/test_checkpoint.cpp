// Tests of safetensors checkpoints: a BatchNorm model's state_dict survives a save/load bit for
// bit (num_batches_tracked stored as I64, as PyTorch does), the file layout is the format's, a
// failed write leaves the old file and no temporary behind, and every kind of corrupt file is a
// normnet::Error naming the file, never a crash or a huge allocation.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "normnet/normnet.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using Catch::Contains;
using normnet::NamedTensors;
using normnet::Tensor;

namespace {

struct TempDir : normnet::test::ScratchDir {
    TempDir() : ScratchDir("normnet_test_ckpt_") {}
};
using normnet::test::files_in;
using normnet::test::read_file;

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A safetensors file from its parts: the 8-byte little-endian header length, the header, the data.
std::string safetensors_bytes(const std::string& header, const std::string& data, uint64_t header_length) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((header_length >> (8 * i)) & 0xff);
    return out + header + data;
}
std::string safetensors_bytes(const std::string& header, const std::string& data) {
    return safetensors_bytes(header, data, header.size());
}

template <class T>
std::string raw_bytes(const std::vector<T>& values) {
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}


void require_same_state(const NamedTensors& actual, const NamedTensors& expected) {
    REQUIRE(actual.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        INFO("tensor " << expected[i].first);
        CHECK(actual[i].first == expected[i].first);
        CHECK(normnet::test::bit_equal(actual[i].second, expected[i].second));
    }
}

// Linear -> ReLU -> BatchNorm1d -> Linear, trained on a few batches so the running statistics
// and num_batches_tracked are no longer their initial values.
std::shared_ptr<normnet::Sequential> batchnorm_model(uint64_t seed) {
    normnet::manual_seed(seed);
    auto model = std::make_shared<normnet::Sequential>(
        std::initializer_list<normnet::AnyModule>{normnet::Linear(5, 4), normnet::ReLU(), normnet::BatchNorm1d(4),
                                                  normnet::Linear(4, 3)});
    normnet::Generator gen(seed + 1);
    for (int step = 0; step < 3; ++step) model->forward(normnet::randn({8, 5}, gen));
    return model;
}

}  // namespace

TEST_CASE("checkpoint: a BatchNorm model's state_dict round-trips bit for bit", "[checkpoint]") {
    TempDir dir;
    const auto model = batchnorm_model(3);
    const NamedTensors state = model->state_dict();
    REQUIRE(normnet::find_tensor(state, "2.num_batches_tracked").item() == 3.0f);
    const std::string path = dir / "model.safetensors";
    normnet::save_safetensors(path, state);

    const normnet::SafetensorsData loaded = normnet::load_safetensors(path);
    CHECK(loaded.path == path);
    CHECK(loaded.metadata.empty());
    require_same_state(loaded.tensors, state);  // same names, same order, same bits
    for (const auto& [name, t] : state) {
        INFO(name);
        CHECK(loaded.dtypes.at(name) == (name == "2.num_batches_tracked" ? "I64" : "F32"));
    }
    CHECK(loaded.at("2.num_batches_tracked").shape() == normnet::Shape{});  // a scalar, as in PyTorch

    // The raw header says the same, and the stored int64 is the count.
    const std::string bytes = read_file(path);
    uint64_t header_length = 0;
    std::memcpy(&header_length, bytes.data(), 8);
    const auto header = nlohmann::json::parse(bytes.substr(8, header_length));
    CHECK(header.at("2.num_batches_tracked").at("dtype") == "I64");
    CHECK(header.at("2.num_batches_tracked").at("shape") == nlohmann::json::array());
    CHECK(header.at("2.running_var").at("dtype") == "F32");
    const auto offsets = header.at("2.num_batches_tracked").at("data_offsets").get<std::vector<uint64_t>>();
    REQUIRE(offsets[1] - offsets[0] == 8);
    int64_t count = 0;
    std::memcpy(&count, bytes.data() + 8 + header_length + offsets[0], 8);
    CHECK(count == 3);

    // Loading into a fresh model with other initial weights makes it identical.
    const auto other = batchnorm_model(99);
    REQUIRE_FALSE(normnet::test::bit_equal(other->state_dict()[0].second, state[0].second));
    other->load_state_dict(loaded.tensors);
    require_same_state(other->state_dict(), state);
}

TEST_CASE("checkpoint: special float values and metadata round-trip exactly", "[checkpoint]") {
    TempDir dir;
    const float denormal = std::numeric_limits<float>::denorm_min();
    const Tensor special = normnet::from_vector({-0.0f, 0.0f, INFINITY, -INFINITY, NAN, denormal, 1e38f, -1.5f}, {2, 2, 2});
    const NamedTensors tensors{{"z.special", special}, {"a.empty", normnet::zeros({0, 3})}, {"m.scalar", normnet::scalar_tensor(2.5f)}};
    const std::map<std::string, std::string> metadata{{"format", "pt"},
                                                      {"normnet.architecture", R"({"hidden":[300,100]})"},
                                                      {"quotes \"and\" unicode", "caf\u00e9 \\ \n tab\t"},
                                                      {"empty", ""}};
    const std::string path = dir / "special.safetensors";
    normnet::save_safetensors(path, tensors, metadata);
    const auto loaded = normnet::load_safetensors(path);
    CHECK(loaded.metadata == metadata);
    require_same_state(loaded.tensors, tensors);  // file order is the order given, not sorted
    CHECK(loaded.at("a.empty").shape() == normnet::Shape{0, 3});
    CHECK_THROWS_WITH(loaded.at("nope"), Contains(path) && Contains("nope"));
}

TEST_CASE("checkpoint: the file layout is safetensors' (LE length, padded JSON, contiguous offsets)", "[checkpoint]") {
    TempDir dir;
    const auto model = batchnorm_model(5);
    const NamedTensors state = model->state_dict();
    const std::string path = dir / "layout.safetensors";
    normnet::save_safetensors(path, state, {{"format", "pt"}});
    const std::string bytes = read_file(path);
    REQUIRE(bytes.size() >= 8);

    uint64_t header_length = 0;
    for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
    REQUIRE(8 + header_length <= bytes.size());
    CHECK(header_length % 8 == 0);  // the data starts 8-byte aligned
    const std::string text = bytes.substr(8, header_length);
    CHECK(text.front() == '{');
    CHECK(text.find_last_not_of(' ') == text.rfind('}'));  // padded with spaces only
    const auto header = nlohmann::ordered_json::parse(text);
    CHECK(header.at("__metadata__") == nlohmann::ordered_json{{"format", "pt"}});

    // Tensors appear in state_dict order with contiguous offsets covering exactly the data.
    uint64_t expected_offset = 0;
    size_t i = 0;
    const uint64_t data_start = 8 + header_length;
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") continue;
        REQUIRE(i < state.size());
        INFO(name);
        CHECK(name == state[i].first);
        CHECK(entry.at("shape").get<std::vector<int64_t>>() == state[i].second.shape().vec());
        const auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
        REQUIRE(offsets.size() == 2);
        CHECK(offsets[0] == expected_offset);
        const std::string dtype = entry.at("dtype");
        const uint64_t element = dtype == "I64" ? 8 : 4;
        CHECK(offsets[1] - offsets[0] == static_cast<uint64_t>(state[i].second.numel()) * element);
        if (dtype == "F32") {  // the raw little-endian floats are the tensor's
            const auto values = state[i].second.to_vector();
            CHECK(bytes.compare(data_start + offsets[0], offsets[1] - offsets[0], raw_bytes(values)) == 0);
        }
        expected_offset = offsets[1];
        ++i;
    }
    CHECK(i == state.size());
    CHECK(data_start + expected_offset == bytes.size());
}

TEST_CASE("checkpoint: a failed write throws naming the path and keeps the old file", "[checkpoint]") {
    TempDir dir;
    const std::string path = dir / "model.safetensors";
    const auto model = batchnorm_model(1);
    normnet::save(*model, path, {{"version", "old"}});
    const std::string old_bytes = read_file(path);
    // A bigger state, so its write takes more than one buffer.
    const NamedTensors big{{"w", normnet::ones({512, 1024})}};

    SECTION("the folder does not exist") {
        const std::string missing = dir / "no/such/folder/model.safetensors";
        CHECK_THROWS_WITH(normnet::save_safetensors(missing, big), Contains(missing));
        CHECK_FALSE(fs::exists(dir.path / "no"));
    }
    SECTION("the disk fills up in the middle of the write") {
        // RLIMIT_FSIZE makes write() fail with EFBIG past 64 KiB, as a full disk would (root
        // ignores folder permissions, a file size limit applies to everyone).
        struct sigaction ignore {}, saved {};
        ignore.sa_handler = SIG_IGN;
        REQUIRE(sigaction(SIGXFSZ, &ignore, &saved) == 0);
        rlimit old_limit{};
        REQUIRE(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
        rlimit small = old_limit;
        small.rlim_cur = 64 * 1024;
        REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
        bool threw = false;
        std::string message;
        try {
            normnet::save_safetensors(path, big, {{"version", "new"}});
        } catch (const normnet::Error& e) {
            threw = true;
            message = e.what();
        }
        setrlimit(RLIMIT_FSIZE, &old_limit);
        sigaction(SIGXFSZ, &saved, nullptr);
        CHECK(threw);
        CHECK_THAT(message, Contains(path) && Contains("cannot write"));
    }
    // Whatever happened, the old checkpoint is whole and no temporary file is left behind.
    CHECK(read_file(path) == old_bytes);
    CHECK(normnet::load_safetensors(path).metadata.at("version") == "old");
    CHECK(files_in(dir.path) == std::vector<std::string>{"model.safetensors"});
}

TEST_CASE("checkpoint: on a read-only disk (or folder) a write fails naming the path and keeps the old file", "[checkpoint]") {
    TempDir dir;
    // As root, folder permissions do not stop writes; a read-only file system does.
    normnet::test::Tmpfs disk(dir.path / "disk", 1 << 20);
    if (geteuid() == 0 && !disk.mounted) NORMNET_SKIP("cannot mount a tmpfs (no CAP_SYS_ADMIN?): read-only disk not tested");
    const std::string path = (disk.path / "model.safetensors").string();
    normnet::save(*batchnorm_model(1), path, {{"version", "old"}});
    const std::string old_bytes = read_file(path);
    if (disk.mounted) {
        REQUIRE(disk.make_read_only());
    } else {
        fs::permissions(disk.path, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                        fs::perm_options::remove);
    }
    CHECK_THROWS_WITH(normnet::save_safetensors(path, {{"w", normnet::ones({4})}}),
                      Contains("cannot write " + path) && Contains(disk.mounted ? "Read-only file system" : "Permission denied"));
    CHECK(read_file(path) == old_bytes);
    CHECK(files_in(disk.path) == std::vector<std::string>{"model.safetensors"});
}

TEST_CASE("checkpoint: saving over an existing file replaces it whole", "[checkpoint]") {
    TempDir dir;
    const std::string path = dir / "model.safetensors";
    normnet::save_safetensors(path, {{"w", normnet::ones({1000})}}, {{"version", "1"}});
    normnet::save_safetensors(path, {{"w", normnet::full({3}, 2.0f)}}, {{"version", "2"}});
    const auto loaded = normnet::load_safetensors(path);
    CHECK(loaded.metadata.at("version") == "2");
    CHECK(loaded.at("w").to_vector() == std::vector<float>{2, 2, 2});
    CHECK(files_in(dir.path) == std::vector<std::string>{"model.safetensors"});
    CHECK_THROWS_WITH(normnet::save_safetensors(path, {{"a", normnet::ones({1})}, {"a", normnet::ones({1})}}),
                      Contains("duplicate"));
    CHECK_THROWS_WITH(normnet::save_safetensors(path, {{"__metadata__", normnet::ones({1})}}), Contains("reserved"));
    CHECK(normnet::load_safetensors(path).metadata.at("version") == "2");
}

TEST_CASE("checkpoint: corrupt files are errors naming the file, never crashes", "[checkpoint]") {
    TempDir dir;
    const std::string path = dir / "bad.safetensors";
    const std::string f32x2 = raw_bytes(std::vector<float>{1.0f, 2.0f});
    const auto header_of = [](const std::string& entry) { return std::string(R"({"t":)") + entry + "}"; };
    const std::string good_entry = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

    // The well-formed file the corruptions start from loads.
    write_bytes(path, safetensors_bytes(header_of(good_entry), f32x2));
    REQUIRE(normnet::load_safetensors(path).at("t").to_vector() == std::vector<float>{1.0f, 2.0f});

    struct Case {
        const char* what;
        std::string bytes;
        const char* says;
    };
    const std::vector<Case> cases{
        {"empty file", "", "shorter than its 8-byte header length"},
        {"shorter than 8 bytes", std::string("\x10\x00\x00", 3), "shorter than its 8-byte header length"},
        {"header length larger than the file", safetensors_bytes(header_of(good_entry), f32x2, 1000),
         "corrupt safetensors header length 1000"},
        {"header length of 2^63", safetensors_bytes(header_of(good_entry), f32x2, uint64_t{1} << 63),
         "corrupt safetensors header length"},
        {"header not JSON", safetensors_bytes("{\"t\": [1, 2", f32x2), "corrupt safetensors header"},
        {"header a JSON array", safetensors_bytes("[1, 2, 3]   ", f32x2), "not a JSON object"},
        {"entry without dtype", safetensors_bytes(header_of(R"({"shape":[2],"data_offsets":[0,8]})"), f32x2),
         "corrupt safetensors header"},
        {"shape not a list", safetensors_bytes(header_of(R"({"dtype":"F32","shape":"2","data_offsets":[0,8]})"), f32x2),
         "\"shape\" that is not a list"},
        {"unknown dtype", safetensors_bytes(header_of(R"({"dtype":"U8","shape":[8],"data_offsets":[0,8]})"), f32x2),
         "unsupported dtype U8"},
        {"invalid bool", safetensors_bytes(header_of(R"({"dtype":"BOOL","shape":[8],"data_offsets":[0,8]})"), f32x2),
         "BOOL byte other than 0 or 1"},
        {"data offsets beyond the data", safetensors_bytes(header_of(R"({"dtype":"F32","shape":[2],"data_offsets":[8,16]})"), f32x2),
         "data offsets outside the file"},
        {"data offsets reversed", safetensors_bytes(header_of(R"({"dtype":"F32","shape":[0],"data_offsets":[8,0]})"), f32x2),
         "data offsets outside the file"},
        {"three data offsets", safetensors_bytes(header_of(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4,8]})"), f32x2),
         "data offsets outside the file"},
        {"shape not matching the bytes", safetensors_bytes(header_of(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"), f32x2),
         "does not match its 8 bytes"},
        {"negative size", safetensors_bytes(header_of(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"), f32x2),
         "impossible shape"},
        {"2^40 elements in 8 bytes", safetensors_bytes(header_of(R"({"dtype":"F32","shape":[1048576,1048576],"data_offsets":[0,8]})"), f32x2),
         "does not match its 8 bytes"},
        {"2^40 elements claimed with offsets to match",
         safetensors_bytes(header_of(R"({"dtype":"F32","shape":[1048576,1048576],"data_offsets":[0,4398046511104]})"), f32x2),
         "data offsets outside the file"},
        {"sizes whose product overflows int64",
         safetensors_bytes(header_of(R"({"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]})"), ""),
         "impossible shape"},
        {"nine dimensions", safetensors_bytes(header_of(R"({"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]})"),
                                              f32x2.substr(0, 4)),
         "9 dimensions"},
        {"truncated data", safetensors_bytes(header_of(good_entry), f32x2.substr(0, 5)), "data offsets outside the file"},
        {"data left over", safetensors_bytes(header_of(good_entry), f32x2 + "junk"), "truncated or corrupt"},
        {"two tensors on the same bytes",
         safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                           f32x2),
         "overlap or leave a gap"},
        // JSON floats where integers belong are rejected, not truncated (issue 15, item 6).
        {"fractional data offset", safetensors_bytes(header_of(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8.5]})"), f32x2),
         "non-integer \"data_offsets\" value 8.5"},
        {"data offset written as a float", safetensors_bytes(header_of(R"({"dtype":"F32","shape":[2],"data_offsets":[0.0,8]})"), f32x2),
         "non-integer \"data_offsets\" value 0.0"},
        {"data offset of 1e300", safetensors_bytes(header_of(R"({"dtype":"F32","shape":[2],"data_offsets":[0,1e300]})"), f32x2),
         "non-integer \"data_offsets\""},
        {"shape of 1e300", safetensors_bytes(header_of(R"({"dtype":"F32","shape":[1e300],"data_offsets":[0,8]})"), f32x2),
         "non-integer \"shape\" value 1e+300"},
        {"fractional shape", safetensors_bytes(header_of(R"({"dtype":"F32","shape":[2.5],"data_offsets":[0,8]})"), f32x2),
         "non-integer \"shape\" value 2.5"},
        {"size of 2^64", safetensors_bytes(header_of(R"({"dtype":"F32","shape":[18446744073709551615,0],"data_offsets":[0,0]})"), ""),
         "impossible shape"},
        {"a tensor entry that is not an object", safetensors_bytes(header_of("[1, 2]"), f32x2), "is not a JSON object"},
        {"metadata not strings", safetensors_bytes(R"({"__metadata__":{"epoch":3},"t":)" + good_entry + "}", f32x2),
         "corrupt safetensors header"},
    };
    for (const Case& c : cases) {
        INFO(c.what);
        write_bytes(path, c.bytes);
        CHECK_THROWS_MATCHES(normnet::load_safetensors(path), normnet::Error,
                             Catch::Matchers::Predicate<normnet::Error>(
                                 [&](const normnet::Error& e) {
                                     const std::string m = e.what();
                                     return m.find(path) != std::string::npos && m.find(c.says) != std::string::npos;
                                 },
                                 std::string("message names ") + path + " and says '" + c.says + "'"));
    }

    CHECK_THROWS_WITH(normnet::load_safetensors(dir / "missing.safetensors"),
                      Contains("cannot open") && Contains(dir / "missing.safetensors"));
    CHECK_THROWS_WITH(normnet::load_safetensors(dir.path.string()), Contains(dir.path.string()));
}

TEST_CASE("checkpoint: module save() and load() helpers, and load_state_dict's key checks", "[checkpoint]") {
    TempDir dir;
    const std::string path = dir / "model.safetensors";
    const auto model = batchnorm_model(11);
    model->eval();
    normnet::save(*model, path, {{"format", "pt"}});
    CHECK(normnet::load_safetensors(path).metadata.at("format") == "pt");

    const auto other = batchnorm_model(12);
    other->eval();
    normnet::load(*other, path);
    require_same_state(other->state_dict(), model->state_dict());
    const Tensor x = normnet::randn({4, 5});
    CHECK(normnet::test::bit_equal(other->forward(x), model->forward(x)));

    NamedTensors state = model->state_dict();
    SECTION("a missing key") {
        NamedTensors missing;
        for (const auto& entry : state) {
            if (entry.first != "2.running_mean") missing.push_back(entry);
        }
        CHECK_THROWS_WITH(other->load_state_dict(missing), Contains("missing key") && Contains("2.running_mean"));
        CHECK_NOTHROW(other->load_state_dict(missing, /*strict=*/false));
    }
    SECTION("an extra key") {
        state.emplace_back("5.weight", normnet::ones({2}));
        CHECK_THROWS_WITH(other->load_state_dict(state), Contains("unexpected key") && Contains("5.weight"));
    }
    SECTION("a wrong shape") {
        for (auto& [name, t] : state) {
            if (name == "3.weight") t = normnet::ones({3, 5});
        }
        CHECK_THROWS_WITH(other->load_state_dict(state), Contains("3.weight") && Contains("[3, 5]") && Contains("[3, 4]"));
    }
    SECTION("a file of another architecture") {
        normnet::manual_seed(0);
        normnet::Sequential wider{normnet::Linear(5, 6), normnet::ReLU(), normnet::BatchNorm1d(6), normnet::Linear(6, 3)};
        normnet::save(wider, dir / "wider.safetensors");
        CHECK_THROWS_WITH(normnet::load(*other, dir / "wider.safetensors"), Contains("0.weight") && Contains("[6, 5]"));
    }
}

TEST_CASE("checkpoint: an empty [2, 0] tensor at data_offsets [0, 0] loads", "[checkpoint]") {
    TempDir dir;
    const std::string path = dir / "empty.safetensors";
    // Alone (the file has no data bytes at all), and between two tensors with data.
    write_bytes(path, safetensors_bytes(R"({"e":{"dtype":"F32","shape":[2,0],"data_offsets":[0,0]}})", ""));
    CHECK(normnet::load_safetensors(path).at("e").shape() == normnet::Shape{2, 0});
    write_bytes(path, safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                        R"("e":{"dtype":"F32","shape":[2,0],"data_offsets":[4,4]},)"
                                        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                        raw_bytes(std::vector<float>{1.0f, 2.0f})));
    const auto loaded = normnet::load_safetensors(path);
    CHECK(loaded.at("e").shape() == normnet::Shape{2, 0});
    CHECK(loaded.at("b").item() == 2.0f);
    // What normnet writes for an empty tensor reads back the same.
    normnet::save_safetensors(path, {{"e", normnet::zeros({2, 0})}});
    CHECK(normnet::load_safetensors(path).at("e").shape() == normnet::Shape{2, 0});
}

namespace {

// The float value of every binary16 / bfloat16 bit pattern, from the formats' definitions (not
// from bit tricks like the reader's).
float half_reference(uint16_t h) {
    const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    const float s = sign ? -1.0f : 1.0f;
    if (exponent == 0) return s * std::ldexp(static_cast<float>(mantissa) / 1024.0f, -14);
    if (exponent == 31) return mantissa == 0 ? s * INFINITY : NAN;
    return s * std::ldexp(1.0f + static_cast<float>(mantissa) / 1024.0f, exponent - 15);
}
float bfloat16_reference(uint16_t b) {
    const int sign = b >> 15, exponent = (b >> 7) & 0xff, mantissa = b & 0x7f;
    const float s = sign ? -1.0f : 1.0f;
    if (exponent == 0) return s * std::ldexp(static_cast<float>(mantissa) / 128.0f, -126);
    if (exponent == 255) return mantissa == 0 ? s * INFINITY : NAN;
    return s * std::ldexp(1.0f + static_cast<float>(mantissa) / 128.0f, exponent - 127);
}

}  // namespace

TEST_CASE("checkpoint: F16 and BF16 tensors load exactly into float32 (all 65,536 values each)", "[checkpoint]") {
    TempDir dir;
    std::vector<uint16_t> patterns(65536);
    for (size_t i = 0; i < patterns.size(); ++i) patterns[i] = static_cast<uint16_t>(i);
    const std::string data = raw_bytes(patterns);
    const std::string path = dir / "half.safetensors";
    write_bytes(path, safetensors_bytes(R"({"h":{"dtype":"F16","shape":[256,256],"data_offsets":[0,131072]},)"
                                        R"("b":{"dtype":"BF16","shape":[65536],"data_offsets":[131072,262144]}})",
                                        data + data));
    const auto loaded = normnet::load_safetensors(path);
    CHECK(loaded.dtypes.at("h") == "F16");
    CHECK(loaded.dtypes.at("b") == "BF16");
    CHECK(loaded.at("h").shape() == normnet::Shape{256, 256});
    const auto h = loaded.at("h").to_vector(), b = loaded.at("b").to_vector();
    int64_t wrong = 0;
    for (size_t i = 0; i < patterns.size(); ++i) {
        const float eh = half_reference(patterns[i]), eb = bfloat16_reference(patterns[i]);
        // Equal values with the same sign bit (so -0 stays -0); NaN stays NaN.
        const auto same = [](float got, float want) {
            return std::isnan(want) ? std::isnan(got) : got == want && std::signbit(got) == std::signbit(want);
        };
        wrong += !same(h[i], eh) + !same(b[i], eb);
    }
    CHECK(wrong == 0);
    CHECK(h[0x3c00] == 1.0f);
    CHECK(h[0x0001] == std::ldexp(1.0f, -24));  // the smallest subnormal
    CHECK(h[0x7bff] == 65504.0f);
    CHECK(b[0x3f80] == 1.0f);
}

TEST_CASE("checkpoint: load() accepts num_batches_tracked of shape [1], as PyTorch does", "[checkpoint]") {
    TempDir dir;
    const auto model = batchnorm_model(4);
    NamedTensors state = model->state_dict();
    for (auto& [name, t] : state) {
        if (name == "2.num_batches_tracked") t = normnet::from_vector({3.0f}, {1});
    }
    const std::string path = dir / "old.safetensors";
    normnet::save_safetensors(path, state);
    REQUIRE(normnet::load_safetensors(path).at("2.num_batches_tracked").shape() == normnet::Shape{1});
    const auto other = batchnorm_model(5);
    normnet::load(*other, path);
    require_same_state(other->state_dict(), model->state_dict());
    CHECK(normnet::find_tensor(other->state_dict(), "2.num_batches_tracked").shape() == normnet::Shape{});
    // Only a one-element list stands for a scalar.
    for (auto& [name, t] : state) {
        if (name == "2.num_batches_tracked") t = normnet::from_vector({3.0f, 4.0f}, {2});
    }
    normnet::save_safetensors(path, state);
    CHECK_THROWS_WITH(normnet::load(*other, path), Contains("size mismatch for 2.num_batches_tracked"));
}

TEST_CASE("checkpoint: load() that fails leaves the module unchanged", "[checkpoint]") {
    TempDir dir;
    const auto model = batchnorm_model(6);
    const auto other = batchnorm_model(7);
    NamedTensors before;
    for (const auto& [name, t] : other->state_dict()) before.emplace_back(name, t.clone());
    const auto require_unchanged = [&] { require_same_state(other->state_dict(), before); };

    // Every tensor but the last matches, so a loader copying as it checks would change the
    // first layers before failing.
    NamedTensors state = model->state_dict();
    SECTION("a wrong shape in the last tensor") {
        state.back().second = normnet::ones({5});
        normnet::save_safetensors(dir / "bad.safetensors", state);
        CHECK_THROWS_WITH(normnet::load(*other, dir / "bad.safetensors"), Contains("3.bias") && Contains("[5]"));
        require_unchanged();
    }
    SECTION("a missing last tensor") {
        state.pop_back();
        normnet::save_safetensors(dir / "bad.safetensors", state);
        CHECK_THROWS_WITH(normnet::load(*other, dir / "bad.safetensors"), Contains("missing key \"3.bias\""));
        require_unchanged();
    }
    SECTION("an extra tensor") {
        state.emplace_back("4.weight", normnet::ones({1}));
        normnet::save_safetensors(dir / "bad.safetensors", state);
        CHECK_THROWS_WITH(normnet::load(*other, dir / "bad.safetensors"), Contains("unexpected key \"4.weight\""));
        require_unchanged();
    }
}

TEST_CASE("checkpoint: temporaries of dead writers are removed, those of live ones kept", "[checkpoint]") {
    TempDir dir;
    // A pid that has certainly exited (its child reaped), and one that is alive.
    const pid_t dead = fork();
    if (dead == 0) _exit(0);
    REQUIRE(dead > 0);
    REQUIRE(waitpid(dead, nullptr, 0) == dead);
    const pid_t alive = fork();
    if (alive == 0) {
        pause();
        _exit(0);
    }
    REQUIRE(alive > 0);
    const auto tmp = [](pid_t pid) { return ".tmp" + std::to_string(pid); };
    for (const std::string& name : {"model.safetensors" + tmp(dead), "metrics.csv" + tmp(dead),
                                    "model.safetensors" + tmp(alive), "model.safetensors" + tmp(getpid()),
                                    std::string("notes.tmp"), std::string("x.tmp12a"), std::string("model.safetensors")}) {
        write_bytes(dir / name, "x");
    }
    const int removed = normnet::remove_stale_temporaries(dir.path.string());
    kill(alive, SIGKILL);
    waitpid(alive, nullptr, 0);
    CHECK(removed == 2);
    std::vector<std::string> kept{"model.safetensors" + tmp(alive), "model.safetensors" + tmp(getpid()), "model.safetensors",
                                  "notes.tmp", "x.tmp12a"};
    std::sort(kept.begin(), kept.end());
    CHECK(files_in(dir.path) == kept);
    CHECK(normnet::remove_stale_temporaries((dir.path / "missing").string()) == 0);
}

TEST_CASE("checkpoint: write_file_atomic replaces whole files and leaves no temporary on failure", "[checkpoint]") {
    TempDir dir;
    const std::string path = dir / "a.txt";
    normnet::write_file_atomic(path, "first");
    normnet::write_file_atomic(path, "second");
    CHECK(read_file(path) == "second");
    fs::create_directories(dir.path / "folder");
    CHECK_THROWS_WITH(normnet::write_file_atomic(dir / "folder", "x"), Contains(dir / "folder") && Contains("cannot write"));
    CHECK(files_in(dir.path) == std::vector<std::string>{"a.txt", "folder"});
}

// What the libtorch peers of the CNN, the ViT and the character LM share (libtorch_cnn.cpp,
// libtorch_vit.cpp, libtorch_lm.cpp): the common options, thread setup, the datasets read as
// normnet reads them, normnet's generator and data orders re-implemented bit for bit, initial
// weights from a safetensors file, and the one-line JSON result. The Python peers do the same in
// peer_common.py; the two files mirror each other function by function.
#pragma once

#include <torch/torch.h>
#include <zlib.h>

#include <dlfcn.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef PEERS_SOURCE_DIR
#define PEERS_SOURCE_DIR "."
#endif

namespace peers {

inline const std::string kMnist = PEERS_SOURCE_DIR "/../../data/mnist";
inline const std::string kFashionMnist = "/usr/share/datasets/fashion-mnist";
inline const std::string kFortunes = "/usr/share/games/fortunes";

// --- options -------------------------------------------------------------------------------

// The options every peer has, with the names of libtorch_mlp and torch_mlp.py.
struct CommonOptions {
    std::string data;
    int64_t batch_size = 0;
    int threads = 1;
    int blas_threads = 0;  // 0: same as threads
    uint64_t seed = 0;
    std::string order = "torch";  // torch (randperm / randint) or normnet (its generator, bit for bit)
    std::string init;             // a safetensors state_dict to start from, instead of torch's init
    bool json = false;
};

// The common options with a peer's own defaults for the dataset and batch size.
inline CommonOptions common_defaults(std::string data, int64_t batch_size) {
    CommonOptions c;
    c.data = std::move(data);
    c.batch_size = batch_size;
    return c;
}

inline const char* kCommonUsage =
    "  [--data DIR] [--batch-size N] [--threads T] [--blas-threads B] [--seed S]\n"
    "  [--order torch|normnet] [--init FILE.safetensors] [--json]\n";

// Walks argv: the peer asks for its own options by name, the common ones are handled here.
class ArgParser {
public:
    ArgParser(int argc, char** argv, std::string usage) : argc_(argc), argv_(argv), usage_(std::move(usage)) {}

    // Calls own(name) for each option; own returns false for a name it does not know.
    void parse(CommonOptions& c, const std::function<bool(const std::string&)>& own) {
        for (i_ = 1; i_ < argc_; ++i_) {
            name_ = argv_[i_];
            if (name_ == "-h" || name_ == "--help") {
                std::cout << usage_ << kCommonUsage;
                std::exit(0);
            }
            if (own(name_)) continue;
            if (name_ == "--data") c.data = value();
            else if (name_ == "--batch-size") c.batch_size = integer();
            else if (name_ == "--threads") c.threads = int(integer());
            else if (name_ == "--blas-threads") c.blas_threads = int(integer());
            else if (name_ == "--seed") c.seed = uint64_t(integer());
            else if (name_ == "--order") c.order = value();
            else if (name_ == "--init") c.init = value();
            else if (name_ == "--json") c.json = true;
            else throw std::invalid_argument("unknown option " + name_);
        }
        if (c.order != "torch" && c.order != "normnet")
            throw std::invalid_argument("--order must be torch or normnet, not " + c.order);
        if (c.batch_size < 1 || c.threads < 1 || c.blas_threads < 0)
            throw std::invalid_argument("--batch-size and --threads must be >= 1");
        if (c.blas_threads == 0) c.blas_threads = c.threads;
    }

    std::string value() {
        if (i_ + 1 >= argc_) throw std::invalid_argument(name_ + " needs a value");
        return argv_[++i_];
    }
    double number() {  // the whole text must be a number: "12x" is an error, not 12
        const std::string v = value();
        size_t used = 0;
        double d = 0;
        try { d = std::stod(v, &used); } catch (const std::exception&) {}
        if (v.empty() || used != v.size()) throw std::invalid_argument(name_ + ": not a number: '" + v + "'");
        return d;
    }
    int64_t integer() {
        const double d = number();
        if (d != double(int64_t(d))) throw std::invalid_argument(name_ + ": not an integer");
        return int64_t(d);
    }
    const std::string& usage() const { return usage_; }

private:
    int argc_;
    char** argv_;
    std::string usage_, name_;
    int i_ = 0;
};

// Debian's libtorch does its matrix products in OpenBLAS (pthread build), whose pool
// torch::set_num_threads does not size; the setter is looked up at run time so that the program
// still runs when torch uses another BLAS.
inline void set_blas_threads(int n) {
    using Setter = void (*)(int);
    if (auto f = reinterpret_cast<Setter>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(n);
}

inline void setup_threads(const CommonOptions& c) {
    torch::set_num_threads(c.threads);
    set_blas_threads(c.blas_threads);
}

// --- data ----------------------------------------------------------------------------------

// The payload of an IDX file, raw or gzipped (zlib's gzread reads both), `path` with or without
// its .gz; dims gets the header's sizes.
inline std::vector<uint8_t> read_idx(std::string path, uint32_t magic, std::vector<int64_t>& dims) {
    if (!std::filesystem::exists(path) && std::filesystem::exists(path + ".gz")) path += ".gz";
    std::unique_ptr<gzFile_s, int (*)(gzFile)> f(gzopen(path.c_str(), "rb"), gzclose);
    if (!f) throw std::runtime_error("cannot open " + path + " (pass the dataset folder with --data)");
    std::vector<uint8_t> raw;
    uint8_t buf[1 << 16];
    for (int got; (got = gzread(f.get(), buf, sizeof buf)) > 0;) raw.insert(raw.end(), buf, buf + got);
    auto be32 = [&](size_t at) {
        if (at + 4 > raw.size()) throw std::runtime_error(path + ": truncated header");
        return uint32_t(raw[at]) << 24 | uint32_t(raw[at + 1]) << 16 | uint32_t(raw[at + 2]) << 8 | uint32_t(raw[at + 3]);
    };
    if (be32(0) != magic) throw std::runtime_error(path + ": not an IDX file of the expected kind");
    const size_t ndim = magic & 0xFF, header = 4 + 4 * ndim;
    dims.clear();
    size_t count = 1;
    for (size_t d = 0; d < ndim; ++d) {
        dims.push_back(be32(4 + 4 * d));
        count *= size_t(dims.back());
    }
    if (raw.size() != header + count) throw std::runtime_error(path + ": data size does not match the header");
    return {raw.begin() + long(header), raw.end()};
}

// Images as float32 [N, 1, 28, 28] = pixel / 255 (normnet's loader without standardising),
// labels int64 [N]; the first `limit` of the split when limit > 0, as `normnet --limit`.
inline std::pair<torch::Tensor, torch::Tensor> load_images(const std::string& dir, const std::string& split,
                                                           int64_t limit) {
    std::vector<int64_t> idims, ldims;
    auto images = read_idx(dir + "/" + split + "-images-idx3-ubyte", 0x803, idims);
    auto labels = read_idx(dir + "/" + split + "-labels-idx1-ubyte", 0x801, ldims);
    if (ldims.at(0) != idims.at(0)) throw std::runtime_error(split + ": image and label counts differ");
    const int64_t n = limit > 0 ? std::min(limit, idims[0]) : idims[0];
    // from_blob borrows the vectors; the conversions copy, so nothing dangles.
    auto x = torch::from_blob(images.data(), {n, 1, idims[1], idims[2]}, torch::kUInt8).to(torch::kFloat32).div_(255.0f);
    auto y = torch::from_blob(labels.data(), {n}, torch::kUInt8).to(torch::kInt64);
    return {x, y};
}

// A character corpus as normnet's load_text_corpus reads it (src/data/text.cpp): a file, or a
// folder's regular files in name order (no symbolic links, no *.dat); strict UTF-8; records split
// at lines holding a single %; every k-th record held out (k where floor((k + 1) f) > floor(k f)),
// each followed by "%\n"; the vocabulary is the sorted code points of both streams.
struct Corpus {
    std::vector<char32_t> vocab;
    torch::Tensor train, val;  // int64 [n] ids into vocab
};

// Code points of UTF-8 text; throws at the first invalid sequence (overlong, surrogate, > U+10FFFF,
// truncated), as Python's strict decoder and normnet's do.
inline std::u32string utf8_code_points(const std::string& s, const std::string& where) {
    std::u32string out;
    for (size_t i = 0; i < s.size();) {
        const auto lead = static_cast<unsigned char>(s[i]);
        const int len = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 0;
        static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
        char32_t cp = len == 1 ? lead : lead & (0x7f >> len);
        bool ok = len > 0 && i + size_t(len) <= s.size();
        for (int k = 1; ok && k < len; ++k) {
            const auto b = static_cast<unsigned char>(s[i + size_t(k)]);
            ok = (b & 0xc0) == 0x80;
            cp = cp << 6 | (b & 0x3f);
        }
        if (!ok || cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            throw std::runtime_error(where + ": invalid UTF-8 at byte " + std::to_string(i));
        out.push_back(cp);
        i += size_t(len);
    }
    return out;
}

inline Corpus load_corpus(const std::string& path, double val_fraction) {
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    if (fs::is_directory(path)) {
        for (const auto& e : fs::directory_iterator(path))
            if (!e.is_symlink() && e.is_regular_file() && e.path().extension() != ".dat") files.push_back(e.path());
        std::sort(files.begin(), files.end());
    } else if (fs::exists(path)) {
        files.push_back(path);
    } else {
        throw std::runtime_error("no such file or folder: " + path + " (install Debian's fortunes, or pass --data)");
    }
    std::vector<std::u32string> records;
    bool fortune_format = false;
    for (const auto& file : files) {
        std::ifstream in(file, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const std::u32string text = utf8_code_points(bytes, file.string());
        const size_t before = records.size();
        std::u32string current;
        for (size_t start = 0; start <= text.size();) {  // line by line, the last one without '\n'
            const size_t nl = std::min(text.find(U'\n', start), text.size());
            const std::u32string line = text.substr(start, nl - start);
            if (line == U"%") {
                if (!current.empty()) records.push_back(std::move(current));
                current.clear();
            } else {
                current += line;
                if (nl < text.size()) current += U'\n';
            }
            start = nl + 1;
        }
        if (!current.empty()) records.push_back(std::move(current));
        fortune_format = fortune_format || records.size() - before > 1;
    }
    if (records.empty()) throw std::runtime_error(path + ": no text");
    std::u32string train, val;
    if (records.size() > 1) {
        for (size_t k = 0; k < records.size(); ++k) {
            const bool held_out = int64_t(double(k + 1) * val_fraction) > int64_t(double(k) * val_fraction);
            (held_out ? val : train) += records[k] + (fortune_format ? U"%\n" : U"");
        }
    } else {
        const auto cut = size_t(double(records[0].size()) * (1.0 - val_fraction));
        train = records[0].substr(0, cut);
        val = records[0].substr(cut);
    }
    Corpus c;
    c.vocab.assign(train.begin(), train.end());
    c.vocab.insert(c.vocab.end(), val.begin(), val.end());
    std::sort(c.vocab.begin(), c.vocab.end());
    c.vocab.erase(std::unique(c.vocab.begin(), c.vocab.end()), c.vocab.end());
    auto ids = [&](const std::u32string& text) {
        auto t = torch::empty({int64_t(text.size())}, torch::kInt64);
        int64_t* p = t.data_ptr<int64_t>();
        for (size_t i = 0; i < text.size(); ++i)
            p[i] = std::lower_bound(c.vocab.begin(), c.vocab.end(), text[i]) - c.vocab.begin();
        return t;
    };
    c.train = ids(train);
    c.val = ids(val);
    return c;
}

// --- normnet's generator and data orders ---------------------------------------------------

// normnet::Generator (src/tensor.cpp): xoshiro256** seeded by four splitmix64 draws.
class NormnetGenerator {
public:
    explicit NormnetGenerator(uint64_t seed) {
        for (auto& word : s_) {
            uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            word = z ^ (z >> 31);
        }
    }
    uint64_t next_u64() {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }
    uint64_t below(uint64_t n) {  // uniform in [0, n), rejecting against modulo bias
        const uint64_t threshold = (0 - n) % n;
        for (;;) {
            const uint64_t r = next_u64();
            if (r >= threshold) return r % n;
        }
    }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

// Per-epoch sample orders: torch::randperm (after torch::manual_seed(seed)), or the order of
// normnet's DataLoader with shuffling in epoch 0, 1, ... (a Fisher-Yates shuffle seeded by
// (seed, epoch), src/data/loader.cpp).
class EpochOrder {
public:
    EpochOrder(std::string kind, int64_t n, uint64_t seed) : kind_(std::move(kind)), n_(n), seed_(seed) {}
    torch::Tensor next() {
        const uint64_t epoch = epoch_++;
        if (kind_ != "normnet") return torch::randperm(n_, torch::kInt64);
        NormnetGenerator gen(seed_ * 0x9e3779b97f4a7c15ULL + epoch * 0xbf58476d1ce4e5b9ULL + 1);
        auto perm = torch::arange(n_, torch::kInt64);
        int64_t* p = perm.data_ptr<int64_t>();
        for (int64_t i = n_ - 1; i > 0; --i) std::swap(p[i], p[int64_t(gen.below(uint64_t(i + 1)))]);
        return perm;
    }

private:
    std::string kind_;
    int64_t n_;
    uint64_t seed_, epoch_ = 0;
};

// --- weights -------------------------------------------------------------------------------

// Copies a safetensors state_dict (8-byte little-endian header length, JSON header, raw data)
// into the module's parameters and buffers, strictly: every name on both sides, same shapes.
inline void load_init(torch::nn::Module& model, const std::string& path) {
    if (path.empty()) return;
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("--init: cannot open " + path);
    const std::string raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    uint64_t n = 0;
    if (raw.size() < 8) throw std::runtime_error("--init " + path + ": not a safetensors file");
    std::memcpy(&n, raw.data(), 8);  // little-endian, as this machine
    const auto header = nlohmann::json::parse(raw.substr(8, n));
    const char* data = raw.data() + 8 + n;
    std::set<std::string> seen;
    torch::NoGradGuard no_grad;
    auto fill = [&](const std::string& name, torch::Tensor& t) {
        if (!t.defined()) return;  // e.g. MultiheadAttention's unused q/k/v_proj_weight
        if (!header.contains(name)) throw std::runtime_error("--init " + path + ": no tensor " + name);
        const auto& e = header[name];
        const std::string dtype = e["dtype"];
        const auto kind = dtype == "F32" ? torch::kFloat32 : dtype == "I64" ? torch::kInt64 : torch::kFloat64;
        const std::vector<int64_t> shape = e["shape"];
        const size_t begin = e["data_offsets"][0];
        auto src = torch::from_blob(const_cast<char*>(data + begin), shape, kind);
        if (src.sizes() != t.sizes())
            throw std::runtime_error("--init " + path + ": " + name + " has the wrong shape");
        t.copy_(src);
        seen.insert(name);
    };
    for (auto& p : model.named_parameters()) fill(p.key(), p.value());
    for (auto& b : model.named_buffers()) fill(b.key(), b.value());
    for (const auto& item : header.items())
        if (item.key() != "__metadata__" && !seen.count(item.key()))
            throw std::runtime_error("--init " + path + ": unexpected tensor " + item.key());
}

// --- result --------------------------------------------------------------------------------

inline double peak_rss_mb() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t m = v.size();
    return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// With --json, stdout carries only the JSON line; progress goes to stderr.
inline void progress(const CommonOptions& c, const std::string& line) {
    std::fprintf(c.json ? stderr : stdout, "%s\n", line.c_str());
    std::fflush(c.json ? stderr : stdout);
}

// The keys every result has, in the order of torch_mlp.py's JSON.
inline nlohmann::ordered_json result_header(const CommonOptions& c, const std::string& model, const std::string& norm) {
    return {{"impl", "libtorch"}, {"model", model}, {"norm", norm}, {"batch", c.batch_size},
            {"threads", c.threads}, {"blas_threads", c.blas_threads}};
}

inline void emit(const CommonOptions& c, nlohmann::ordered_json result, const std::string& summary) {
    result["version"] = TORCH_VERSION;
    if (c.json) std::printf("%s\n", result.dump().c_str());
    else std::printf("libtorch %s, %s\n", TORCH_VERSION, summary.c_str());
    std::fflush(stdout);
}

// main's body with the peers' error convention: bad options exit 2 with the usage, anything
// else 1, each as one line "prog: error: ...".
inline int run_main(const char* prog, const std::string& usage, const std::function<void()>& body) {
    try {
        body();
        return 0;
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "%s: error: %s\n%s%s", prog, e.what(), usage.c_str(), kCommonUsage);
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: error: %s\n", prog, e.what());
        return 1;
    }
}

}  // namespace peers

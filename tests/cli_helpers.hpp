// Helpers for tests that run the `normnet` program (NORMNET_BINARY) as a user does: a temporary
// folder, running with captured output and exit status, and a synthetic MNIST-layout dataset.
#pragma once

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_helpers.hpp"

namespace normnet::test {

namespace fs = std::filesystem;

// A scratch folder with a `work` subfolder that is the program's working directory, so stray
// output would show up there.
struct TempDir : ScratchDir {
    TempDir() : ScratchDir("normnet_test_cli_") { fs::create_directories(path / "work"); }
    fs::path work() const { return path / "work"; }
    std::string operator/(const std::string& name) const { return (path / "work" / name).string(); }
};

struct RunResult {
    int status = -1;  // the exit status, or 128 + signal when the program was killed
    std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// Runs `normnet args...` in `cwd` (stdout through a pipe, so not a terminal; stderr to a file).
inline RunResult run_normnet(const std::vector<std::string>& args, const fs::path& cwd) {
    const fs::path err_file = cwd.parent_path() / "stderr.txt";
    std::string command = "cd " + shell_quote(cwd.string()) + " && exec " + shell_quote(NORMNET_BINARY);
    for (const auto& a : args) command += " " + shell_quote(a);
    command += " 2>" + shell_quote(err_file.string()) + " </dev/null";
    RunResult r;
    std::FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, got);
    const int status = ::pclose(pipe);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
    std::ifstream in(err_file, std::ios::binary);
    r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return r;
}

// The comma-separated cells of one CSV line (no quoting: normnet's CSV files need none).
inline std::vector<std::string> csv_cells(const std::string& line) {
    std::vector<std::string> cells;
    std::istringstream in(line);
    for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
    return cells;
}

inline std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// Every file below `dir` with its contents, to prove a failed call changed nothing.
inline std::map<std::string, std::string> snapshot(const fs::path& dir) {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
        files[fs::relative(entry.path(), dir).string()] = entry.is_regular_file() ? read_file(entry.path()) : "<dir>";
    }
    return files;
}

inline std::string mnist_dir() { return std::string(NORMNET_SOURCE_DIR) + "/data/mnist"; }

inline bool have_mnist() {
    if (fs::exists(fs::path(mnist_dir()) / "train-images-idx3-ubyte") || fs::exists(fs::path(mnist_dir()) / "train-images-idx3-ubyte.gz")) {
        return true;
    }
    WARN("MNIST not found in " << mnist_dir() << "; run data/fetch_mnist.sh to run this test");
    return false;
}

inline void put_u32(std::string& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

// An MNIST-layout folder of random 28x28 images, for runs that do not need real digits.
inline void write_synthetic_mnist(const fs::path& dir, uint32_t train, uint32_t test) {
    fs::create_directories(dir);
    std::mt19937 rng(1234);
    for (const auto& [prefix, n] : {std::pair<std::string, uint32_t>{"train", train}, {"t10k", test}}) {
        std::string images, labels;
        put_u32(images, 0x803);
        put_u32(images, n);
        put_u32(images, 28);
        put_u32(images, 28);
        for (uint32_t i = 0; i < n * 784; ++i) images.push_back(static_cast<char>(rng() % 256));
        put_u32(labels, 0x801);
        put_u32(labels, n);
        for (uint32_t i = 0; i < n; ++i) labels.push_back(static_cast<char>(i % 10));
        std::ofstream(dir / (prefix + "-images-idx3-ubyte"), std::ios::binary) << images;
        std::ofstream(dir / (prefix + "-labels-idx1-ubyte"), std::ios::binary) << labels;
    }
}

}  // namespace normnet::test

// Helpers for tests that run the `normnet` program (NORMNET_BINARY) as a user does: a temporary
// folder, running with captured output and exit status, and a synthetic MNIST-layout dataset.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "normnet/checkpoint.hpp"
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

// Runs `normnet args...` in `cwd` (stdout through a pipe, so not a terminal; stderr to a file);
// `shell_prefix` runs first in the same shell (e.g. "ulimit -v 2000000").
inline RunResult run_normnet(const std::vector<std::string>& args, const fs::path& cwd, const std::string& shell_prefix = "") {
    const fs::path err_file = cwd.parent_path() / "stderr.txt";
    std::string command = (shell_prefix.empty() ? "" : shell_prefix + " && ") + "cd " + shell_quote(cwd.string()) +
                          " && exec " + shell_quote(NORMNET_BINARY);
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

// A `normnet` process running in the background: its stdout comes through a pipe (read with
// wait_for), its stderr goes to a file; it is killed and reaped when the handle goes away.
class Process {
public:
    /// `env`: "NAME=value" entries added to the environment (test hooks such as NORMNET_TEST_SIGNAL_AT_STEP).
    Process(const std::vector<std::string>& args, const fs::path& cwd, const fs::path& err_file,
            std::vector<std::string> env = {}) {
        std::vector<std::string> argv_text{NORMNET_BINARY};
        argv_text.insert(argv_text.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& a : argv_text) argv.push_back(a.data());
        argv.push_back(nullptr);
        std::vector<char*> envp;
        for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
        for (auto& e : env) envp.push_back(e.data());
        envp.push_back(nullptr);
        int pipe_fds[2];
        REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
        const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        REQUIRE(err >= 0);
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {  // only async-signal-safe calls until exec
            const int in = ::open("/dev/null", O_RDONLY);
            if (::chdir(cwd.c_str()) != 0 || ::dup2(pipe_fds[1], 1) < 0 || ::dup2(err, 2) < 0 || ::dup2(in, 0) < 0) ::_exit(127);
            ::execve(argv[0], argv.data(), envp.data());
            ::_exit(127);
        }
        ::close(pipe_fds[1]);
        ::close(err);
        out_ = pipe_fds[0];
    }
    ~Process() {
        if (pid_ > 0 && status_ < 0) {
            ::kill(pid_, SIGKILL);
            wait();
        }
        if (out_ >= 0) ::close(out_);
    }
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;

    pid_t pid() const { return pid_; }
    /// Everything read from its stdout so far.
    const std::string& output() const { return output_; }
    /// Reads its stdout until `text` appears (true), it closes stdout, or `timeout_ms` pass (false).
    bool wait_for(const std::string& text, int timeout_ms) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        while (output_.find(text) == std::string::npos) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0 || !read_some(static_cast<int>(left.count()))) return false;
        }
        return true;
    }
    void signal(int sig) const { ::kill(pid_, sig); }
    /// Waits for it to end: its exit status, or 128 + the signal that killed it.
    int wait() {
        if (status_ >= 0) return status_;
        while (read_some(-1)) {
        }
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
        killed_by_ = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        return status_;
    }
    /// After wait(): the signal that ended it (0: it exited, even with status 128 + n).
    int killed_by() const { return killed_by_; }

private:
    // One read of stdout (waiting at most timeout_ms, -1: no limit); false at its end or on timeout.
    bool read_some(int timeout_ms) {
        if (out_ < 0) return false;
        pollfd p{out_, POLLIN, 0};
        if (::poll(&p, 1, timeout_ms) <= 0) return false;
        char buffer[4096];
        const ssize_t got = ::read(out_, buffer, sizeof buffer);
        if (got <= 0) {
            ::close(out_);
            out_ = -1;
            return false;
        }
        output_.append(buffer, static_cast<size_t>(got));
        return true;
    }

    pid_t pid_ = -1;
    int out_ = -1;
    int status_ = -1;
    int killed_by_ = 0;
    std::string output_;
};

// `args` followed by `more`: a call with extra options.
inline std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// The comma-separated cells of one CSV line (no quoting: normnet's CSV files need none).
inline std::vector<std::string> csv_cells(const std::string& line) {
    std::vector<std::string> cells;
    std::istringstream in(line);
    for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();  // getline drops a last empty cell
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

// True when data/mnist holds MNIST; tests that need it skip visibly (NORMNET_SKIP) otherwise.
inline bool have_mnist() {
    return fs::exists(fs::path(mnist_dir()) / "train-images-idx3-ubyte") ||
           fs::exists(fs::path(mnist_dir()) / "train-images-idx3-ubyte.gz");
}
#define NORMNET_REQUIRE_MNIST() \
    if (!normnet::test::have_mnist()) NORMNET_SKIP("MNIST not found in " << normnet::test::mnist_dir() << " (run data/fetch_mnist.sh)")

inline void put_u32(std::string& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

// An MNIST-layout folder of random 28x28 images, for runs that do not need real digits. Image i
// has label i mod 10; with `learnable`, that label's tenth of the pixels is brighter, so that a
// model can learn something.
inline void write_synthetic_mnist(const fs::path& dir, uint32_t train, uint32_t test, bool learnable = false) {
    fs::create_directories(dir);
    std::mt19937 rng(1234);
    for (const auto& [prefix, n] : {std::pair<std::string, uint32_t>{"train", train}, {"t10k", test}}) {
        std::string images, labels;
        put_u32(images, 0x803);
        put_u32(images, n);
        put_u32(images, 28);
        put_u32(images, 28);
        for (uint32_t i = 0; i < n * 784; ++i) {
            const bool bright = learnable && (i % 784) / 79 == (i / 784) % 10;
            images.push_back(static_cast<char>(learnable ? rng() % 100 + (bright ? 150 : 0) : rng() % 256));
        }
        put_u32(labels, 0x801);
        put_u32(labels, n);
        for (uint32_t i = 0; i < n; ++i) labels.push_back(static_cast<char>(i % 10));
        std::ofstream(dir / (prefix + "-images-idx3-ubyte"), std::ios::binary) << images;
        std::ofstream(dir / (prefix + "-labels-idx1-ubyte"), std::ios::binary) << labels;
    }
}

// A small fortune file for the language model: `records` records separated by % lines.
inline std::string fortunes(int records) {
    std::string text;
    for (int k = 0; k < records; ++k) {
        text += "The quick brown fox " + std::to_string(k) + " jumps over the lazy dog.\n";
        text += k % 3 ? "-- Anonymous\n" : "Pack my box with five dozen liquor jugs.\n";
        text += "%\n";
    }
    return text;
}

// A usage or input error: status, one line naming what is wrong, nothing on stdout or on disk.
inline void require_failure(const TempDir& dir, const std::vector<std::string>& args, int status,
                            const std::vector<std::string>& mentions) {
    const auto before = snapshot(dir.work());
    const RunResult r = run_normnet(args, dir.work());
    INFO("stderr: " << r.err);
    CHECK(r.status == status);
    CHECK_THAT(r.err, Catch::StartsWith("normnet: error: "));
    CHECK(lines_of(r.err).size() == 1);
    for (const auto& m : mentions) CHECK_THAT(r.err, Catch::Contains(m));
    CHECK(r.out.empty());
    CHECK(snapshot(dir.work()) == before);
}

// Bit-for-bit equality of two safetensors files' tensors (names, order, shapes, bits).
inline void require_same_tensors(const std::string& a, const std::string& b) {
    const auto x = normnet::load_safetensors(a), y = normnet::load_safetensors(b);
    REQUIRE(x.tensors.size() == y.tensors.size());
    REQUIRE_FALSE(x.tensors.empty());
    for (size_t i = 0; i < x.tensors.size(); ++i) {
        INFO(a << " vs " << b << ": tensor " << x.tensors[i].first);
        REQUIRE(x.tensors[i].first == y.tensors[i].first);
        REQUIRE(x.tensors[i].second.shape() == y.tensors[i].second.shape());
        CHECK(bit_equal(x.tensors[i].second, y.tensors[i].second));
    }
}


}  // namespace normnet::test

// The run folder: committing and reading checkpoint pairs, and preparing output folders.
#include "run_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "normnet/error.hpp"

namespace normnet::cli {
namespace {

namespace fs = std::filesystem;

// The model file's metadata key for the checksum of its training state.
constexpr const char* kStateChecksum = "normnet.training_state_fnv1a";

// FNV-1a (64 bits) of a file's bytes, as 16 hex digits: identifies which training state a model
// file belongs to (not a defence against forgery, which needs none here). "" when unreadable.
std::string file_checksum(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "";
    uint64_t h = 14695981039346656037ull;
    char buffer[1 << 16];
    while (in) {
        in.read(buffer, sizeof buffer);
        for (std::streamsize i = 0; i < in.gcount(); ++i) {
            h ^= static_cast<unsigned char>(buffer[i]);
            h *= 1099511628211ull;
        }
    }
    if (in.bad()) return "";
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return hex;
}

std::string in_folder(const std::string& dir, const char* name) { return (fs::path(dir) / name).string(); }

std::string metadata_value(const SafetensorsData& data, const std::string& key) {
    const auto it = data.metadata.find(key);
    return it == data.metadata.end() ? "" : it->second;
}

// This process as a lock file names it: "pid 1234: normnet train --out runs/a".
std::string holder_text() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string command, arg;
    while (std::getline(in, arg, '\0') && command.size() < 200) {
        command += (command.empty() ? fs::path(arg).filename().string() : " " + arg);
    }
    return "pid " + std::to_string(::getpid()) + (command.empty() ? "" : ": " + command);
}

// True when `fd` is the file `path` names now (not one removed since and made anew).
bool is_named(int fd, const std::string& path) {
    struct stat held {}, named {};
    return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
           held.st_ino == named.st_ino;
}

}  // namespace

FolderLock::FolderLock(const std::string& dir, const std::string& option) : path_(in_folder(dir, kLockFile)) {
    for (int attempt = 0;; ++attempt) {
        fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        NORMNET_CHECK(fd_ >= 0, option, " ", dir, ": cannot create the lock file ", path_, ": ", std::strerror(errno));
        if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            const int err = errno;
            char text[512] = "";
            const ssize_t got = ::pread(fd_, text, sizeof text - 1, 0);
            ::close(fd_);
            fd_ = -1;
            NORMNET_CHECK(err == EWOULDBLOCK, option, " ", dir, ": cannot lock ", path_, ": ", std::strerror(err));
            const std::string holder = got > 0 ? std::string(text, static_cast<size_t>(got)) : "a process starting up";
            fail(option, " ", dir, ": the folder is in use by another normnet process (", holder,
                 "), which writes there until it ends; wait for it, or choose another folder");
        }
        // A holder releasing the lock removes the file: what was locked must still be the file of that name.
        if (is_named(fd_, path_)) break;
        ::close(fd_);
        fd_ = -1;
        NORMNET_CHECK(attempt < 100, option, " ", dir, ": cannot lock ", path_, ": it keeps being replaced");
    }
    // Who holds it, for the message of a second writer (best effort: the lock is what counts).
    const std::string me = holder_text();
    if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, me.data(), me.size(), 0);
}

FolderLock::~FolderLock() {
    if (is_named(fd_, path_)) ::unlink(path_.c_str());
    ::close(fd_);
}

const std::vector<std::string>& run_files() {
    static const std::vector<std::string> files{kModelFile, kStateFile, kNextStateFile, kMetricsFile, kConfigFile};
    return files;
}

const std::vector<std::string>& checkpoint_files() {
    static const std::vector<std::string> files{kModelFile};
    return files;
}

void commit_checkpoint(const std::string& dir, CheckpointContents contents) {
    const std::string next = in_folder(dir, kNextStateFile);
    save_safetensors(next, contents.state, contents.state_metadata);
    // The checksum of what is on the disk, read back: the pair is verified, not assumed.
    const std::string checksum = file_checksum(next);
    NORMNET_CHECK(!checksum.empty(), "cannot read back ", next);
    contents.model_metadata[kStateChecksum] = checksum;
    try {
        save_safetensors(in_folder(dir, kModelFile), contents.model, contents.model_metadata);
    } catch (const Error&) {
        std::error_code ignored;
        fs::remove(next, ignored);  // no model will ever name it
        throw;
    }
    std::error_code ec;
    fs::rename(next, in_folder(dir, kStateFile), ec);
    NORMNET_CHECK(!ec, "cannot write ", in_folder(dir, kStateFile), ": ", ec.message());
}

std::string model_file_of(const std::string& path) {
    std::error_code ec;
    return fs::is_directory(path, ec) ? in_folder(path, kModelFile) : path;
}

LoadedCheckpoint read_checkpoint(const std::string& model_path) {
    LoadedCheckpoint c;
    c.model = load_safetensors(model_path);
    const std::string dir = fs::path(model_path).parent_path().string();
    const std::string state = in_folder(dir, kStateFile), next = in_folder(dir, kNextStateFile);
    const std::string wanted = metadata_value(c.model, kStateChecksum);
    std::error_code ec;
    const bool have_next = fs::exists(next, ec);
    if (wanted.empty()) {
        // Written before checkpoints carried a checksum: the state of the same epoch belongs to it.
        NORMNET_CHECK(fs::exists(state, ec), "--resume ", model_path, ": its training state ", state, " is missing");
        c.state = load_safetensors(state);
        NORMNET_CHECK(metadata_value(c.state, "normnet.epoch") == metadata_value(c.model, "normnet.epoch"), state,
              ": training state is from another epoch than ", model_path);
        c.state_path = state;
        return c;
    }
    for (const std::string& candidate : {state, next}) {
        if (!fs::exists(candidate, ec) || file_checksum(candidate) != wanted) continue;
        c.state = load_safetensors(candidate);
        c.state_path = candidate;
        if (candidate == state && have_next) {
            c.note = "ignoring " + next + ", the training state of a checkpoint whose model was never written";
        }
        return c;
    }
    fail("--resume ", model_path, ": no training state beside it matches it (",
         fs::exists(state, ec) ? state + " belongs to another checkpoint" : state + " is missing", ")");
}

void settle_checkpoint_folder(const LoadedCheckpoint& checkpoint) {
    const std::string dir = fs::path(checkpoint.model.path).parent_path().string();
    const std::string state = in_folder(dir, kStateFile), next = in_folder(dir, kNextStateFile);
    std::error_code ec;
    if (checkpoint.state_path == next) {
        fs::rename(next, state, ec);  // step 3 of the commit the crash interrupted
        NORMNET_CHECK(!ec, "cannot rename ", next, " to ", state, ": ", ec.message());
    } else if (checkpoint.state_path == state) {
        fs::remove(next, ec);  // written by a commit that never reached its model
    }
    remove_stale_temporaries(dir.empty() ? "." : dir);
}

void prepare_output_folder(const std::string& dir, const std::string& option, const std::vector<std::string>& results,
                           const std::vector<std::string>& outputs, bool overwrite, bool continuing,
                           std::unique_ptr<FolderLock>& lock, const std::string& alternative) {
    std::error_code ec;
    NORMNET_CHECK(!fs::exists(dir, ec) || fs::is_directory(dir, ec), option, " ", dir,
          ": cannot create the output folder (a file of that name exists)");
    fs::create_directories(dir, ec);
    NORMNET_CHECK(!ec && fs::is_directory(dir), option, " ", dir, ": cannot create the output folder",
          ec ? ": " + ec.message() : std::string());
    if (!lock) lock = std::make_unique<FolderLock>(dir, option);
    remove_stale_temporaries(dir);
    if (continuing) return;
    std::string found;
    for (const std::string& name : results) {
        if (fs::exists(fs::path(dir) / name, ec)) found += (found.empty() ? "" : ", ") + name;
    }
    NORMNET_CHECK(found.empty() || overwrite, option, " ", dir, " already holds the outputs of an earlier run (", found,
          "): pass --overwrite to replace them", alternative.empty() ? "" : ", " + alternative, ", or choose another folder");
    // Overwritten outputs, or the leftovers of a run that never got as far as a result.
    for (const std::string& name : outputs) {
        fs::remove(fs::path(dir) / name, ec);
        NORMNET_CHECK(!ec, option, " ", dir, ": cannot remove ", name, ": ", ec.message());
    }
}

std::string new_run_dir(const std::string& prefix) {
    const std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", std::localtime(&now));
    std::string dir = prefix + stamp;
    for (int i = 2; fs::exists(dir); ++i) dir = prefix + stamp + "_" + std::to_string(i);
    return dir;
}

bool same_folder(const std::string& a, const std::string& b) {
    std::error_code ec;
    return fs::equivalent(a.empty() ? "." : a, b.empty() ? "." : b, ec);
}

void discard_run_folder(const std::string& dir, bool existed, std::unique_ptr<FolderLock>& lock) {
    std::error_code ec;
    fs::remove(fs::path(dir) / kConfigFile, ec);
    fs::remove(fs::path(dir) / kMetricsFile, ec);
    lock.reset();
    if (!existed) fs::remove(dir, ec);  // only if empty
}

}  // namespace normnet::cli

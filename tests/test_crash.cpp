// What survives: `normnet train` killed with kill -9 at random moments and right around its
// checkpoint writes, run out of disk space at every point of a commit, stopped by SIGINT or
// SIGTERM (once and twice), and driven into NaN. After every one of these the run folder holds a
// complete checkpoint the run resumes from, metrics.csv has no duplicate or missing epoch, no
// temporary is left behind, and the run finally ends byte for byte where an uninterrupted run
// does. The program is driven from outside, as a user (or a cluster scheduler) would.
#include <sys/inotify.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli_helpers.hpp"
#include "normnet/normnet.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using namespace normnet::test;
using Catch::Contains;
using Catch::StartsWith;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A small run whose epochs take milliseconds, so that many kills fit in a few seconds.
struct SmallRun {
    TempDir dir;
    std::string data = (dir.path / "data").string();
    int epochs;
    explicit SmallRun(int epochs, uint32_t train_images = 256, const std::string& batch = "32") : epochs(epochs) {
        write_synthetic_mnist(data, train_images, 64);
        options = {"--data", data, "--hidden", "16", "--batch-size", batch, "--epochs", std::to_string(epochs),
                   "--threads", "1"};
    }
    std::vector<std::string> options;
    // The arguments that start the run into `out`, or continue it once it has a checkpoint.
    std::vector<std::string> launch(const std::string& out) const {
        const std::string model = (fs::path(out) / "model.safetensors").string();
        if (fs::exists(model)) return {"train", "--resume", model, "--data", data, "--threads", "1"};
        return with({"train", "--out", out}, options);
    }
};

// The cells of metrics.csv but the seconds, row by row.
std::vector<std::vector<std::string>> metrics_without_seconds(const fs::path& file) {
    std::vector<std::vector<std::string>> rows;
    for (const std::string& line : lines_of(read_file(file))) {
        std::vector<std::string> cells = csv_cells(line);
        if (cells.size() > 5) cells.erase(cells.begin() + 5);
        rows.push_back(cells);
    }
    return rows;
}

// What must hold in a run folder whatever just happened to the process writing it.
void require_consistent_folder(const fs::path& run, const std::string& when) {
    INFO(when);
    // Nothing torn: what is there loads.
    if (fs::exists(run / "model.safetensors")) CHECK_NOTHROW(normnet::load_safetensors((run / "model.safetensors").string()));
    // Epochs 1, 2, ..., n, each once.
    const auto lines = lines_of(read_file(run / "metrics.csv"));
    for (size_t i = 1; i < lines.size(); ++i) {
        INFO("metrics.csv: " << read_file(run / "metrics.csv"));
        REQUIRE_FALSE(csv_cells(lines[i]).empty());
        CHECK(csv_cells(lines[i])[0] == std::to_string(i));
    }
}

std::vector<std::string> temporaries_in(const fs::path& run) {
    std::vector<std::string> found;
    for (const std::string& name : files_in(run)) {
        if (name.find(".tmp") != std::string::npos || name.find(".next.") != std::string::npos) found.push_back(name);
    }
    return found;
}

// The end of every scenario: the run finished byte for byte as the reference did.
void require_same_run(const fs::path& run, const fs::path& reference) {
    CHECK(read_file(run / "model.safetensors") == read_file(reference / "model.safetensors"));
    CHECK(read_file(run / "training_state.safetensors") == read_file(reference / "training_state.safetensors"));
    CHECK(metrics_without_seconds(run / "metrics.csv") == metrics_without_seconds(reference / "metrics.csv"));
    CHECK(temporaries_in(run).empty());
}

// inotify on one folder: counts files created, renamed into it, or closed after writing.
class FolderWatch {
public:
    explicit FolderWatch(const fs::path& dir) : fd_(inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
        REQUIRE(fd_ >= 0);
        REQUIRE(inotify_add_watch(fd_, dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE) >= 0);
    }
    ~FolderWatch() { ::close(fd_); }
    // Waits for the next `n` events (true), or false after `timeout_ms` without one.
    bool wait_events(int n, int timeout_ms) {
        while (n > 0) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, timeout_ms) <= 0) return false;
            alignas(inotify_event) char buffer[4096];
            const ssize_t got = ::read(fd_, buffer, sizeof buffer);
            for (ssize_t at = 0; at < got && n > 0;) {
                const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
                at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
                --n;
            }
        }
        return true;
    }

private:
    int fd_;
};

}  // namespace

TEST_CASE("crash: kill -9 at random moments and around checkpoint writes, every kill resumes, the end is byte-identical",
          "[crash][kill]") {
    const auto start = Clock::now();
    SmallRun setup(200);
    const fs::path reference = setup.dir.path / "reference", run = setup.dir.path / "run";
    // The uninterrupted run, timed from its "run folder:" line to its end (the training part).
    double seconds_per_epoch = 0;
    {
        Process p(setup.launch(reference.string()), setup.dir.work(), setup.dir.path / "stderr.txt");
        REQUIRE(p.wait_for("run folder:", 20000));
        const auto trained = Clock::now();
        REQUIRE(p.wait() == 0);
        seconds_per_epoch = seconds_since(trained) / setup.epochs;
    }
    fs::create_directories(run);
    std::mt19937 rng(20261201);
    int kills = 0, around_writes = 0, resumes_verified = 0, launches = 0;
    constexpr int kTargetKills = 36;
    while (true) {
        const bool kill_this_one = kills < kTargetKills;
        Process p(setup.launch(run.string()), setup.dir.work(), setup.dir.path / "stderr.txt");
        ++launches;
        // "run folder:" is printed once the checkpoint has been read, checked and loaded and the
        // folder prepared: after a kill, that is the check that the run resumes. Only then is
        // the next kill armed, so every kill is followed by such a check.
        const bool started = p.wait_for("run folder:", 20000);
        if (started && kills > 0) ++resumes_verified;
        if (started && kill_this_one) {
            // Half the kills at a random moment of the next two epochs or so, half right at the
            // k-th file event of the folder (a temporary created, renamed, closed): inside or
            // between the writes of a commit and of metrics.csv.
            if (rng() % 2 == 0) {
                std::uniform_real_distribution<double> delay(0.0, 2.5 * seconds_per_epoch);
                std::this_thread::sleep_for(std::chrono::duration<double>(delay(rng)));
            } else {
                FolderWatch watch(run);
                watch.wait_events(1 + static_cast<int>(rng() % 12), 20000);
                ++around_writes;
            }
            p.signal(SIGKILL);
        }
        const int status = p.wait();
        const std::string err = read_file(setup.dir.path / "stderr.txt");
        INFO("launch " << launches << " after " << kills << " kills: status " << status << "\nstdout: " << p.output()
                       << "\nstderr: " << err);
        if (status == 128 + SIGKILL) {
            ++kills;
            require_consistent_folder(run, "after kill " + std::to_string(kills));
            continue;
        }
        // Not killed: it must have finished, with nothing on stderr but notes.
        REQUIRE(status == 0);
        CHECK(err.find("error") == std::string::npos);
        break;
    }
    const double total = seconds_since(start);
    std::printf("kill test: %d kills (%d at file events of the run folder), %d resumes verified, %d launches, %.1f s\n",
                kills, around_writes, resumes_verified, launches, total);
    CHECK(kills >= 30);
    CHECK(resumes_verified == kills);
    require_same_run(run, reference);
}

TEST_CASE("crash: a full disk at every point of a run, each failure keeps the last checkpoint, the end is byte-identical",
          "[crash][disk]") {
    SmallRun setup(6);
    const fs::path reference = setup.dir.path / "reference";
    REQUIRE(run_normnet(with(setup.launch(reference.string()), {"--quiet"}), setup.dir.work()).status == 0);
    Tmpfs disk(setup.dir.path / "disk", 2 << 20);
    if (!disk.mounted) NORMNET_SKIP("cannot mount a tmpfs (needs root): the full-disk test did not run");
    const fs::path run = disk.path / "run", filler = disk.path / "filler";
    const auto free_bytes = [&] {
        struct statvfs s {};
        REQUIRE(statvfs(disk.path.c_str(), &s) == 0);
        return static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
    };
    // Each attempt gets `room` more bytes than the run folder already uses, from nothing to more
    // than a commit needs (an old pair, a new training state and a new model), in steps of a few
    // pages, so that the disk fills up in every file a run writes.
    std::set<std::string> failed_in;
    int failures = 0;
    bool finished = false;
    for (uint64_t room = 0; room <= 400 << 10; room += 4 << 10) {
        fs::remove(filler);
        const uint64_t available = free_bytes();
        REQUIRE(available > room);
        {
            std::ofstream fill(filler, std::ios::binary);
            const std::string page(4096, '\0');
            for (uint64_t left = available - room; left >= page.size(); left -= page.size()) fill << page;
        }
        const RunResult r = run_normnet(with(setup.launch(run.string()), {"--quiet"}), setup.dir.work());
        INFO("room " << room << ": status " << r.status << "\nstderr: " << r.err);
        if (r.status == 0) {  // enough room for the rest of the run
            finished = true;
            break;
        }
        ++failures;
        // One line, naming the file and the cause, and only ever this cause (a refused resume
        // would be another message).
        CHECK(r.status == 1);
        CHECK_THAT(r.err, StartsWith("normnet: error: cannot write ") && Contains("No space left on device"));
        CHECK(lines_of(r.err).size() == 1);
        const size_t name = r.err.find(run.string() + "/");
        if (name != std::string::npos) failed_in.insert(r.err.substr(name + run.string().size() + 1, r.err.find(':', name) - name - run.string().size() - 1));
        if (fs::exists(run)) {
            require_consistent_folder(run, "after a full disk with " + std::to_string(room) + " bytes of room");
            CHECK(temporaries_in(run).empty());
        }
    }
    fs::remove(filler);
    if (!finished) {
        const RunResult last = run_normnet(with(setup.launch(run.string()), {"--quiet"}), setup.dir.work());
        INFO(last.err);
        REQUIRE(last.status == 0);
    }
    std::string files;
    for (const auto& f : failed_in) files += " " + f;
    std::printf("disk-full test: %d failed attempts, in:%s\n", failures, files.c_str());
    CHECK(failures >= 5);
    for (const char* file : {"config.json", "metrics.csv", "training_state.next.safetensors", "model.safetensors"}) {
        CHECK(failed_in.count(file) == 1);
    }
    require_same_run(run, reference);
}

TEST_CASE("crash: a model or metrics.csv write failing after the new training state keeps the previous pair",
          "[crash][commit]") {
    // The full-disk test cannot make these writes fail after a first checkpoint (by then the
    // disk fills up earlier, in the new training state), so a fault hook fails them: the rename
    // of the second commit's model, or of epoch 1's metrics.csv (the second write: the first
    // is the rewrite at the start), through LD_PRELOAD (tests/fault/). The pair in place must be
    // the last complete one, the failure an error, and the run must resume to the same end.
    SmallRun setup(3);
    const fs::path reference = setup.dir.path / "reference";
    REQUIRE(run_normnet(with(setup.launch(reference.string()), {"--quiet"}), setup.dir.work()).status == 0);
    for (const auto& [file, epoch] : {std::pair<std::string, std::string>{"model.safetensors", "1"}, {"metrics.csv", "1"}}) {
        INFO(file);
        const fs::path run = setup.dir.path / file;
        const std::string fault = std::string("export LD_PRELOAD=") + NORMNET_FAULT_LIB + " NORMNET_FAULT_RENAME=" + file +
                                  ":2 ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0\"";
        const RunResult r = run_normnet(with(setup.launch(run.string()), {"--quiet"}), setup.dir.work(), fault);
        INFO(r.err);
        CHECK(r.status == 1);
        CHECK_THAT(r.err, StartsWith("normnet: error: cannot write " + (run / file).string()) &&
                              Contains("No space left on device"));
        CHECK(normnet::load_safetensors((run / "model.safetensors").string()).metadata.at("normnet.epoch") == epoch);
        require_consistent_folder(run, "after the failed write");
        CHECK(temporaries_in(run).empty());
        const RunResult resumed = run_normnet(with(setup.launch(run.string()), {"--quiet"}), setup.dir.work());
        INFO(resumed.err);
        REQUIRE(resumed.status == 0);
        CHECK(resumed.err.empty());
        require_same_run(run, reference);
    }
}

TEST_CASE("crash: SIGINT or SIGTERM saves the partial epoch, says how to continue, and the resumed run ends identically",
          "[crash][signal]") {
    // 8 batches per epoch; the trainer is polled after each batch but an epoch's last, so poll 10
    // is after batch 3 of epoch 2. The program waits there for the signal (its test hook,
    // signals.hpp): the signal lands at that step however loaded the machine is.
    SmallRun setup(3);
    const std::string at_step = "NORMNET_TEST_SIGNAL_AT_STEP=10";
    const fs::path reference = setup.dir.path / "reference";
    REQUIRE(run_normnet(with(setup.launch(reference.string()), {"--quiet"}), setup.dir.work()).status == 0);
    for (const int sig : {SIGINT, SIGTERM}) {
        const std::string name = sig == SIGINT ? "SIGINT" : "SIGTERM";
        INFO(name);
        const fs::path run = setup.dir.path / name;
        {
            Process p(setup.launch(run.string()), setup.dir.work(), setup.dir.path / "stderr.txt", {at_step});
            REQUIRE(p.wait_for("waiting for a signal at step 10", 20000));
            p.signal(sig);
            CHECK(p.wait() == 128 + sig);
            CHECK(p.killed_by() == 0);  // it exited by itself, after saving
        }
        const std::string err = read_file(setup.dir.path / "stderr.txt");
        CHECK(lines_of(err).size() == 1);
        CHECK_THAT(err, StartsWith("normnet: stopped by " + name + " at epoch 2, batch 3 of 8; checkpoint saved") &&
                            Contains("continue with: normnet train --resume " + run.string()));
        // The partial epoch is in the checkpoint, its metrics row is not in metrics.csv.
        const auto model = normnet::load_safetensors((run / "model.safetensors").string());
        CHECK(model.metadata.at("normnet.epoch") == "1");
        CHECK(model.metadata.at("normnet.batch") == "3");
        require_consistent_folder(run, "after the signal");
        CHECK(lines_of(read_file(run / "metrics.csv")).size() == 2);
        CHECK(temporaries_in(run).empty());
        const RunResult resumed = run_normnet(with(setup.launch(run.string()), {"--quiet"}), setup.dir.work());
        INFO(resumed.err);
        REQUIRE(resumed.status == 0);
        require_same_run(run, reference);
    }
    // A second signal ends the process at once, before it saves anything more: the checkpoint of
    // epoch 1 is intact, and the run resumes from it.
    const fs::path run = setup.dir.path / "twice";
    {
        Process p(setup.launch(run.string()), setup.dir.work(), setup.dir.path / "stderr.txt", {at_step + ":2"});
        REQUIRE(p.wait_for("waiting for a signal at step 10", 20000));
        p.signal(SIGINT);
        REQUIRE(p.wait_for("waiting for signal 2", 20000));  // signals do not queue: one at a time
        p.signal(SIGINT);
        CHECK(p.wait() == 128 + SIGINT);
        CHECK(p.killed_by() == SIGINT);  // died of the second signal, not exited after a save
    }
    CHECK(read_file(setup.dir.path / "stderr.txt").empty());
    const auto model = normnet::load_safetensors((run / "model.safetensors").string());
    CHECK(model.metadata.at("normnet.epoch") == "1");
    CHECK(model.metadata.count("normnet.batch") == 0);
    require_consistent_folder(run, "after two signals");
    REQUIRE(run_normnet(with(setup.launch(run.string()), {"--quiet"}), setup.dir.work()).status == 0);
    require_same_run(run, reference);
}

TEST_CASE("crash: compare stopped by SIGINT writes the finished runs, marked incomplete", "[crash][signal][compare]") {
    TempDir dir;
    write_synthetic_mnist(dir.path / "data", 400, 100);
    const fs::path out = dir.path / "cmp";
    // Runs in grid order: batch 4 (layer, none: 100 batches an epoch, polled after 99 of them, 2
    // epochs), then batch 8 (layer, none). Poll 2 x 198 + 10 is inside run 3, where the program
    // waits for the signal (its test hook).
    Process p({"compare", "--data", (dir.path / "data").string(), "--norms", "layer,none", "--batch-sizes", "4,8",
               "--epochs", "2", "--hidden", "16", "--threads", "1", "--discrepancy-images", "100", "--out", out.string()},
              dir.work(), dir.path / "stderr.txt", {"NORMNET_TEST_SIGNAL_AT_STEP=406"});
    REQUIRE(p.wait_for("waiting for a signal at step 406", 60000));
    p.signal(SIGINT);
    CHECK(p.wait() == 128 + SIGINT);
    CHECK(p.killed_by() == 0);
    const std::string err = read_file(dir.path / "stderr.txt");
    CHECK(lines_of(err).size() == 1);
    CHECK_THAT(err, Contains("compare stopped by SIGINT after 2 of 4 runs") && Contains(out.string()));
    CHECK(lines_of(read_file(out / "results.csv")).size() == 3);  // header + the 2 finished runs
    CHECK_THAT(read_file(out / "report.md"), Contains("**Incomplete:** stopped by SIGINT after 2 of 4 runs"));
    for (const char* svg : {"accuracy_vs_batch.svg", "test_acc_curves.svg"}) CHECK(fs::exists(out / svg));
}

TEST_CASE("crash: a NaN loss stops the run naming where, keeps the last checkpoint and writes nothing", "[crash][nan]") {
    SmallRun setup(3);
    const fs::path run = setup.dir.path / "run";
    SECTION("no checkpoint yet: nothing is left") {
        const RunResult r = run_normnet(with(setup.launch(run.string()), {"--lr", "1e30", "--quiet"}),
                                        setup.dir.work());
        INFO(r.err);
        CHECK(r.status == 1);
        CHECK_THAT(r.err, StartsWith("normnet: error: non-finite loss") && Contains("at epoch 1, batch ") &&
                              Contains("no checkpoint was written"));
        CHECK(lines_of(r.err).size() == 1);
        CHECK(r.out.empty());
        CHECK_FALSE(fs::exists(run));
    }
    SECTION("after a good epoch: its checkpoint and metrics stay as they were") {
        REQUIRE(run_normnet({"train", "--out", run.string(), "--data", setup.data, "--hidden", "16", "--batch-size", "32",
                             "--epochs", "1", "--threads", "1", "--quiet"},
                            setup.dir.work())
                    .status == 0);
        const auto before = snapshot(run);
        const RunResult r = run_normnet({"train", "--resume", run.string(), "--data", setup.data, "--epochs", "3", "--lr",
                                         "1e30", "--threads", "1", "--quiet"},
                                        setup.dir.work());
        INFO(r.err);
        CHECK(r.status == 1);
        CHECK_THAT(r.err, Contains("non-finite loss") && Contains("at epoch 2, batch ") &&
                              Contains("the checkpoint of epoch 1 in " + run.string() + " is kept"));
        auto after = snapshot(run);
        after.erase("config.json");  // rewritten at the start, with the new --lr
        auto expected = before;
        expected.erase("config.json");
        CHECK(after == expected);
    }
    SECTION("--on-nan skip skips such steps and gives up when an epoch has no finite one") {
        const RunResult r = run_normnet(with(setup.launch(run.string()), {"--lr", "1e30", "--on-nan", "skip", "--quiet"}),
                                        setup.dir.work());
        INFO(r.err);
        CHECK(r.status == 1);
        // Step 1 is finite and blows the weights up; every later step is skipped, so epoch 2 has none.
        CHECK_THAT(r.err, Contains("every batch of epoch 2 had a non-finite loss or gradient (8 skipped)") &&
                              Contains("the checkpoint of epoch 1 in " + run.string() + " is kept"));
    }
}

TEST_CASE("crash: each state a commit can be interrupted in resumes, the incomplete newer checkpoint noted",
          "[crash][commit]") {
    TempDir dir;
    const std::string data = (dir.path / "data").string();
    write_synthetic_mnist(data, 256, 64);
    const fs::path reference = dir.path / "reference", run = dir.path / "run";
    // A constant schedule, so that 1 epoch resumed to 3 is the 3-epoch run.
    const std::vector<std::string> options{"--data", data, "--hidden", "16", "--batch-size", "32", "--threads", "1",
                                           "--schedule", "constant", "--quiet"};
    REQUIRE(run_normnet(with({"train", "--out", reference.string(), "--epochs", "3"}, options), dir.work()).status == 0);
    REQUIRE(run_normnet(with({"train", "--out", run.string(), "--epochs", "1"}, options), dir.work()).status == 0);
    const auto resume = [&] { return run_normnet(with({"train", "--resume", run.string(), "--epochs", "3"}, options), dir.work()); };
    SECTION("killed between the model's rename and the state's: the state is still the .next file") {
        fs::rename(run / "training_state.safetensors", run / "training_state.next.safetensors");
        const RunResult r = resume();
        INFO(r.err);
        REQUIRE(r.status == 0);
        CHECK(r.err.empty());
        require_same_run(run, reference);
    }
    SECTION("killed between a new state and its model: the orphaned .next is ignored, saying so") {
        fs::copy_file(reference / "training_state.safetensors", run / "training_state.next.safetensors");
        const RunResult r = resume();
        INFO(r.err);
        REQUIRE(r.status == 0);
        CHECK_THAT(r.err, StartsWith("normnet: note: ignoring ") && Contains("training_state.next.safetensors") &&
                              Contains("never written"));
        CHECK(lines_of(r.err).size() == 1);
        require_same_run(run, reference);
    }
    SECTION("a training state of another checkpoint is refused, naming it") {
        fs::copy_file(reference / "training_state.safetensors", run / "training_state.safetensors",
                      fs::copy_options::overwrite_existing);
        const auto before = snapshot(run);
        const RunResult r = resume();
        CHECK(r.status == 1);
        CHECK_THAT(r.err, Contains("no training state beside it matches it") && Contains("belongs to another checkpoint"));
        CHECK(snapshot(run) == before);
    }
}

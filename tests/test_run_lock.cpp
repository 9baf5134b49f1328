// A run folder belongs to one process while it writes there (run_folder.hpp, FolderLock): a
// second `train`, `lm train` or `compare` into it, even with --overwrite, is refused with one line
// naming the folder and the process that holds it, and changes nothing; a lock left by a killed
// process is no lock.
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "cli_helpers.hpp"
#include "normnet/normnet.hpp"

using namespace normnet::test;
using Catch::Contains;
using Catch::StartsWith;

namespace {

// Runs `second` while `first` holds `folder`: it must fail with one line naming both, and leave
// the folder as it was.
void require_refused(const TempDir& dir, const Process& first, const std::vector<std::string>& second, const fs::path& folder) {
    const auto before = snapshot(folder);
    const RunResult r = run_normnet(second, dir.work());
    INFO("stderr: " << r.err);
    CHECK(r.status == 1);
    CHECK(lines_of(r.err).size() == 1);
    CHECK_THAT(r.err, StartsWith("normnet: error: --out " + folder.string() + ": the folder is in use by another normnet process (pid " +
                                 std::to_string(first.pid()) + ": normnet "));
    CHECK(r.out.empty());
    CHECK(snapshot(folder) == before);
}

}  // namespace

TEST_CASE("lock: a second train into a folder being written is refused, naming the holder", "[cli][lock]") {
    TempDir dir;
    const fs::path data = dir.path / "data", run = dir.path / "run";
    write_synthetic_mnist(data, 200, 50, true);
    const std::vector<std::string> args{"train", "--data", data.string(), "--hidden", "8", "--epochs", "2", "--batch-size", "16", "--threads", "1",
                                        "--out", run.string()};
    {
        // The test hook holds the run at its step 3 (after its folder is prepared) until a signal comes.
        Process first(args, dir.work(), dir.path / "first.txt", {"NORMNET_TEST_SIGNAL_AT_STEP=3"});
        REQUIRE(first.wait_for("waiting for a signal", 20000));
        require_refused(dir, first, with(args, {"--overwrite"}), run);
        first.signal(SIGINT);
        CHECK(first.wait() == 128 + SIGINT);
    }
    CHECK_FALSE(fs::exists(run / ".normnet.lock"));  // released with the run
    // The run it stopped resumes: the folder is free again.
    const RunResult resumed = run_normnet({"train", "--resume", run.string(), "--data", data.string(), "--quiet"}, dir.work());
    INFO(resumed.err);
    CHECK(resumed.status == 0);
    CHECK_FALSE(fs::exists(run / ".normnet.lock"));
}

TEST_CASE("lock: a lock left by a killed run is no lock", "[cli][lock]") {
    TempDir dir;
    const fs::path data = dir.path / "data", run = dir.path / "run";
    write_synthetic_mnist(data, 200, 50, true);
    const std::vector<std::string> args{"train", "--data", data.string(), "--hidden", "8", "--epochs", "1", "--batch-size", "16", "--threads", "1",
                                        "--out", run.string()};
    {
        Process killed(args, dir.work(), dir.path / "killed.txt", {"NORMNET_TEST_SIGNAL_AT_STEP=2"});
        REQUIRE(killed.wait_for("waiting for a signal", 20000));
        killed.signal(SIGKILL);
        CHECK(killed.wait() == 128 + SIGKILL);
    }
    REQUIRE(fs::exists(run / ".normnet.lock"));  // the file stays, naming a process that is gone
    const RunResult again = run_normnet(with(args, {"--overwrite", "--quiet"}), dir.work());
    INFO(again.err);
    CHECK(again.status == 0);
    CHECK_FALSE(fs::exists(run / ".normnet.lock"));
}

TEST_CASE("lock: lm train and compare refuse a folder another process writes", "[cli][lock][lm][compare]") {
    TempDir dir;
    const std::string text = (dir.path / "f.txt").string();
    std::ofstream(text, std::ios::binary) << fortunes(80);
    const fs::path lm = dir.path / "lm";
    const std::vector<std::string> lm_args{"lm", "train", "--text", text, "--steps", "100000000", "--eval-every", "100000000",
                                           "--context", "16", "--d-model", "16", "--layers", "1", "--heads", "2",
                                           "--batch-size", "4", "--warmup", "4", "--threads", "1", "--out", lm.string()};
    {
        Process first(lm_args, dir.work(), dir.path / "lm.txt");
        REQUIRE(first.wait_for("run folder:", 20000));
        require_refused(dir, first, with(lm_args, {"--overwrite"}), lm);
        first.signal(SIGINT);
        CHECK(first.wait() == 128 + SIGINT);
    }
    const fs::path data = dir.path / "data", grid = dir.path / "grid";
    write_synthetic_mnist(data, 200, 50, true);
    const std::vector<std::string> compare_args{"compare", "--data", data.string(), "--hidden", "8", "--norms", "layer,none",
                                                "--batch-sizes", "16", "--epochs", "2", "--threads", "1",
                                                "--discrepancy-images", "50", "--out", grid.string()};
    {
        Process first(compare_args, dir.work(), dir.path / "compare.txt", {"NORMNET_TEST_SIGNAL_AT_STEP=3"});
        REQUIRE(first.wait_for("waiting for a signal", 20000));
        require_refused(dir, first, with(compare_args, {"--overwrite"}), grid);
        first.signal(SIGINT);
        CHECK(first.wait() == 128 + SIGINT);
    }
    CHECK_FALSE(fs::exists(grid / ".normnet.lock"));
}

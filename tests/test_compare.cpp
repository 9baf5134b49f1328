// `normnet compare` on a tiny grid (2 normalisations x 2 batch sizes x 1 epoch): every output
// file exists with the right columns, the SVG charts are well-formed XML, LayerNorm's train/eval
// discrepancy is exactly zero and eval mode gives the same accuracy one sample at a time; the
// report describes the grid that ran; existing outputs are kept; `normnet bench`'s header.
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "xml_check.hpp"

using namespace normnet::test;
using Catch::Contains;

namespace {

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& line : lines_of(text)) rows.push_back(csv_cells(line));
    return rows;
}

}  // namespace

TEST_CASE("compare: a 2 x 2 x 1-epoch grid writes every output with the right columns", "[compare]") {
    TempDir dir;
    write_synthetic_mnist(dir.path / "data", 600, 200);
    const auto r = run_normnet({"compare", "--data", (dir.path / "data").string(), "--norms", "layer,batch",
                                "--batch-sizes", "16,64", "--epochs", "1", "--hidden", "32", "--threads", "1",
                                "--discrepancy-images", "300", "--out", dir / "cmp"},
                               dir.work());
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("\033[") == std::string::npos);  // no progress bar in a pipe
    CHECK_THAT(r.out, Contains("LayerNorm    batch   16") && Contains("BatchNorm    batch   64"));

    const fs::path out = dir / "cmp";
    const auto results = csv_rows(read_file(out / "results.csv"));
    REQUIRE(results.size() == 5);  // header + 2 norms x 2 batch sizes
    const std::vector<std::string> header{"norm", "batch_size", "seed", "lr", "epochs", "final_test_acc", "best_test_acc",
                                          "final_test_loss", "seconds_per_epoch", "train_mode_acc", "eval_mode_acc",
                                          "train_eval_logit_mad", "single_sample_test_acc", "full_batch_test_acc",
                                          "single_sample_mismatches", "single_sample_consistent",
                                          "batch_stats_test_acc", "precise_stats_test_acc"};
    CHECK(results[0] == header);
    for (size_t i = 1; i < results.size(); ++i) {
        const auto& row = results[i];
        REQUIRE(row.size() == header.size());
        const double acc = std::stod(row[5]);
        CHECK((acc >= 0.0 && acc <= 1.0));
        CHECK(row[15] == "true");  // batch-of-one eval equals full-batch eval
        if (row[0] == "layer") CHECK(std::stod(row[11]) == 0.0);  // LayerNorm: train mode == eval mode
        CHECK(row[16].empty() == (row[0] != "batch"));        // BatchNorm's test accuracy with batch statistics...
        CHECK(row[17].empty() == (row[0] != "batch"));        // ...and with precise population statistics
    }
    const auto curves = csv_rows(read_file(out / "curves.csv"));
    REQUIRE(curves.size() == 5);  // one epoch per run
    CHECK(curves[0] == std::vector<std::string>{"norm", "batch_size", "seed", "epoch", "train_loss", "train_acc",
                                                "test_loss", "test_acc", "epoch_seconds", "lr"});

    const std::string report = read_file(out / "report.md");
    CHECK_THAT(report, Contains("## Final test accuracy") && Contains("## Train/eval discrepancy") &&
                           Contains("## Seconds per training epoch") && Contains("normnet compare --norms layer,batch"));
    for (const char* svg : {"accuracy_vs_batch.svg", "test_acc_curves.svg"}) {
        const std::string text = read_file(out / svg);
        INFO(svg);
        CHECK(svg_problem(text).empty());
        CHECK_THAT(text, Contains("LayerNorm") && Contains("BatchNorm"));
    }
    CHECK_THAT(read_file(out / "accuracy_vs_batch.svg"), Contains(">16<") && Contains(">64<"));
}

TEST_CASE("compare: bad options exit with status 2 and write nothing", "[compare]") {
    TempDir dir;
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"compare", "--norms", "layer,group", "--out", dir / "cmp"},
             {"compare", "--norms", "layer,layer", "--out", dir / "cmp"},
             {"compare", "--batch-sizes", "16,0", "--out", dir / "cmp"},
             {"compare", "--seeds", "0", "--out", dir / "cmp"},
             {"compare", "--lr-scaling", "cubic", "--out", dir / "cmp"}}) {
        const auto r = run_normnet(args, dir.work());
        INFO(args[1] << " " << args[2] << ": " << r.err);
        CHECK(r.status == 2);
        CHECK(lines_of(r.err).size() == 1);
        CHECK_THAT(r.err, Catch::StartsWith("normnet: error: "));
        CHECK_FALSE(fs::exists(dir / "cmp"));
    }
}

TEST_CASE("compare: the report describes the grid that ran, seeds get a column and error bars", "[compare]") {
    TempDir dir;
    write_synthetic_mnist(dir.path / "data", 300, 100);
    // Spaces after the commas, as in --hidden.
    const auto r = run_normnet({"compare", "--data", (dir.path / "data").string(), "--norms", "layer, none",
                                "--batch-sizes", "32, 64", "--epochs", "2", "--seeds", "2", "--hidden", "16",
                                "--threads", "1", "--discrepancy-images", "100", "--out", dir / "cmp"},
                               dir.work());
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("2 seeds, 2 epochs each, 8 runs"));
    const fs::path out = dir / "cmp";
    const std::string report = read_file(out / "report.md");
    CHECK_THAT(report, Contains("Model 784-16-10 MLP with each normalisation"));
    CHECK_THAT(report, !Contains("784-16-10 layer") && !Contains("\"batch_size\"") && !Contains("\"norm\""));
    CHECK_THAT(report, Contains("\"norms\": [\n    \"layer\",\n    \"none\"\n  ]") && Contains("\"seeds\": [\n    0,\n    1\n  ]"));
    // One row per run in the single-sample table, told apart by their seed.
    CHECK_THAT(report, Contains("| normalisation | batch | seed |"));
    CHECK_THAT(report, Contains("| LayerNorm | 32 | 0 |") && Contains("| LayerNorm | 32 | 1 |"));
    // The curves: one line per cell, the seeds' mean with error bars, epochs as whole numbers.
    const std::string curves = read_file(out / "test_acc_curves.svg");
    CHECK(svg_problem(curves).empty());
    CHECK_THAT(curves, Contains("class=\"error-bars\"") && Contains("mean ± std over 2 seeds"));
    CHECK_THAT(curves, Contains(">LayerNorm, batch 32<") && !Contains("seed 1"));
    for (const char* fraction : {">1.2<", ">1.5<", ">1.8<"}) CHECK_THAT(curves, !Contains(fraction));
}

TEST_CASE("compare: an existing output is refused unless --overwrite, bad grids are usage errors", "[compare]") {
    TempDir dir;
    write_synthetic_mnist(dir.path / "data", 200, 50);
    const std::vector<std::string> run{"compare", "--data", (dir.path / "data").string(), "--norms", "layer",
                                       "--batch-sizes", "64", "--epochs", "1", "--hidden", "8", "--threads", "1",
                                       "--discrepancy-images", "50"};
    // --out naming a file: one line, no filesystem exception text.
    const std::string file = dir / "a_file";
    std::ofstream(file) << "x";
    auto e = run_normnet(with(run, {"--out", file}), dir.work());
    CHECK(e.status == 1);
    CHECK_THAT(e.err, Catch::StartsWith("normnet: error: --out " + file) && !Contains("filesystem"));
    REQUIRE(run_normnet(with(run, {"--out", dir / "cmp"}), dir.work()).status == 0);
    const std::string before = read_file(fs::path(dir / "cmp") / "results.csv");
    e = run_normnet(with(run, {"--out", dir / "cmp"}), dir.work());
    CHECK(e.status == 1);
    CHECK_THAT(e.err, Contains("already holds") && Contains("--overwrite"));
    CHECK(read_file(fs::path(dir / "cmp") / "results.csv") == before);
    CHECK(run_normnet(with(run, {"--out", dir / "cmp", "--overwrite"}), dir.work()).status == 0);
    // BatchNorm at batch size 1 is refused before anything runs.
    e = run_normnet({"compare", "--norms", "layer,batch", "--batch-sizes", "1,4", "--out", dir / "bn"}, dir.work());
    CHECK(e.status == 2);
    CHECK_THAT(e.err, Contains("--batch-size 1") && Contains("BatchNorm"));
    CHECK_FALSE(fs::exists(dir / "bn"));
}

TEST_CASE("bench: the header names the norms that run, and its options their own names", "[compare][bench]") {
    TempDir dir;
    write_synthetic_mnist(dir.path / "data", 64, 10);
    const auto r = run_normnet({"bench", "--data", (dir.path / "data").string(), "--batch-sizes", "32", "--norms", "rms",
                                "--epochs", "1", "--warmup-epochs", "0", "--hidden", "16", "--threads", "1"},
                               dir.work());
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("normnet bench: 784-16-10 MLP, norms rms,") && Contains("1 thread,") &&
                          Contains("0 warm-up + 1 timed epoch per row") && !Contains("layer"));
    const auto zero = run_normnet({"bench", "--epochs", "0"}, dir.work());
    CHECK(zero.status == 2);
    CHECK_THAT(zero.err, Contains("--epochs") && !Contains("--repeats"));
}

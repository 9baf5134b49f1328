// `normnet compare` on a tiny grid (2 normalisations x 2 batch sizes x 1 epoch): every output
// file exists with the right columns, the SVG charts are well-formed XML, LayerNorm's train/eval
// discrepancy is exactly zero and eval mode gives the same accuracy one sample at a time.
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
    CHECK_THAT(r.out, Contains("LayerNorm batch   16") && Contains("BatchNorm batch   64"));

    const fs::path out = dir / "cmp";
    const auto results = csv_rows(read_file(out / "results.csv"));
    REQUIRE(results.size() == 5);  // header + 2 norms x 2 batch sizes
    const std::vector<std::string> header{"norm", "batch_size", "seed", "lr", "epochs", "final_test_acc", "best_test_acc",
                                          "final_test_loss", "seconds_per_epoch", "train_mode_acc", "eval_mode_acc",
                                          "train_eval_logit_mad", "single_sample_test_acc", "full_batch_test_acc",
                                          "single_sample_mismatches", "single_sample_consistent"};
    CHECK(results[0] == header);
    for (size_t i = 1; i < results.size(); ++i) {
        const auto& row = results[i];
        REQUIRE(row.size() == header.size());
        const double acc = std::stod(row[5]);
        CHECK((acc >= 0.0 && acc <= 1.0));
        CHECK(row[15] == "true");  // batch-of-one eval equals full-batch eval
        if (row[0] == "layer") CHECK(std::stod(row[11]) == 0.0);  // LayerNorm: train mode == eval mode
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

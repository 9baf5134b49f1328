// `normnet compare --model lm` and `normnet bench --model lm` on a tiny corpus and a tiny model
// (a few steps): the table, the files and the report's sections; option errors as one line with
// nothing written; the findings computed from the grid (a synthetic one, so both verdicts of each
// anchor are reached); the LM's GEMM-floor products.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numbers>

#include "bench_lm.hpp"
#include "models.hpp"
#include "cli_helpers.hpp"
#include "compare_lm.hpp"
#include "test_helpers.hpp"

using namespace normnet::cli;
using normnet::test::RunResult;
using normnet::test::TempDir;
using normnet::test::run_normnet;
using normnet::test::with;
using Catch::Contains;

namespace {

// Records of a few lines each, separated by % lines, as Debian's fortune files.
std::string write_corpus(const TempDir& dir) {
    std::string text;
    const char* lines[] = {"A stitch in time saves nine.", "Look before you leap.", "Fortune favours the bold.",
                           "Still waters run deep."};
    for (int k = 0; k < 60; ++k) text += std::string(lines[k % 4]) + "\n-- proverb " + std::to_string(k) + "\n%\n";
    const std::string path = (dir.path / "proverbs.txt").string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

// The grid options of a tiny run; `norms` and `heads` replaceable, to be wrong.
std::vector<std::string> tiny_grid(const std::string& text, const std::string& out, const std::string& norms = "layer,batch",
                                   const std::string& heads = "2") {
    return {"compare", "--model", "lm", "--text", text, "--norms", norms, "--batch-sizes", "4", "--steps", "6",
            "--eval-every", "3", "--context", "16", "--d-model", "16", "--layers", "1", "--heads", heads, "--warmup", "0",
            "--threads", "1", "--out", out};
}

void require_usage_error(const TempDir& dir, const std::vector<std::string>& args, const std::string& mention) {
    const auto before = normnet::test::snapshot(dir.work());
    const RunResult r = run_normnet(args, dir.work());
    INFO("stderr: " << r.err << "\nstdout: " << r.out);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::StartsWith("normnet: error: ") && Contains(mention));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.out.empty());
    CHECK(normnet::test::snapshot(dir.work()) == before);
}

// A grid of LayerNorm and BatchNorm, pre and post, one batch size, from final losses in bits/char.
LmGrid synthetic(double ln_pre, double ln_post, double bn_pre, double bn_post, int64_t warmup) {
    LmGrid g{{"layer", "batch"}, {"pre", "post"}, {32}, 1, warmup, 100, 500, {}, {}};
    for (double bits : {ln_pre, ln_post, bn_pre, bn_post}) {
        g.final_loss.push_back({bits * std::numbers::ln2, 0, 1});
        g.first_loss.push_back({(bits + 1) * std::numbers::ln2, 0, 1});
    }
    return g;
}

}  // namespace

TEST_CASE("compare lm: a tiny grid prints its table and writes the report, CSV, JSON and chart", "[lm][compare]") {
    TempDir dir;
    const std::string text = write_corpus(dir);
    const RunResult r = run_normnet(with(tiny_grid(text, dir / "cmp"), {"--norm-placement", "pre,post"}), dir.work());
    INFO("stderr: " << r.err << "\nstdout: " << r.out);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("Final validation loss (bits/char)") && Contains("| LayerNorm, pre-LN |") &&
                          Contains("| BatchNorm, post-LN |") && Contains("Shen et al.") && Contains("Xiong et al."));
    const std::string csv = normnet::test::read_file(dir.work() / "cmp" / "results.csv");
    const auto rows = normnet::test::lines_of(csv);
    REQUIRE(rows.size() == 5);
    CHECK(rows[0] == "norm,placement,batch_size,seed,steps,final_train_loss,final_val_loss,final_val_bits_per_char,seconds,"
                     "tokens_per_second,diverged");
    CHECK(normnet::test::csv_cells(rows[1])[0] == "layer");
    CHECK(normnet::test::csv_cells(rows[1])[4] == "6");
    CHECK(normnet::test::lines_of(normnet::test::read_file(dir.work() / "cmp" / "curves.csv")).size() == 1 + 4 * 2);
    const auto json = nlohmann::json::parse(normnet::test::read_file(dir.work() / "cmp" / "results.json"));
    REQUIRE(json["runs"].size() == 4);
    const double nats = json["runs"][0]["final_val_loss"];
    CHECK(json["runs"][0]["final_val_bits_per_char"].get<double>() == Approx(nats / std::numbers::ln2));
    const std::string report = normnet::test::read_file(dir.work() / "cmp" / "report.md");
    CHECK_THAT(report, Contains("## Final validation loss, bits per character") && Contains("## What this run shows") &&
                           Contains("without warm-up (--warmup 0)") && Contains("| step 3 | step 6 |"));
    CHECK_THAT(normnet::test::read_file(dir.work() / "cmp" / "val_loss_curves.svg"), Contains("<svg"));
}

TEST_CASE("compare lm: bad options are one line, exit 2, nothing written", "[lm][compare]") {
    TempDir dir;
    const std::string text = write_corpus(dir);
    const std::string out = dir / "cmp";
    require_usage_error(dir, tiny_grid(text, out, "layer,group"), "--norms: unknown normalisation 'group'");
    require_usage_error(dir, with(tiny_grid(text, out), {"--norm-placement", "middle"}), "--norm-placement: unknown 'middle'");
    require_usage_error(dir, with(tiny_grid(text, out), {"--dataset", "mnist"}), "--dataset: does not apply to --model lm");
    require_usage_error(dir, with(tiny_grid(text, out), {"--schedule", "step"}), "--schedule: --model lm takes cosine or constant");
    require_usage_error(dir, tiny_grid(text, out, "layer", "3"), "--heads 3");
    require_usage_error(dir, {"compare", "--steps", "5", "--out", out}, "--steps: applies to --model lm, not mlp");
    require_usage_error(dir, {"bench", "--context", "5"}, "--context: applies to --model lm, not mlp");
}

TEST_CASE("compare lm: the findings follow the numbers, not a script", "[lm][compare]") {
    // BatchNorm 0.3 bits/char worse, post-LN 0.2 worse, no warm-up: both anchors reproduced.
    std::string md = lm_findings_md(synthetic(2.0, 2.2, 2.3, 2.5, 0));
    CHECK_THAT(md, Contains("as Shen et al.") && Contains("0.300 bits/char above LayerNorm") &&
                       Contains("post-LN trails pre-LN without warm-up (--warmup 0) in every setting") &&
                       Contains("as Xiong et al.") &&
                       Contains("0.200 bits/char above pre-LN"));
    // BatchNorm better, post-LN level: neither.
    md = lm_findings_md(synthetic(2.0, 2.0, 1.8, 1.8, 0));
    CHECK_THAT(md, Contains("unlike Shen et al.") && Contains("0.200 bits/char below LayerNorm") &&
                       Contains("does not trail pre-LN without warm-up") && Contains("within 0.010 bits/char of pre-LN"));
    // With a warm-up the report says the anchor is about runs without one.
    md = lm_findings_md(synthetic(2.0, 2.005, 2.0, 2.0, 100));
    CHECK_THAT(md, Contains("with a warm-up of 100 steps (--warmup 100)") && Contains("run again with --warmup 0") &&
                       Contains("BatchNorm and LayerNorm end level"));
    // A diverged cell (n 0) is said, not averaged.
    LmGrid g = synthetic(2.0, 2.2, 2.3, 2.5, 0);
    g.final_loss[1] = CellStat{};
    CHECK_THAT(lm_findings_md(g), Contains("post-LN diverged or did not finish"));
}

TEST_CASE("bench lm: a tiny setting prints tokens/s next to its GEMM floor", "[lm][bench]") {
    TempDir dir;
    const std::string text = write_corpus(dir);
    const RunResult r = run_normnet({"bench", "--model", "lm", "--data", text, "--context", "16", "--d-model", "16",
                                     "--layers", "2", "--heads", "2", "--batch-sizes", "4", "--norms", "layer,rms",
                                     "--steps", "3", "--warmup-steps", "1", "--epochs", "1", "--threads", "1", "--json"},
                                    dir.work());
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 0);
    const auto lines = normnet::test::lines_of(r.out);
    REQUIRE(lines.size() == 2);
    const auto j = nlohmann::json::parse(lines[1]);
    CHECK(j["model"] == "lm");
    CHECK(j["norm"] == "rms");
    CHECK(j["tokens_per_second"].get<double>() > 0);
    CHECK(j["gemm_floor_seconds"].get<double>() > 0);
    CHECK(j["ratio_to_floor"].get<double>() > 0);
    const RunResult table = run_normnet({"bench", "--model", "lm", "--text", text, "--context", "16", "--d-model", "16",
                                         "--layers", "1", "--heads", "2", "--batch-sizes", "4", "--steps", "2",
                                         "--warmup-steps", "0", "--epochs", "1", "--threads", "1"},
                                        dir.work());
    REQUIRE(table.status == 0);
    CHECK_THAT(table.out, Contains("tokens/s") && Contains("GEMM floor") && Contains("layer"));
}

TEST_CASE("bench lm: the floor lists every layer's products and the head", "[lm][bench]") {
    ModelSpec s = ModelSpec::defaults("lm");
    s.inputs = s.classes = 50;
    s.sizes["context"] = {8};
    s.sizes["d_model"] = {16};
    s.sizes["layers"] = {2};
    s.sizes["heads"] = {4};
    const auto layers = s.kind().gemm_products(s, 3);
    REQUIRE(layers.size() == 2 * 5 + 1);  // in_proj, attention, out_proj, linear1, linear2 per layer; the head
    const FloorLayer& attention = layers[1];
    CHECK(attention.images == 3 * 4);  // batch x heads slices
    CHECK(attention.forward.size() == 2);
    CHECK(attention.backward.size() == 4);
    CHECK(attention.forward[0].M == 8);
    CHECK(attention.forward[0].K == 4);  // head dim
    const FloorLayer& head = layers.back();
    CHECK(head.forward[0].M == 3 * 8);
    CHECK(head.forward[0].N == 50);
    CHECK(head.backward.size() == 2);  // weight and input gradients
    CHECK(layers[0].forward[0].N == 48);  // in_proj: 3 d_model
}

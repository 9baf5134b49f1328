// The CNN from the command line (issue 12 sections 3 and 4) on tiny synthetic data: `train
// --model cnn` with every normalisation writes the architecture that `eval` rebuilds; bad CNN
// options and forged CNN metadata are refused naming the option or file; a resumed CNN run ends
// bit for bit where a straight one does; `compare --model cnn` writes the Figure-1 view of the
// grid with BatchNorm's precise statistics; `bench --model cnn` prints its GEMM floor. And the
// tables behind them: the normalisation table, the model registry, precise statistics.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "batch_size_report.hpp"
#include "batch_statistics.hpp"
#include "cli_helpers.hpp"
#include "models.hpp"
#include "run_config.hpp"
#include "test_helpers.hpp"
#include "xml_check.hpp"
#include "normnet/normnet.hpp"

using namespace normnet::test;
using Catch::Contains;
using Catch::StartsWith;
namespace cli = normnet::cli;

namespace {

// A small CNN (4 and 8 channels, fc 16) on the synthetic folder: a second per run at most.
std::vector<std::string> tiny_cnn(const std::string& data, const std::string& out) {
    return {"train", "--model", "cnn", "--data", data, "--channels", "4,8", "--fc", "16", "--epochs", "1",
            "--batch-size", "16", "--threads", "1", "--quiet", "--out", out};
}

}  // namespace

TEST_CASE("cnn: the registry's rows take the normalisations of their sites, and their specs round-trip", "[cnn][norms]") {
    // The normalisation table itself is the library's (test_models_zoo.cpp).
    CHECK(cli::uses_batch_statistics("batch"));
    CHECK_FALSE(cli::uses_batch_statistics("group"));
    CHECK(cli::norm_label("group") == "GroupNorm");
    CHECK_THROWS_WITH(cli::parse_norm_list("batch,rms", normnet::NormSite::channels, "cnn"),
                      Contains("'rms'") && Contains("--model cnn"));
    // The default spec of every model is valid and builds; its JSON form round-trips.
    for (const cli::ModelKind* kind : cli::model_kinds()) {
        INFO(kind->name);
        cli::ModelSpec spec = cli::ModelSpec::defaults(kind->name);
        CHECK_NOTHROW(spec.validate("test"));
        if (spec.inputs == 0) spec.inputs = spec.classes = 10;  // sized by its data: the LM's vocabulary
        CHECK(cli::ModelSpec::from_json(spec.to_json(), "test") == spec);
        CHECK(cli::build_model(spec)->named_parameters().size() > 0);
    }
    CHECK(cli::ModelSpec::defaults("cnn").to_json() ==
          R"({"type":"cnn","inputs":784,"image":[1,28,28],"channels":[32,64],"fc":[128],"groups":8,"classes":10,"norm":"batch"})");
    CHECK(cli::ModelSpec{}.to_json() == R"({"type":"mlp","inputs":784,"hidden":[300,100],"classes":10,"norm":"layer"})");
    // Issue 12's CNN: conv 1->32, conv 32->64, linear 3136->128, linear 128->10.
    CHECK(cli::ModelSpec::defaults("cnn").str() == "cnn 1x28x28 c32-64 fc128-10 batch");
    CHECK(cli::ModelSpec::defaults("cnn").parameters() == 320 + 18496 + 401536 + 1290);
}

TEST_CASE("cnn: train --model cnn with every normalisation, and eval rebuilds it from the checkpoint", "[cnn][cli]") {
    TempDir dir;
    const fs::path data = dir.path / "data";
    write_synthetic_mnist(data, 64, 20, true);
    for (const std::string norm : {"batch", "group", "layer", "instance", "none"}) {
        INFO(norm);
        const std::string out = dir / ("run_" + norm);
        const RunResult r = run_normnet(with(tiny_cnn(data.string(), out), {"--norm", norm, "--groups", "2"}), dir.work());
        INFO(r.err);
        REQUIRE(r.status == 0);
        const auto model = normnet::load_safetensors(out + "/model.safetensors");
        const auto arch = nlohmann::json::parse(model.metadata.at("normnet.architecture"));
        CHECK(arch.at("type") == "cnn");
        CHECK(arch.at("channels") == std::vector<int>{4, 8});
        CHECK(arch.at("fc") == std::vector<int>{16});
        CHECK(arch.at("groups") == 2);
        CHECK(arch.at("norm") == norm);
        // torch.nn.Sequential's names: 0 is the Unflatten, 1 the first Conv2d.
        CHECK(model.tensors.front().first == "1.weight");
        CHECK(model.tensors.front().second.shape() == normnet::Shape{4, 1, 3, 3});
        const auto config = nlohmann::json::parse(read_file(out + "/config.json"));
        CHECK(config.at("dataset") == "fashion-mnist");  // the CNN's default dataset (here from --data)
        CHECK(config.at("epochs") == 1);

        const RunResult e = run_normnet({"eval", "--checkpoint", out, "--data", data.string(), "--threads", "1"}, dir.work());
        INFO(e.err);
        REQUIRE(e.status == 0);
        CHECK_THAT(e.out, Contains("cnn 1x28x28 c4-8 fc16-10 " + norm) && Contains("20 images"));
    }
    // The MLP stays the default, with its own recipe.
    const RunResult mlp = run_normnet({"train", "--data", data.string(), "--hidden", "8", "--epochs", "1", "--threads", "1",
                                       "--quiet", "--out", dir / "mlp"},
                                      dir.work());
    REQUIRE(mlp.status == 0);
    const auto config = nlohmann::json::parse(read_file(dir / "mlp/config.json"));
    CHECK(config.at("model").at("type") == "mlp");
    CHECK(config.at("model").at("norm") == "layer");
    CHECK(config.at("dataset") == "mnist");
}

TEST_CASE("cnn: bad CNN options are usage errors naming the option, before anything is read", "[cnn][cli]") {
    TempDir dir;
    const fs::path data = dir.path / "data";
    write_synthetic_mnist(data, 32, 10);
    const std::vector<std::string> base = tiny_cnn(data.string(), dir / "run");
    // Without the sizes tiny_cnn gives, for the cases that give their own.
    const std::vector<std::string> bare{"train", "--model", "cnn", "--data", data.string(), "--threads", "1", "--out", dir / "run"};
    require_failure(dir, with(base, {"--norm", "rms"}), 2, {"--norm rms", "does not apply to --model cnn", "group"});
    require_failure(dir, with(base, {"--norm", "group", "--groups", "3"}), 2, {"--groups 3", "4 channels"});
    require_failure(dir, with(base, {"--groups", "0"}), 2, {"--groups", "'0'"});
    require_failure(dir, with(base, {"--groups", "2,2"}), 2, {"--groups", "one number"});
    require_failure(dir, with(bare, {"--channels", "4,x"}), 2, {"--channels", "4,x"});
    require_failure(dir, with(bare, {"--channels", "2,2,2,2,2"}), 2, {"--channels", "max-pool"});
    require_failure(dir, with(base, {"--hidden", "10"}), 2, {"--hidden", "applies to --model mlp, not cnn"});
    require_failure(dir, {"train", "--channels", "8", "--out", dir / "run"}, 2, {"--channels", "applies to --model cnn, not mlp"});
    require_failure(dir, {"train", "--model", "resnet", "--out", dir / "run"}, 2, {"--model", "resnet"});
    require_failure(dir, {"train", "--norm", "group", "--out", dir / "run"}, 2, {"--norm group", "--model mlp"});
    require_failure(dir, with(bare, {"--norm", "batch", "--batch-size", "1"}), 2, {"--batch-size 1", "BatchNorm"});
}

TEST_CASE("cnn: forged CNN metadata is refused before the model is built", "[cnn][cli][hostile]") {
    TempDir dir;
    const fs::path data = dir.path / "data";
    write_synthetic_mnist(data, 32, 10);
    REQUIRE(run_normnet(tiny_cnn(data.string(), dir / "ckpt"), dir.work()).status == 0);
    auto saved = normnet::load_safetensors(dir / "ckpt/model.safetensors");
    const std::string good = saved.metadata.at("normnet.architecture");
    struct Case {
        std::string from, to, says;
    };
    const std::vector<Case> cases{
        {"\"channels\":[4,8]", "\"channels\":[4,100000]", "holds only"},
        {"\"channels\":[4,8]", "\"channels\":[1e300]", "layer size 1e+300"},
        {"\"channels\":[4,8]", "\"channels\":4", "channels is not a list"},
        {"\"fc\":[16]", "\"fc\":[]", "--fc must list at least one size"},
        {"\"image\":[1,28,28]", "\"image\":[1,28]", "image must be"},
        {"\"norm\":\"batch\"", "\"norm\":\"rms\"", "does not apply"},
        {"\"type\":\"cnn\"", "\"type\":\"resnet\"", "unknown model 'resnet'"},
    };
    for (const Case& c : cases) {
        INFO(c.to);
        std::string text = good;
        REQUIRE(text.find(c.from) != std::string::npos);
        text.replace(text.find(c.from), c.from.size(), c.to);
        saved.metadata["normnet.architecture"] = text;
        const std::string forged = dir / "forged.safetensors";
        normnet::save_safetensors(forged, saved.tensors, saved.metadata);
        const RunResult r = run_normnet({"eval", "--checkpoint", forged, "--data", data.string()}, dir.work());
        CHECK(r.status == 1);
        CHECK_THAT(r.err, StartsWith("normnet: error: ") && Contains(forged) && Contains(c.says));
        CHECK(lines_of(r.err).size() == 1);
        fs::remove(forged);
    }
}

TEST_CASE("cnn: 1 epoch + --resume for 1 equals 2 epochs straight, bit for bit", "[cnn][cli][resume]") {
    TempDir dir;
    const fs::path data = dir.path / "data";
    write_synthetic_mnist(data, 80, 20, true);
    const std::vector<std::string> common{"train", "--model", "cnn", "--data", data.string(), "--channels", "4,8",
                                          "--fc", "16", "--batch-size", "16", "--schedule", "constant", "--threads", "1",
                                          "--quiet"};
    const std::string a = dir / "A", b = dir / "B";
    REQUIRE(run_normnet(with(common, {"--epochs", "2", "--out", a}), dir.work()).status == 0);
    REQUIRE(run_normnet(with(common, {"--epochs", "1", "--out", b}), dir.work()).status == 0);
    const RunResult resumed = run_normnet({"train", "--data", data.string(), "--resume", b, "--epochs", "2", "--threads", "1",
                                           "--quiet"},
                                          dir.work());
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    const auto x = normnet::load_safetensors(a + "/model.safetensors"), y = normnet::load_safetensors(b + "/model.safetensors");
    REQUIRE(x.tensors.size() == y.tensors.size());
    for (size_t i = 0; i < x.tensors.size(); ++i) {
        INFO(x.tensors[i].first);
        CHECK(x.tensors[i].first == y.tensors[i].first);
        CHECK(bit_equal(x.tensors[i].second, y.tensors[i].second));
    }
    CHECK(x.metadata.at("normnet.architecture") == y.metadata.at("normnet.architecture"));
    // Resuming a CNN checkpoint as another architecture is refused.
    require_failure(dir, {"train", "--data", data.string(), "--resume", b, "--epochs", "3", "--channels", "4,4",
                          "--out", dir / "C"},
                    1, {"architecture", "c4-8", "c4-4"});
}

TEST_CASE("cnn: compare --model cnn writes the error-vs-batch view with BatchNorm's three evaluations", "[cnn][compare]") {
    TempDir dir;
    write_synthetic_mnist(dir.path / "data", 96, 40, true);
    const fs::path out = dir / "cmp";
    const RunResult r = run_normnet({"compare", "--model", "cnn", "--data", (dir.path / "data").string(), "--norms",
                                     "batch,group,layer", "--batch-sizes", "4,8", "--lr-scaling", "linear", "--epochs", "1",
                                     "--channels", "4,8", "--fc", "16", "--groups", "2", "--threads", "1",
                                     "--discrepancy-images", "48", "--out", out.string()},
                                    dir.work());
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("Test error (%) against batch size") && Contains("| GroupNorm |"));
    const std::string report = read_file(out / "report.md");
    CHECK_THAT(report, Contains("Model cnn 1x28x28 c4-8 fc16-10 with each normalisation after each convolution"));
    CHECK_THAT(report, Contains("as in Wu and He's Figure 1") && Contains("| normalisation | batch 8 | batch 4 |"));
    CHECK_THAT(report, Contains("Group Normalization\", ECCV 2018") && Contains("| BatchNorm | 23.6 | 23.7 | 24.8 | 27.3 | 34.7 |"));
    CHECK_THAT(report, Contains("### What this run shows") && Contains("**BatchNorm**: ") && Contains("**GroupNorm**: ") &&
                           Contains("**LayerNorm** (GroupNorm with one group)") && Contains("**Ranking at batch 4**"));
    CHECK_THAT(report, Contains("### BatchNorm evaluated three ways") && Contains("**BatchNorm's statistics at batch 4**"));
    CHECK_THAT(report, !Contains("± 0.00"));  // one seed: no spread to show
    const auto results = lines_of(read_file(out / "results.csv"));
    REQUIRE(results.size() == 7);
    const auto header = csv_cells(results[0]);
    CHECK(header.back() == "precise_stats_test_acc");
    for (size_t i = 1; i < results.size(); ++i) {
        const auto row = csv_cells(results[i]);
        INFO(results[i]);
        CHECK(row[15] == "true");  // one sample at a time gives the full-batch accuracy, BatchNorm2d too
        CHECK(row.back().empty() == (row[0] != "batch"));
        if (row[0] == "batch") CHECK((std::stod(row.back()) >= 0 && std::stod(row.back()) <= 1));
        if (row[0] != "batch") CHECK(std::stod(row[11]) == 0.0);  // no train/eval gap without batch statistics
    }
    const std::string svg = read_file(out / "error_vs_batch.svg");
    CHECK(svg_problem(svg).empty());
    CHECK_THAT(svg, Contains("test error") && Contains(">GroupNorm<"));
    CHECK_THAT(svg, Contains(">4</text>") && Contains(">8</text>"));  // every batch size labelled, right to left
}

TEST_CASE("cnn: bench --model cnn prints a row per norm with its GEMM floor", "[cnn][bench]") {
    TempDir dir;
    write_synthetic_mnist(dir.path / "data", 64, 10);
    const RunResult r = run_normnet({"bench", "--model", "cnn", "--data", (dir.path / "data").string(), "--batch-sizes", "16",
                                     "--norms", "batch,instance", "--epochs", "1", "--warmup-epochs", "0", "--channels", "4,8",
                                     "--fc", "16", "--threads", "1"},
                                    dir.work());
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("normnet bench: cnn 1x28x28 c4-8 fc16-10, norms batch,instance") && Contains("GEMM floor"));
    CHECK_THAT(r.out, Contains("\nbatch        16") && Contains("\ninstance     16"));
    const RunResult bad = run_normnet({"bench", "--model", "cnn", "--norms", "rms"}, dir.work());
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Contains("--norms") && Contains("'rms'"));
}

TEST_CASE("cnn: precise statistics are the mean and unbiased variance of each BatchNorm layer's inputs", "[cnn][norms]") {
    auto data = std::make_shared<normnet::Dataset>();
    data->images = {.count = 3, .rows = 1, .cols = 2, .pixels = {0, 255, 51, 102, 255, 0}};
    data->labels = {0, 1, 2};
    normnet::Sequential model{normnet::BatchNorm1d(2)};
    cli::SavedBuffers saved(model);
    cli::recompute_population_statistics(model, cli::Examples(data));
    const auto buffers = model.named_buffers();
    const float* mean = buffers[0].second.data();
    const float* var = buffers[1].second.data();
    REQUIRE(buffers[0].first == "0.running_mean");
    CHECK(mean[0] == Approx((0 + 0.2 + 1) / 3.0));
    CHECK(mean[1] == Approx((1 + 0.4 + 0) / 3.0));
    const double m0 = (0 + 0.2 + 1) / 3.0;
    CHECK(var[0] == Approx(((0 - m0) * (0 - m0) + (0.2 - m0) * (0.2 - m0) + (1 - m0) * (1 - m0)) / 2));
    saved.restore();
    CHECK(model.named_buffers()[0].second.data()[0] == 0.0f);
    CHECK(model.named_buffers()[1].second.data()[0] == 1.0f);
}

TEST_CASE("cnn: the findings are computed from the grid", "[cnn][compare]") {
    // A grid shaped like the paper's: BatchNorm rises at small batches, GroupNorm is flat.
    cli::ErrorGrid g{{"batch", "group", "layer"}, {2, 32}, {}, 1};
    g.error = {{{0.30, 0, 1}, {0.20, 0, 1}}, {{0.21, 0, 1}, {0.21, 0, 1}}, {{0.23, 0, 1}, {0.22, 0, 1}}};
    cli::BatchNormErrors bn{{2, 32}, {{0.30, 0, 1}, {0.20, 0, 1}}, {{0.25, 0, 1}, {0.20, 0, 1}}, {{0.28, 0, 1}, {0.19, 0, 1}}, 1};
    const std::string md = cli::findings_md(g, bn, "a test grid");
    CHECK_THAT(md, Contains("the error rises as the batch shrinks, from 20.00 % at batch 32 to 30.00 % at batch 2 (+10.00 points"));
    CHECK_THAT(md, Contains("**GroupNorm**: flat: its error spans 0.00 points"));
    CHECK_THAT(md, Contains("at most GroupNorm's down to batch 32; below it GroupNorm's is lower"));
    CHECK_THAT(md, Contains("**LayerNorm** (GroupNorm with one group): 22.00 % at batch 32, 2.00 points above BatchNorm, 1.00 points above GroupNorm"));
    CHECK_THAT(md, Contains("recomputing the statistics recovers 5.00 (50 %)") && Contains("part of the loss is the train/eval mismatch"));
    CHECK_THAT(md, !Contains("**Every normalisation**"));
    // The opposite: every norm rises alike, BatchNorm no more than GroupNorm.
    g.error = {{{0.25, 0, 1}, {0.20, 0, 1}}, {{0.26, 0, 1}, {0.21, 0, 1}}, {{0.27, 0, 1}, {0.22, 0, 1}}};
    const std::string shared = cli::findings_md(g, {}, "a test grid");
    CHECK_THAT(shared, Contains("**GroupNorm**: not flat") && Contains("**Every normalisation** loses accuracy") &&
                           Contains("BatchNorm's own excess over GroupNorm's rise is +0.00 points"));
}

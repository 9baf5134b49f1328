// The sequence models from the command line (issue 13 section 2) on tiny synthetic data: `train
// --model vit|lstm` writes the architecture that `eval` rebuilds, with every normalisation the
// model takes and the ViT's --norm-placement; bad options and forged metadata are one-line
// errors; `compare --model vit --norm-placement pre,post` makes placement an axis of the grid
// and the report says what the runs show against Xiong et al., `compare --model lstm` against
// Ba et al.; `bench` prints the GEMM floor of their products; and the registry rows themselves.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "models.hpp"
#include "sequence_findings.hpp"
#include "normnet/normnet.hpp"

using namespace normnet::test;
using Catch::Contains;
using Catch::StartsWith;
namespace cli = normnet::cli;

namespace {

// A ViT of one block of width 16 (2 heads) and an LSTM of 16 units: well under a second a run.
const std::vector<std::string> kTinyVit{"--model", "vit", "--d-model", "16", "--layers", "1", "--heads", "2",
                                        "--dim-feedforward", "16", "--threads", "1"};
const std::vector<std::string> kTinyLstm{"--model", "lstm", "--hidden-size", "16", "--threads", "1"};

std::vector<std::string> train_args(const std::vector<std::string>& model, const std::string& data, const std::string& out) {
    return with({"train", "--data", data, "--epochs", "1", "--batch-size", "16", "--quiet", "--out", out}, model);
}

double parameter_count(normnet::Module& m) {
    double n = 0;
    for (const auto& p : m.parameters()) n += static_cast<double>(p.numel());
    return n;
}

// Option errors are usage errors (status 2).
void require_usage_error(const TempDir& dir, const std::vector<std::string>& args, const std::vector<std::string>& mentions) {
    require_failure(dir, args, 2, mentions);
}

}  // namespace

TEST_CASE("seq-cli: the vit and lstm rows describe, count and build issue 13's models", "[seq-cli]") {
    const cli::ModelSpec vit = cli::ModelSpec::defaults("vit");
    CHECK(vit.to_json() == R"({"type":"vit","inputs":784,"image":[1,28,28],"patch":7,"d_model":64,"layers":4,"heads":4,)"
                           R"("dim_feedforward":128,"norm_placement":"pre","classes":10,"norm":"layer"})");
    CHECK(vit.str() == "vit 28x28 patch 7 (17 tokens) d64 x4 blocks 4 heads ff128 pre-LN layer");
    CHECK(normnet::norm_choices(vit.kind().site, ",") == "layer,batch,rms,none");
    const cli::ModelSpec lstm = cli::ModelSpec::defaults("lstm");
    CHECK(lstm.str() == "lstm 28 steps x 28 pixels, hidden 128 x1 layers layer");
    CHECK(normnet::norm_choices(lstm.kind().site, ",") == "layer,none");
    // Without normalisation every parameter is one the row counts.
    for (cli::ModelSpec spec : {vit, lstm}) {
        spec.norm = "none";
        INFO(spec.str());
        CHECK(parameter_count(*cli::build_model(spec)) == spec.parameters());
        CHECK(cli::ModelSpec::from_json(spec.to_json(), "test") == spec);
    }
    cli::ModelSpec post = vit;
    post.sizes["norm_placement"] = {2};
    CHECK(post.str() == "vit 28x28 patch 7 (17 tokens) d64 x4 blocks 4 heads ff128 post-LN layer");
    CHECK(cli::ModelSpec::from_json(post.to_json(), "test") == post);
    // PyTorch's and torchvision's names.
    const auto keys = cli::build_model(vit)->state_dict();
    const auto has = [&](const normnet::NamedTensors& named, const std::string& name) {
        for (const auto& [n, t] : named) {
            if (n == name) return true;
        }
        return false;
    };
    CHECK(has(keys, "conv_proj.weight"));
    CHECK(has(keys, "encoder.layers.3.self_attn.in_proj_weight"));
    CHECK(has(keys, "encoder.norm.weight"));
    CHECK(!has(cli::build_model(post)->state_dict(), "encoder.norm.weight"));  // post-LN has no final norm
    CHECK(has(cli::build_model(lstm)->state_dict(), "rnn.ln_c_l0.weight"));
    // The GEMM floor: the patch projection, 5 products per block (in_proj, attention, out_proj,
    // linear1, linear2), the head; the LSTM's input and hidden products and the head.
    CHECK(vit.kind().gemm_products(vit, 32).size() == 1 + 5 * 4 + 1);
    const auto products = lstm.kind().gemm_products(lstm, 32);
    REQUIRE(products.size() == 3);
    CHECK(products[1].forward.size() == 28);  // h_{t-1} @ W_hh^T at each of the 28 steps
}

TEST_CASE("seq-cli: train --model vit|lstm with each normalisation, and eval rebuilds the model from the checkpoint",
          "[seq-cli][cli]") {
    TempDir dir;
    const fs::path data = dir.path / "data";
    write_synthetic_mnist(data, 48, 20, true);
    struct Case {
        std::vector<std::string> model;
        std::string norm, placement, first_key, shows;
    };
    const std::vector<Case> cases{
        {kTinyVit, "layer", "pre", "encoder.norm.weight", "vit 28x28 patch 7 (17 tokens) d16 x1 blocks 2 heads ff16 pre-LN layer"},
        {kTinyVit, "rms", "post", "encoder.layers.0.norm2.weight", "post-LN rms"},
        {kTinyVit, "batch", "pre", "encoder.layers.0.norm1.running_mean", "pre-LN batch"},
        {kTinyVit, "none", "post", "head.weight", "post-LN none"},
        {kTinyLstm, "layer", "", "rnn.ln_hh_l0.weight", "lstm 28 steps x 28 pixels, hidden 16 x1 layers layer"},
        {kTinyLstm, "none", "", "rnn.bias_hh_l0", "hidden 16 x1 layers none"},
    };
    for (const Case& c : cases) {
        INFO(c.shows);
        const std::string out = dir / ("run_" + c.norm + c.placement + c.model[1]);
        std::vector<std::string> args = with(train_args(c.model, data.string(), out), {"--norm", c.norm});
        if (!c.placement.empty()) args = with(args, {"--norm-placement", c.placement});
        const RunResult r = run_normnet(args, dir.work());
        INFO(r.err);
        REQUIRE(r.status == 0);
        const auto model = normnet::load_safetensors(out + "/model.safetensors");
        const auto arch = nlohmann::json::parse(model.metadata.at("normnet.architecture"));
        CHECK(arch.at("type") == c.model[1]);
        CHECK(arch.at("norm") == c.norm);
        if (!c.placement.empty()) CHECK(arch.at("norm_placement") == c.placement);
        bool found = false;
        for (const auto& [name, t] : model.tensors) found = found || name == c.first_key;
        CHECK(found);
        const RunResult e = run_normnet({"eval", "--checkpoint", out, "--data", data.string(), "--threads", "1"}, dir.work());
        INFO(e.err);
        REQUIRE(e.status == 0);
        CHECK_THAT(e.out, Contains(c.shows) && Contains("20 images"));
    }
    // The recipes: MNIST, AdamW; the LSTM clips its gradients.
    const auto config = nlohmann::json::parse(read_file(dir / "run_nonelstm/config.json"));
    CHECK(config.at("dataset") == "mnist");
    CHECK(config.at("clip") == 1.0);
}

TEST_CASE("seq-cli: bad vit and lstm options and forged metadata are one-line errors", "[seq-cli][cli]") {
    TempDir dir;
    const fs::path data = dir.path / "data";
    write_synthetic_mnist(data, 32, 16, true);
    const std::string d = data.string();
    require_usage_error(dir, with(train_args(kTinyVit, d, dir / "x"), {"--patch", "5"}), {"--patch 5", "divide", "28"});
    require_usage_error(dir, train_args({"--model", "vit", "--heads", "3", "--d-model", "16"}, d, dir / "x"),
                        {"--heads 3", "--d-model 16"});
    require_usage_error(dir, with(train_args(kTinyVit, d, dir / "x"), {"--norm", "group"}),
                        {"--norm group", "--model vit", "layer, batch, rms or none"});
    require_usage_error(dir, with(train_args(kTinyVit, d, dir / "x"), {"--norm-placement", "middle"}),
                        {"--norm-placement", "'middle'", "pre or post"});
    require_usage_error(dir, with(train_args(kTinyLstm, d, dir / "x"), {"--norm-placement", "post"}),
                        {"--norm-placement", "applies to --model vit", "not lstm"});
    require_usage_error(dir, with(train_args(kTinyLstm, d, dir / "x"), {"--norm", "rms"}), {"--norm rms", "--model lstm", "layer or none"});
    require_usage_error(dir, with(train_args(kTinyLstm, d, dir / "x"), {"--patch", "7"}), {"--patch", "applies to --model vit"});
    require_usage_error(dir, with(with({"compare", "--data", d, "--out", dir / "c", "--epochs", "1"}, kTinyVit),
                                  {"--norm-placement", "pre,pre"}),
                        {"--norm-placement", "'pre' is listed twice"});

    // Forged architecture metadata: eval names the file and what is wrong.
    const std::string out = dir / "vit";
    REQUIRE(run_normnet(train_args(kTinyVit, d, out), dir.work()).status == 0);
    auto saved = normnet::load_safetensors(out + "/model.safetensors");
    const std::string original = saved.metadata.at("normnet.architecture");
    struct Forgery {
        std::string from, to, says;
    };
    for (const Forgery& f : std::vector<Forgery>{{R"("norm_placement":"pre")", R"("norm_placement":"sideways")", "'sideways'"},
                                                 {R"("norm_placement":"pre")", R"("norm_placement":1)", "not a string"},
                                                 {R"("patch":7)", R"("patch":6)", "--patch 6"}}) {
        INFO(f.to);
        std::string text = original;
        REQUIRE(text.find(f.from) != std::string::npos);
        text.replace(text.find(f.from), f.from.size(), f.to);
        saved.metadata["normnet.architecture"] = text;
        const std::string forged = dir / "forged.safetensors";
        normnet::save_safetensors(forged, saved.tensors, saved.metadata);
        const RunResult r = run_normnet({"eval", "--checkpoint", forged, "--data", d}, dir.work());
        CHECK(r.status == 1);
        CHECK_THAT(r.err, StartsWith("normnet: error: ") && Contains(forged) && Contains(f.says));
        CHECK(lines_of(r.err).size() == 1);
        fs::remove(forged);
    }
}

TEST_CASE("seq-cli: compare --model vit --norm-placement pre,post makes placement an axis of the grid", "[seq-cli][compare]") {
    TempDir dir;
    write_synthetic_mnist(dir.path / "data", 64, 32, true);
    const fs::path out = dir / "cmp";
    const RunResult r = run_normnet(with({"compare", "--data", (dir.path / "data").string(), "--norms", "layer,batch",
                                          "--norm-placement", "pre,post", "--batch-sizes", "16", "--epochs", "2",
                                          "--discrepancy-images", "32", "--out", out.string()},
                                         kTinyVit),
                                    dir.work());
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("layer,batch x --norm-placement pre,post") && Contains("| LayerNorm, post-LN |") &&
                          Contains("| BatchNorm, pre-LN |"));
    const std::string report = read_file(out / "report.md");
    CHECK_THAT(report, Contains("pre-LN/post-LN") && Contains("in every Transformer block"));
    CHECK_THAT(report, Contains("## What this run shows against the sequence-model anchors") &&
                           Contains("**Xiong et al. 2020**") && Contains("LayerNorm, batch 16, no warm-up (--warmup 0)") &&
                           Contains("BatchNorm, batch 16"));
    CHECK_THAT(report, !Contains("Ba et al."));
    // BatchNorm inside the blocks: no precise statistics (no layer-by-layer walk), said as n/a.
    CHECK_THAT(report, Contains("| n/a |") && !Contains("nan %"));
    const auto results = lines_of(read_file(out / "results.csv"));
    REQUIRE(results.size() == 5);
    CHECK(csv_cells(results[0]).back() == "norm_placement");
    CHECK(csv_cells(results[1]).front() == "layer");
    CHECK(csv_cells(results[1]).back() == "pre");
    CHECK(csv_cells(results[2]).back() == "post");
    CHECK_THAT(read_file(out / "test_acc_curves.svg"), Contains("LayerNorm, post-LN, batch 16"));
    const auto curves = lines_of(read_file(out / "curves.csv"));
    CHECK(curves.size() == 1 + 4 * 2);
    CHECK(csv_cells(curves.back()).back() == "post");
}

TEST_CASE("seq-cli: compare --model lstm reports against Ba et al., bench --model vit|lstm prints the GEMM floor",
          "[seq-cli][compare]") {
    TempDir dir;
    const std::string data = (dir.path / "data").string();
    write_synthetic_mnist(dir.path / "data", 64, 32, true);
    const fs::path out = dir / "cmp";
    const RunResult r = run_normnet(with({"compare", "--data", data, "--norms", "layer,none", "--batch-sizes", "16",
                                          "--epochs", "2", "--warmup", "3", "--discrepancy-images", "32", "--out", out.string()},
                                         kTinyLstm),
                                    dir.work());
    INFO(r.err);
    REQUIRE(r.status == 0);
    const std::string report = read_file(out / "report.md");
    CHECK_THAT(report, Contains("**Ba et al. 2016** (LayerNorm LSTMs converge faster than plain ones), batch 16: after epoch 1 "
                                "the LayerNorm LSTM has") &&
                           Contains("inside the LSTM cell") && !Contains("Xiong"));
    for (const auto& model : {kTinyVit, kTinyLstm}) {
        const RunResult b = run_normnet(with({"bench", "--data", data, "--batch-sizes", "16", "--warmup-epochs", "0", "--epochs", "1"},
                                             model),
                                        dir.work());
        INFO(b.err);
        REQUIRE(b.status == 0);
        CHECK_THAT(b.out, Contains("GEMM floor") && Contains("layer ") && Contains("none "));
    }
}

TEST_CASE("seq-cli: the anchors' sentences follow the curves", "[seq-cli][compare]") {
    const auto curve = [](std::vector<double> acc) {
        std::vector<normnet::cli::EpochMetrics> c;
        for (size_t e = 0; e < acc.size(); ++e) c.push_back({.epoch = static_cast<int64_t>(e + 1), .train_loss = 1.0 - acc[e], .test_acc = acc[e]});
        return c;
    };
    const cli::SequenceSetting lstm{.recurrent = true, .warmup = 0, .train_images = 1000, .what = "x"};
    CHECK_THAT(cli::sequence_findings_md({{"layer", "", 32, curve({0.9, 0.95})}, {"none", "", 32, curve({0.8, 0.93})}}, lstm),
               Contains("Agrees: the LayerNorm LSTM is 10.00 points ahead after the first epoch") &&
                   Contains("reaches the plain LSTM's final accuracy at epoch 2"));
    CHECK_THAT(cli::sequence_findings_md({{"layer", "", 32, curve({0.8, 0.95})}, {"none", "", 32, curve({0.9, 0.93})}}, lstm),
               Contains("Does not agree: the plain LSTM is 10.00 points ahead"));
    CHECK_THAT(cli::sequence_findings_md({{"layer", "", 32, curve({0.901})}, {"none", "", 32, curve({0.9})}}, lstm),
               Contains("Cannot tell"));
    const cli::SequenceSetting vit{.recurrent = false, .warmup = 100, .train_images = 3200, .what = "x"};
    const std::string md =
        cli::sequence_findings_md({{"layer", "pre", 32, curve({0.9})}, {"layer", "post", 32, curve({0.5})},
                                   {"none", "pre", 32, curve({0.5})}, {"none", "post", 32, curve({0.5})}},
                                  vit);
    CHECK_THAT(md, Contains("--warmup 100 steps (1.00 epochs)") && Contains("Pre-LN is ahead even with warm-up") &&
                       Contains("--warmup 0 tests the anchor itself") && !Contains("no norm"));
    CHECK(cli::sequence_findings_md({{"layer", "pre", 32, curve({0.9})}}, vit).empty());
}

// `normnet export` end to end: every model the command line trains, under every normalisation it
// offers, trained briefly by `normnet train` or `normnet lm train` (small versions of the
// models, so that the suite stays fast), exported by `normnet export`, checked by python3-onnx's
// full checker, and run on the whole test split (MNIST, Fashion-MNIST, the fortunes' held-out
// records) in ONNX Runtime and OpenCV's dnn module against normnet's own outputs. Each case
// prints its row of the table model x norm: checker, largest difference, arg-max agreement and
// accuracy in ONNX Runtime, and OpenCV's result or the reason it cannot run the model.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <tuple>

#include "cli_helpers.hpp"
#include "export.hpp"
#include "models.hpp"
#include "norms.hpp"
#include "onnx_helpers.hpp"
#include "run_config.hpp"

using namespace normnet;
using namespace normnet::test;
namespace oc = normnet::test::onnx_check;

namespace {

constexpr double kTolerance = 1e-4;  // |a - e| <= kTolerance * (1 + |e|)
constexpr const char* kFashionDir = "/usr/share/datasets/fashion-mnist";

// One trained and exported model, and what its test split gave in normnet.
struct Exported {
    std::string label;  // "vit layer post"
    std::string run;    // the run folder
    std::string file;
    std::string export_line;  // what `normnet export` printed
    double export_seconds = 0;
    Tensor expected;  // normnet's outputs on the test split
};

// The test split as the graph takes it: a raw file of the inputs, their shape, the labels.
struct Split {
    std::string file;
    Dtype dtype = kFloat32;
    Shape shape;
    std::vector<int64_t> labels;
};

// normnet's outputs for a whole split, 1000 samples at a time.
Tensor outputs_of(Module& model, const Tensor& inputs) {
    NoGradGuard no_grad;
    model.eval();
    std::vector<Tensor> parts;
    for (int64_t first = 0; first < inputs.size(0); first += 1000) {
        parts.push_back(model.forward(inputs.narrow(0, first, std::min<int64_t>(1000, inputs.size(0) - first))));
    }
    return cat(parts, 0);
}

// Trains with `train_args` into dir/<label>, exports, and runs normnet on `inputs` (rows as the
// model takes them).
Exported train_and_export(const TempDir& dir, const std::string& label, const std::vector<std::string>& train_args,
                          const Tensor& inputs) {
    std::string name = label;
    for (char& c : name) c = c == ' ' ? '_' : c;
    const std::string run = dir / name;
    const RunResult trained = run_normnet(with(train_args, {"--out", run, "--quiet"}), dir.work());
    INFO(label << ": " << trained.err);
    REQUIRE(trained.status == 0);
    Exported e{label, run, run + ".onnx", "", 0, {}};
    const auto start = std::chrono::steady_clock::now();
    const RunResult exported = run_normnet({"export", "--checkpoint", run, "--out", e.file}, dir.work());
    e.export_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(exported.err);
    REQUIRE(exported.status == 0);
    // "opset 17, 7 nodes, 10 stored tensors, 0.1 MB, 0.02 s" of its first line
    const std::string first = exported.out.substr(0, exported.out.find('\n'));
    e.export_line = first.substr(first.rfind(".onnx: ") + 7);
    REQUIRE(fs::exists(e.file));
    e.expected = outputs_of(*cli::exportable_model(run).model, inputs);
    return e;
}

// OpenCV's message without its source locations ("OpenCV(4.6.0) ./modules/dnn/...cpp:1040: error:
// (-2:Unspecified error)"), on one line of a Markdown table.
std::string opencv_reason(std::string message) {
    static const std::regex location(R"(OpenCV\([0-9.]+\) \S+:[0-9]+: error: \([^)]*\) ?)");
    message = std::regex_replace(message, location, "");
    for (char& c : message) c = c == '|' ? '/' : c;
    while (!message.empty() && (message.back() == ' ' || message.back() == '>')) message.pop_back();
    return message;
}

// Checks every export and runs it in both runtimes; prints one row per model; requires the
// checker to pass and ONNX Runtime to match normnet (values and arg-max) on the whole split.
void check_in_runtimes(const std::vector<Exported>& models, const Split& split, const fs::path& work) {
    std::vector<std::string> files;
    for (const auto& m : models) files.push_back(m.file);
    const std::string no_checker = oc::checker_missing(), no_ort = oc::onnxruntime_missing(), no_cv = oc::opencv_missing();
    if (no_checker.empty()) oc::check_with_onnx(files);
    // A Markdown table (docs/generate.py's onnx-models job collects the rows of every case).
    std::printf("| Model, norm | Checker | ONNX Runtime: max rel. difference | Same arg-max | Accuracy normnet / ONNX Runtime "
                "| OpenCV 4.6 dnn | Export |\n|---|---|---|---|---|---|---|\n");
    for (const auto& m : models) {
        // One model at a time, so that the language models' outputs never pile up on disk.
        const oc::Job job{m.file, split.file, split.dtype, split.shape, 1000, m.expected.shape()};
        std::string ort = "skipped: " + no_ort + " | | ", cv = "skipped: " + no_cv;
        if (no_ort.empty()) {
            const oc::RuntimeResult r = oc::run_model(oc::Runtime::onnxruntime, job);
            INFO(m.label << " in ONNX Runtime: " << r.error);
            REQUIRE(r.ok);
            const oc::Agreement a = oc::compare(r.output, m.expected, kTolerance, split.labels);
            char text[160];
            std::snprintf(text, sizeof text, "%.1e | %lld/%lld | %.2f%% / %.2f%%", a.max_rel,
                          static_cast<long long>(a.same_argmax), static_cast<long long>(a.rows),
                          100.0 * a.correct_expected / a.rows, 100.0 * a.correct_got / a.rows);
            ort = text;
            INFO(m.label << " in ONNX Runtime: " << ort << " (" << a.near_ties
                         << " differing rows are near ties: normnet's two largest within the tolerance)");
            CHECK(a.max_rel <= kTolerance);
            // A row whose two largest logits are within the tolerance may pick either: a tie, not
            // a difference (clang's sums against GCC's flipped one of 131,264 LM positions).
            CHECK(a.same_argmax + a.near_ties == a.rows);
        }
        if (no_cv.empty()) {
            oc::RuntimeResult r = oc::run_model(oc::Runtime::opencv, job);
            std::string opset;
            // OpenCV 4.6 has no LayerNormalization (opset 17): the primitives of --opset 16 instead.
            if (!r.ok && r.error.find("LayerNormalization") != std::string::npos) {
                const std::string file16 = m.run + ".opset16.onnx";
                REQUIRE(run_normnet({"export", "--checkpoint", m.run, "--out", file16, "--opset", "16"}, work).status == 0);
                r = oc::run_model(oc::Runtime::opencv, {file16, split.file, split.dtype, split.shape, 1000, m.expected.shape()});
                opset = "no LayerNormalization; --opset 16 ";
            }
            // OpenCV fixes some shapes when it loads a model (a batch of one): then one sample at a
            // time, on the first 1000.
            Tensor expected = m.expected;
            std::vector<int64_t> labels = split.labels;
            if (!r.ok && opset.empty()) {
                Shape first = split.shape, out = m.expected.shape();
                first[0] = out[0] = 1000;
                r = oc::run_model(oc::Runtime::opencv, {m.file, split.file, split.dtype, first, 1, out});
                opset = "one sample at a time";
                expected = m.expected.narrow(0, 0, 1000);
                labels.resize(static_cast<size_t>(expected.numel() / expected.size(-1)));
            }
            if (r.ok) {
                const oc::Agreement a = oc::compare(r.output, expected, kTolerance, labels);
                // What OpenCV runs, it must compute as normnet does.
                INFO(m.label << " in OpenCV, " << opset);
                CHECK(a.max_rel <= kTolerance);
                char text[160];
                std::snprintf(text, sizeof text, "%.1e, arg-max %lld/%lld", a.max_rel, static_cast<long long>(a.same_argmax),
                              static_cast<long long>(a.rows));
                cv = opset.empty() ? std::string("runs: ") + text
                     : opset == "one sample at a time" ? std::string("runs one sample at a time: ") + text
                     : opset + "runs: " + text;
            } else {
                cv = opset.empty() ? "fails: " + opencv_reason(r.error)
                     : opset == "one sample at a time" ? "fails, also one sample at a time: " + opencv_reason(r.error)
                     : opset + "fails: " + opencv_reason(r.error);
            }
        }
        std::printf("| %s | %s | %s | %s | %s (the command: %.2f s) |\n", m.label.c_str(), no_checker.empty() ? "ok" : "skipped",
                    ort.c_str(), cv.c_str(), m.export_line.c_str(), m.export_seconds);
    }
    std::fflush(stdout);
    if (!no_checker.empty() || !no_ort.empty()) NORMNET_SKIP((no_checker.empty() ? no_ort : no_checker));
}

// The test split of an MNIST-layout dataset as the graph of `kind` takes it.
Split image_split(const std::string& data_dir, const cli::ModelSpec& spec, const std::string& file, Tensor& rows) {
    const Dataset test = load_mnist_split(data_dir, "test");
    rows = empty({test.size(), test.features()});
    for (int64_t i = 0; i < rows.numel(); ++i) rows.data()[i] = static_cast<float>(test.images.pixels[static_cast<size_t>(i)]) / 255.0f;
    oc::write_raw(file, rows);
    Split s{file, kFloat32, Shape{test.size()}, {}};
    const auto& kind = spec.kind();
    for (int64_t d : kind.onnx_input ? kind.onnx_input(spec) : std::vector<int64_t>{spec.inputs}) s.shape.push_back(d);
    for (uint8_t l : test.labels) s.labels.push_back(l);
    return s;
}

// Every normalisation the registry offers the model (and each placement, for the ViT).
void check_image_model(const std::string& type, const std::vector<std::string>& sizes, const std::string& dataset,
                       const std::vector<std::string>& placements = {""}) {
    const std::string data_dir = dataset == "mnist" ? mnist_dir() : kFashionDir;
    if (dataset == "mnist") NORMNET_REQUIRE_MNIST();
    if (!fs::exists(fs::path(data_dir) / "t10k-images-idx3-ubyte.gz") && !fs::exists(fs::path(data_dir) / "t10k-images-idx3-ubyte")) {
        NORMNET_SKIP(dataset << " not found in " << data_dir);
    }
    TempDir dir;
    Tensor rows;
    const cli::ModelSpec spec = cli::ModelSpec::defaults(type);
    const Split split = image_split(data_dir, spec, dir / "test.f32", rows);
    std::vector<Exported> models;
    for (const std::string& norm : cli::norm_names(cli::model_kind(type).site)) {
        for (const std::string& placement : placements) {
            std::vector<std::string> args{"train",  "--model",  type,     "--norm",     norm, "--dataset",    dataset,
                                          "--data", data_dir,   "--epochs", "3",          "--limit", "4000", "--batch-size",
                                          "64",     "--threads", "1"};
            args.insert(args.end(), sizes.begin(), sizes.end());
            if (!placement.empty()) args.insert(args.end(), {"--norm-placement", placement});
            models.push_back(train_and_export(dir, type + " " + norm + (placement.empty() ? "" : " " + placement), args, rows));
        }
    }
    check_in_runtimes(models, split, dir.work());
}

}  // namespace

TEST_CASE("normnet export: the MLP under every normalisation runs in ONNX Runtime as in normnet", "[onnx][cli][runtime]") {
    check_image_model("mlp", {"--hidden", "32,16"}, "mnist");
}

TEST_CASE("normnet export: the CNN under every normalisation runs in ONNX Runtime as in normnet", "[onnx][cli][runtime]") {
    check_image_model("cnn", {"--channels", "4,8", "--fc", "16", "--groups", "2"}, "fashion-mnist");
}

TEST_CASE("normnet export: the ViT under every normalisation and placement runs in ONNX Runtime as in normnet",
          "[onnx][cli][runtime]") {
    check_image_model("vit", {"--d-model", "16", "--layers", "2", "--heads", "2", "--dim-feedforward", "32"}, "mnist",
                      {"pre", "post"});
}

TEST_CASE("normnet export: the LSTM and the LayerNorm LSTM run in ONNX Runtime as in normnet", "[onnx][cli][runtime]") {
    // --on-nan skip: the fused LayerNorm LSTM's backward gives NaN gradients for some batches (an
    // all-black image is one); a skipped step changes nothing here.
    check_image_model("lstm", {"--hidden-size", "16", "--layers", "2", "--on-nan", "skip"}, "mnist");
}

TEST_CASE("normnet export: the character LM under every normalisation and placement runs in ONNX Runtime as in normnet",
          "[onnx][cli][runtime]") {
    const std::string text = cli::kDefaultCorpus;
    if (!fs::exists(text)) NORMNET_SKIP("the fortunes corpus is not installed in " << text << " (apt-get install fortunes)");
    TempDir dir;
    // The held-out records as windows of the context, each position's label the next character.
    constexpr int64_t kContext = 32;
    const TextCorpus corpus = load_text_corpus(text);
    const int64_t windows = (corpus.val.size() - 1) / kContext;
    Tensor tokens = corpus.val.slice(0, windows * kContext).reshape({windows, kContext});
    Split split{dir / "val.i64", kInt64, tokens.shape(), corpus.val.slice(1, windows * kContext).to_vector<int64_t>()};
    oc::write_raw(split.file, tokens);
    std::vector<Exported> models;
    for (const std::string& norm : cli::norm_names(normnet::NormSite::features)) {
        for (const std::string placement : {"pre", "post"}) {
            const std::vector<std::string> args{"lm",       "train",    "--text",  text,   "--steps",   "30", "--warmup", "5",
                                                "--batch-size", "16",   "--context", std::to_string(kContext),
                                                "--d-model", "32",      "--layers", "2",   "--heads",   "2",
                                                "--norm",   norm,       "--norm-placement", placement, "--eval-every", "30",
                                                "--threads", "1"};
            models.push_back(train_and_export(dir, "lm " + norm + " " + placement, args, tokens));
        }
    }
    check_in_runtimes(models, split, dir.work());
}

TEST_CASE("normnet export: a table model carries its schema, and ONNX Runtime on rows it prepares gives normnet's outputs",
          "[onnx][cli][runtime][table]") {
    TempDir dir;
    // A classification with a text feature (one-hot) and a regression in units far from 1.
    std::string classes = "size,colour,kind\n", values = "x1,x2,y\n";
    for (int i = 0; i < 300; ++i) {
        const double x = (i % 37) / 9.0 - 2, z = (i % 11) / 5.0 - 1;
        classes += std::to_string(x) + "," + (i % 3 == 0 ? "red" : "blue") + "," + (x + (i % 3 == 0) > 0 ? "big" : "small") + "\n";
        values += std::to_string(x) + "," + std::to_string(z) + "," + std::to_string(100 * (3 * x - 2 * z + 10)) + "\n";
    }
    for (const auto& [name, csv, output] : {std::tuple{"classes", classes, "'logits' float32 [N, 2]"},
                                            std::tuple{"values", values, "'value' float32 [N, 1]"}}) {
        const std::string table = dir / (std::string(name) + ".csv"), run = dir / name, file = run + ".onnx";
        std::ofstream(table) << csv;
        const RunResult trained = run_normnet({"train", "--data", table, "--epochs", "2", "--hidden", "16", "--threads", "1",
                                               "--quiet", "--out", run}, dir.work());
        INFO(name << ": " << trained.err);
        REQUIRE(trained.status == 0);
        const RunResult exported = run_normnet({"export", "--checkpoint", run, "--out", file}, dir.work());
        INFO(exported.err);
        REQUIRE(exported.status == 0);
        CHECK_THAT(exported.out, Catch::Contains("input 'features' float32 [N, ") && Catch::Contains(output));
        const std::string schema_json = load_safetensors(run + "/model.safetensors").metadata.at("normnet.table");
        const data::TableSchema schema = data::TableSchema::from_json(schema_json, run);
        const Tensor rows = data::encode_table(schema, data::read_csv(table)).inputs;
        if (const std::string missing = oc::checker_missing(); !missing.empty()) NORMNET_SKIP(missing);
        oc::check_with_onnx({file});
        const oc::CommandResult meta = oc::run_command(
            oc::quoted(NORMNET_PYTHON3) + " -c 'import onnx, json, sys; m = onnx.load(sys.argv[1]); "
            "print(json.dumps({p.key: p.value for p in m.metadata_props}))' " + oc::quoted(file));
        REQUIRE(meta.status == 0);
        CHECK(nlohmann::json::parse(meta.out).at("normnet.table") == schema_json);
        if (const std::string missing = oc::onnxruntime_missing(); !missing.empty()) NORMNET_SKIP(missing);
        oc::write_raw(dir / "rows.f32", rows);
        const Shape out_shape{rows.size(0), schema.num_outputs()};
        const oc::RuntimeResult ort = oc::run_model(oc::Runtime::onnxruntime,
                                                    {file, dir / "rows.f32", kFloat32, rows.shape(), 64, out_shape});
        INFO(ort.error);
        REQUIRE(ort.ok);
        const oc::Agreement agree = oc::compare(ort.output, outputs_of(*cli::exportable_model(run).model, rows), kTolerance);
        CHECK(agree.max_rel <= kTolerance);
    }
}

TEST_CASE("normnet export: bad calls fail with one line and write nothing", "[onnx][cli]") {
    TempDir dir;
    write_synthetic_mnist(dir.path / "data", 64, 16);
    const RunResult trained = run_normnet({"train", "--data", (dir.path / "data").string(), "--epochs", "1", "--hidden", "8",
                                           "--out", dir / "run", "--quiet"},
                                          dir.work());
    REQUIRE(trained.status == 0);
    require_failure(dir, {"export", "--checkpoint", dir / "missing"}, 1, {"missing"});
    require_failure(dir, {"export", "--checkpoint", dir / "run", "--opset", "12"}, 2, {"--opset 12", "13 to 17"});
    require_failure(dir, {"export", "--checkpoint", dir / "run", "--out", dir / "no/such/model.onnx"}, 1, {"no/such/model.onnx"});
    save_safetensors(dir / "other.safetensors", {{"w", zeros({2})}});
    require_failure(dir, {"export", "--checkpoint", dir / "other.safetensors"}, 1, {"not a normnet checkpoint"});
    // Default: model.onnx beside the checkpoint.
    const RunResult r = run_normnet({"export", "--checkpoint", dir / "run"}, dir.work());
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(fs::exists(dir / "run/model.onnx"));
    CHECK_THAT(r.out, Catch::Contains("input 'image' float32 [N, 784], output 'logits' float32 [N, 10]"));
}

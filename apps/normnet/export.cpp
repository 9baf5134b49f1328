// `normnet export`: writes a checkpoint's model as an ONNX file (normnet/onnx.hpp) that ONNX
// Runtime, OpenCV's dnn module and other runtimes load. The graph takes what the data gives the
// model: pixels scaled to [0, 1] as rows [N, 784] (MLP), images [N, C, H, W] (CNN, ViT) or rows of
// pixels [N, H, W] (LSTM), or character ids [N, context] (the language model); the batch size
// is free. Class names, the pixel scaling and the vocabulary go into the file's metadata.
#include "export.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "checkpoint_metadata.hpp"
#include "commands.hpp"
#include "models.hpp"
#include "run_folder.hpp"
#include "task.hpp"
#include "trainer.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

std::string dims_text(const onnx::Ints& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + (shape[i] == onnx::kBatch ? std::string("N") : std::to_string(shape[i]));
    return s + "]";
}

// A table's model takes rows prepared by its schema, which the file carries in its metadata, and
// (a regression) gives the target standardised.
void table_model(ExportableModel& e, const data::TableSchema& schema, const ModelSpec& spec) {
    onnx::ExportOptions& o = e.options;
    const bool regression = schema.task == data::TableTask::regression;
    o.input_name = "features";
    o.input_doc = "float32 [N, " + std::to_string(spec.inputs) + "]: rows prepared by the schema in the metadata "
                  "'normnet.table', features in its order: a numeric one as (x - mean) / std, a text one one-hot over its categories";
    if (regression) {
        o.output_name = "value";
        o.output_doc = "float32 [N, 1]: " + schema.target + " standardised; its value is output * target_std + target_mean "
                       "(metadata 'normnet.table')";
    } else {
        o.output_doc = "float32 [N, " + std::to_string(spec.classes) + "]: class scores of " + schema.target +
                       " (logits; softmax gives probabilities), classes in the metadata 'classes'";
    }
    o.doc = "normnet " + spec.kind().name + " trained on a table (target " + schema.target + "): " + spec.str();
    o.metadata = {{"normnet.table", schema.to_json()},
                  {"preprocessing", "the schema in 'normnet.table'"},
                  {"normnet.architecture", spec.to_json()}};
    if (!regression) o.metadata.emplace_back("classes", nlohmann::json(schema.classes).dump());
}

ExportableModel image_model(const SafetensorsData& checkpoint) {
    auto [spec, config] = read_checkpoint_config(checkpoint);
    check_file_fits(spec, checkpoint);
    ExportableModel e;
    e.model = build_model(spec);
    load(*e.model, checkpoint);
    e.example = zeros({1, spec.inputs});
    e.description = spec.str();
    onnx::ExportOptions& o = e.options;
    const ModelKind& kind = spec.kind();
    if (kind.onnx_input != nullptr) o.input_shape = kind.onnx_input(spec);
    const auto images = images_metadata_of(checkpoint);  // an image folder's class names
    std::vector<std::string> classes = images ? images->classes : dataset_class_names(config.dataset);
    for (auto c = static_cast<int64_t>(classes.size()); c < spec.classes; ++c) classes.push_back(std::to_string(c));
    classes.resize(static_cast<size_t>(spec.classes));
    o.input_name = "image";
    o.output_name = "logits";
    onnx::Ints graph_input = o.input_shape.empty() ? onnx::Ints{spec.inputs} : o.input_shape;
    graph_input.insert(graph_input.begin(), onnx::kBatch);
    o.input_doc = "float32 " + dims_text(graph_input) + ": " + config.dataset +
                  " images, each pixel's uint8 value / 255 (0 black, 1 white), rows top to bottom";
    o.output_doc = "float32 [N, " + std::to_string(spec.classes) +
                   "]: class scores (logits; softmax gives probabilities), classes in the metadata 'classes'";
    o.graph_name = spec.str();
    o.doc = "normnet " + spec.kind().name + " trained on " + config.dataset + ": " + spec.str();
    o.metadata = {{"classes", nlohmann::json(classes).dump()},
                  {"preprocessing", "pixel / 255"},
                  {"dataset", config.dataset},
                  {"normnet.architecture", spec.to_json()}};
    if (checkpoint.metadata.count(kTableMetadata) > 0) table_model(e, table_schema_of(checkpoint), spec);
    return e;
}

ExportableModel language_model(const std::string& path) {
    const ModelFile m = load_model_file(path);
    NORMNET_CHECK(m.spec.kind().task == kLanguageModel, path, ": not a checkpoint of normnet lm train");
    const std::vector<char32_t> vocab = parse_vocab(metadata_or_fail(m.file, "normnet.vocab"), path);
    NORMNET_CHECK(static_cast<int64_t>(vocab.size()) == m.spec.inputs, path, ": the vocabulary has ", vocab.size(),
                  " characters but the architecture says ", m.spec.inputs);
    const int64_t context = m.spec.scalar("context");
    ExportableModel e;
    e.model = m.model;
    e.example = zeros({1, context}, kInt64);
    e.description = m.spec.str();
    onnx::ExportOptions& o = e.options;
    o.input_name = "tokens";
    o.output_name = "logits";
    o.input_doc = "int64 [N, " + std::to_string(context) +
                  "]: character ids, positions in the metadata 'vocabulary'; position t sees tokens 0..t only, so a "
                  "shorter text may be padded on the right";
    o.output_doc = "float32 [N, " + std::to_string(context) + ", " + std::to_string(m.spec.inputs) +
                   "]: scores (logits) of the next character after each position";
    o.graph_name = m.spec.str();
    o.doc = "normnet character language model: " + m.spec.str();
    nlohmann::json vocabulary = nlohmann::json::array();
    TextCorpus one;
    for (char32_t ch : vocab) {
        one.vocab = {ch};
        vocabulary.push_back(one.decode({0}));
    }
    o.metadata = {{"vocabulary", vocabulary.dump()}, {"normnet.architecture", m.spec.to_json()}};
    return e;
}

struct ExportArgs {
    std::string checkpoint;
    std::string out;
    int64_t opset = onnx::kMaxOpset;
};

void run_export(const ExportArgs& args) {
    as_usage_error([&] {
        NORMNET_CHECK(args.opset >= onnx::kMinOpset && args.opset <= onnx::kMaxOpset, "--opset ", args.opset,
                      ": normnet writes opsets ", onnx::kMinOpset, " to ", onnx::kMaxOpset);
    });
    const std::string path = model_file_of(args.checkpoint);
    ExportableModel e = exportable_model(path);
    e.options.opset = args.opset;
    const std::string out = args.out.empty() ? (std::filesystem::path(path).parent_path() / "model.onnx").string() : args.out;
    const auto start = std::chrono::steady_clock::now();
    const onnx::ExportInfo info = onnx::export_model(*e.model, e.example, out, e.options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("exported %s (%s) to %s: opset %lld, %lld nodes, %lld stored tensors, %.1f MB, %.2f s\n", path.c_str(),
                e.description.c_str(), out.c_str(), static_cast<long long>(args.opset), static_cast<long long>(info.nodes),
                static_cast<long long>(info.initializers), static_cast<double>(info.bytes) / 1e6, seconds);
    std::printf("input '%s' %s %s, output '%s' float32 %s\n", e.options.input_name.c_str(),
                e.example.dtype() == kInt64 ? "int64" : "float32", dims_text(info.input_shape).c_str(),
                e.options.output_name.c_str(), dims_text(info.output_shape).c_str());
}

}  // namespace

ExportableModel exportable_model(const std::string& checkpoint) {
    const std::string path = model_file_of(checkpoint);
    const SafetensorsData file = load_safetensors(path);
    ExportableModel e = file.metadata.count("normnet.vocab") > 0 ? language_model(path) : image_model(file);
    e.model->eval();
    return e;
}

void add_export_command(CLI::App& app) {
    auto args = std::make_shared<ExportArgs>();
    CLI::App* cmd = app.add_subcommand("export", "Write a checkpoint's model as ONNX (ONNX Runtime, OpenCV, ...)");
    cmd->add_option("--checkpoint", args->checkpoint,
                    "A model.safetensors written by normnet train or normnet lm train, or its run folder")
        ->required();
    cmd->add_option("--out", args->out, "The ONNX file (default: model.onnx beside the checkpoint)");
    cmd->add_option("--opset", args->opset, "ONNX opset, 13 to 17 (below 17 LayerNorm is written as primitives)")
        ->capture_default_str();
    cmd->callback([args] { run_export(*args); });
}

}  // namespace normnet::cli

// The model registry: one row per architecture the command line trains (`--model mlp|cnn`).
// A row says what its options are (and their defaults), which normalisations apply (through
// the site where they sit, norms.hpp), how its spec is checked and described, how many
// parameters it has, how it is built, the products of its GEMM floor and its default training
// recipe. Adding a model is one file model_<name>.cpp defining its row and one line in
// models.cpp's table; train, eval, compare, bench and the checkpoint metadata then know it.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model_spec.hpp"
#include "normnet/gemm_floor.hpp"
#include "norms.hpp"

namespace normnet::cli {

using bench::add_linear_products;
using bench::FloorLayer;
using bench::linear_products;

struct RunConfig;

/// One value of a named-choice option: "post" on the command line and in JSON, "post-LN" in reports.
struct ModelChoice {
    std::string name, label;
};

/// One size option of a model: its JSON key (and ModelSpec::sizes key), its command-line flag
/// ("" for sizes fixed by the data, such as the CNN's image shape), help and defaults.
struct ModelOption {
    std::string key;
    std::string flag;
    std::string help;
    std::vector<int64_t> defaults;
    bool scalar = false;  // one integer (a JSON number) rather than a list
    /// A named choice (the ViT's --norm-placement pre|post) instead of a size: one of these names
    /// on the command line and in JSON, held in ModelSpec::sizes as its 1-based index (so that
    /// the range checks of sizes hold). `compare` accepts a comma-separated list of them as an
    /// axis of its grid. Implies scalar.
    std::vector<ModelChoice> choices{};
    /// The model's dropout probability, a number in [0, 1) held in ModelSpec::dropout, not a size.
    bool dropout = false;
};

/// The ModelChoice `option` holds in `spec`.
const ModelChoice& choice_of(const ModelSpec& spec, const ModelOption& option);
/// The 1-based index of the choice named `name`; throws normnet::Error naming `where` and the choices.
int64_t choice_index(const ModelOption& option, const std::string& name, const std::string& where);

struct ModelKind {
    std::string name;     // --model value and the JSON "type"
    std::string summary;  // for --help
    NormSite site = NormSite::features;
    std::string default_norm;
    /// Where the normalisations sit, for compare's report: "after each hidden ReLU".
    std::string norm_position = "after each hidden ReLU";
    /// bench's defaults: batch sizes and normalisations of its rows.
    std::string bench_batch_sizes = "32,128,512";
    std::string bench_norms = "layer,batch,none";
    std::vector<ModelOption> options;
    /// Sets the model's default recipe (dataset, epochs, lr...) over RunConfig's defaults; the
    /// options given on the command line are applied after it.
    void (*recipe)(RunConfig& config) = nullptr;
    /// The architecture without its normalisation: "784-300-100-10".
    std::string (*describe)(const ModelSpec& spec) = nullptr;
    /// Checks beyond every size being in [1, kMaxWidth] (e.g. groups dividing the channels);
    /// messages start with `where`.
    void (*check)(const ModelSpec& spec, const std::string& where) = nullptr;
    /// The parameters a checkpoint of this model holds at least (ModelSpec::parameters()).
    double (*parameters)(const ModelSpec& spec) = nullptr;
    /// The model (normnet::models), on inputs [N, inputs] as the data loader gives them.
    std::shared_ptr<Module> (*build)(const ModelSpec& spec) = nullptr;
    /// True when the model's forward runs its children in order (the MLP and CNN), so that the
    /// inputs of each BatchNorm layer can be computed layer by layer (compare's precise statistics).
    bool layers_in_order = false;
    /// The matrix products of one training step at `batch` (bench's GEMM floor).
    std::vector<FloorLayer> (*gemm_products)(const ModelSpec& spec, int64_t batch) = nullptr;
    /// One sample as the exported ONNX graph takes it (`normnet export`): images [C, H, W], rows
    /// of pixels [H, W]; null: the loader's row of `inputs` values.
    std::vector<int64_t> (*onnx_input)(const ModelSpec& spec) = nullptr;
    /// The task it learns (TaskKind): the image models classify, the language model predicts text.
    unsigned task = kClassification;
    /// Rows whose architecture has its own JSON form and text (the language model's, as its
    /// checkpoints have always had them): the "type" in JSON, and the codec and text instead of
    /// ModelSpec's generic ones.
    std::string json_type{};
    nlohmann::ordered_json (*to_json)(const ModelSpec& spec) = nullptr;
    void (*from_json)(const nlohmann::json& j, ModelSpec& spec) = nullptr;
    std::string (*str)(const ModelSpec& spec) = nullptr;
    /// What a training run sets on the built model beyond its architecture (the language
    /// model's recomputation in backward).
    void (*train_setup)(Module& model, const RunConfig& config) = nullptr;
    /// compare's grid by default: normalisations, batch sizes, model options given as lists
    /// (flag, value), and its length (over the recipe: a few epochs, or steps).
    std::string compare_norms = "layer,batch,none";
    std::string compare_batch_sizes = "4,16,64,256";
    std::vector<std::pair<std::string, std::string>> compare_options{};
    void (*compare_recipe)(RunConfig& config) = nullptr;
    /// bench's recipe over the model's (nullptr: Adam at 1e-3, constant, the peers' MLP recipe).
    void (*bench_recipe)(RunConfig& config) = nullptr;
};

/// The registry, in the order help texts list it.
const std::vector<const ModelKind*>& model_kinds();
/// The row of `name`; throws normnet::Error naming `where` and the choices otherwise.
const ModelKind& model_kind(const std::string& name, const std::string& where = "--model");
/// The row whose architecture JSON has "type" `type` (its json_type, or its name).
const ModelKind& model_kind_of_json(const std::string& type);
/// "mlp or cnn"
std::string model_choices();

// Pieces the rows share: the weights and biases of a stack of Linear layers from `in` features
// through `widths` (the last is the output).
double linear_stack_parameters(double in, const std::vector<int64_t>& widths);
/// The fixed "image" size option of the image models (CNN, ViT, LSTM): [channels, height, width].
struct ImageShape {
    int64_t channels, height, width;
};
ImageShape image_of(const ModelSpec& spec);
/// The image as [C, H, W] (an onnx_input of the image models).
std::vector<int64_t> image_dims(const ModelSpec& spec);
/// Checks that "image" has three sizes whose product is spec.inputs; messages start with `where`.
void check_image(const ModelSpec& spec, const std::string& where);

/// "mlp any of layer,batch,rms,none; cnn any of ..." for the help of --norms.
std::string norms_per_model();

// The rows (one file each).
const ModelKind& mlp_model();
const ModelKind& cnn_model();
const ModelKind& vit_model();
const ModelKind& lstm_model();
const ModelKind& lm_model();

}  // namespace normnet::cli

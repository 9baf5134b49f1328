// The registry row of the MLP (`--model mlp`, the default): normnet::models::MLP, Linear -> ReLU
// -> norm for each hidden size, then the output Linear, as in the seed model 784-300-100-10 with
// LayerNorm.
#include "models.hpp"
#include "normnet/models/mlp.hpp"
#include "run_config.hpp"

namespace normnet::cli {
namespace {

std::string describe(const ModelSpec& spec) {
    std::string s = std::to_string(spec.inputs);
    for (int64_t h : spec.size("hidden")) s.append("-").append(std::to_string(h));  // append: GCC 12 warns falsely on "-" + str
    return s.append("-").append(std::to_string(spec.classes));
}

// The Linear layers' weights and biases, the bulk of the model.
double parameters(const ModelSpec& spec) {
    std::vector<int64_t> widths = spec.size("hidden");
    widths.push_back(spec.classes);
    return linear_stack_parameters(static_cast<double>(spec.inputs), widths);
}

std::shared_ptr<Module> build(const ModelSpec& spec) {
    return std::make_shared<models::MLP>(
        models::MLPOptions{.in_features = spec.inputs, .hidden = spec.size("hidden"), .num_classes = spec.classes, .norm = spec.norm});
}

// The Linear layers' products; the input needs no gradient.
std::vector<FloorLayer> gemm_products(const ModelSpec& spec, int64_t batch) {
    std::vector<int64_t> widths = spec.size("hidden");
    widths.push_back(spec.classes);
    std::vector<FloorLayer> layers;
    add_linear_products(layers, spec.inputs, widths, batch, false);
    return layers;
}

}  // namespace

const ModelKind& mlp_model() {
    static const ModelKind kind{
        .name = "mlp",
        .summary = "multi-layer perceptron: Linear -> ReLU -> norm per hidden size, then Linear",
        .site = NormSite::features,
        .default_norm = "layer",
        .options = {{"hidden", "--hidden", "Hidden layer sizes, comma-separated (mlp)", {300, 100}}},
        .recipe = [](RunConfig&) {},  // RunConfig's defaults are the MLP's recipe
        .describe = describe,
        .check = [](const ModelSpec&, const std::string&) {},
        .parameters = parameters,
        .build = build,
        .layers_in_order = true,
        .gemm_products = gemm_products,
    };
    return kind;
}

}  // namespace normnet::cli

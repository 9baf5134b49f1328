// The registry row of the Vision Transformer (`--model vit`): normnet::models::VisionTransformer,
// issue 13's small ViT by default — 7x7 patches of a 28x28 image (16 tokens plus the class
// token), d_model 64, 4 blocks of 4 heads, feed-forward 128, pre-LN. The normalisation sits in
// every block (norm1, norm2) and, with pre-LN, in the final encoder.norm; BatchNorm there
// normalises each feature over batch x tokens. The state_dict is the library model's
// (torchvision's names: conv_proj, class_token, pos_embedding, encoder.layers.N..., head), the
// names apps/peers/torch_vit.py uses, so a checkpoint starts a peer with --init.
#include "models.hpp"
#include "normnet/models/vision_transformer.hpp"
#include "run_config.hpp"

namespace normnet::cli {
namespace {

using Image = ImageShape;

const ModelOption& placement_option();

bool pre_ln(const ModelSpec& spec) { return choice_of(spec, placement_option()).name == "pre"; }

models::VisionTransformerOptions options_of(const ModelSpec& spec) {
    const Image im = image_of(spec);
    return {.image_size = im.height,
            .patch_size = spec.scalar("patch"),
            .in_channels = im.channels,
            .num_classes = spec.classes,
            .d_model = spec.scalar("d_model"),
            .num_layers = spec.scalar("layers"),
            .num_heads = spec.scalar("heads"),
            .dim_feedforward = spec.scalar("dim_feedforward"),
            .dropout = 0.0,
            .norm = spec.norm,
            .norm_first = pre_ln(spec)};
}

int64_t tokens_of(const ModelSpec& spec) {
    const int64_t side = image_of(spec).height / spec.scalar("patch");
    return 1 + side * side;
}

std::string describe(const ModelSpec& spec) {
    const Image im = image_of(spec);
    return "vit " + std::to_string(im.height) + "x" + std::to_string(im.width) + " patch " +
           std::to_string(spec.scalar("patch")) + " (" + std::to_string(tokens_of(spec)) + " tokens) d" +
           std::to_string(spec.scalar("d_model")) + " x" + std::to_string(spec.scalar("layers")) + " blocks " +
           std::to_string(spec.scalar("heads")) + " heads ff" + std::to_string(spec.scalar("dim_feedforward")) + " " +
           choice_of(spec, placement_option()).label;
}

// train passes its first option's flag as `where` (this row's checks name their own option);
// eval passes the checkpoint, which the message must name.
std::string source(const std::string& where) { return where.rfind("--", 0) == 0 ? "" : where + ": "; }

void check(const ModelSpec& spec, const std::string& where) {
    check_image(spec, where);
    const Image im = image_of(spec);
    NORMNET_CHECK(im.height == im.width, where, ": the ViT needs square images, got ", im.height, "x", im.width);
    const int64_t patch = spec.scalar("patch");
    NORMNET_CHECK(im.height % patch == 0, source(where), "--patch ", patch, ": the patch size must divide the image side ", im.height,
                  " (e.g. 4, 7 or 14 for 28x28 images)");
    const int64_t d = spec.scalar("d_model"), heads = spec.scalar("heads");
    NORMNET_CHECK(d % heads == 0, source(where), "--heads ", heads, ": the heads must divide --d-model ", d);
}

// Weights and biases of the patch projection, attention, feed-forward and head, the class token
// and the positional embedding (the norms' affine parameters are not counted).
double parameters(const ModelSpec& spec) {
    const Image im = image_of(spec);
    const double d = static_cast<double>(spec.scalar("d_model")), f = static_cast<double>(spec.scalar("dim_feedforward")),
                 patch = static_cast<double>(spec.scalar("patch"));
    const double per_block = 3 * d * d + 3 * d + d * d + d + d * f + f + f * d + d;
    return (static_cast<double>(im.channels) * patch * patch + 1) * d + d + static_cast<double>(tokens_of(spec)) * d +
           static_cast<double>(spec.scalar("layers")) * per_block + (d + 1) * static_cast<double>(spec.classes);
}

std::shared_ptr<Module> build(const ModelSpec& spec) { return std::make_shared<models::VisionTransformer>(options_of(spec)); }

// One step at `batch` images of T tokens and D features, H heads of D/H: the patch projection
// per image as conv2d lowers it (W [D, C p^2] @ cols [C p^2, patches]; no input gradient), then
// per block the Linear products on batch x T rows (in_proj D -> 3D, out_proj, linear1, linear2)
// and the attention products per (image, head): S = Q K^T [T, T] and O = A V [T, D/H] forward;
// dA = dO V^T, dV = A^T dO, dQ = dS K, dK = dS^T Q backward; the head on the class tokens.
std::vector<FloorLayer> gemm_products(const ModelSpec& spec, int64_t batch) {
    const Image im = image_of(spec);
    const int64_t p = spec.scalar("patch"), patches = tokens_of(spec) - 1, T = patches + 1, D = spec.scalar("d_model"),
                  F = spec.scalar("dim_feedforward"), heads = spec.scalar("heads"), dh = D / heads, rows = batch * T;
    const int64_t k = im.channels * p * p;
    std::vector<FloorLayer> layers{{"patch projection", {{false, false, D, patches, k}}, {{false, true, D, k, patches}}, batch}};
    for (int64_t b = 0; b < spec.scalar("layers"); ++b) {
        const std::string block = "block" + std::to_string(b + 1) + " ";
        layers.push_back(linear_products(block + "in_proj", D, 3 * D, rows, true));
        layers.push_back({block + "attention",
                          {{false, true, T, T, dh}, {false, false, T, dh, T}},
                          {{false, true, T, T, dh}, {true, false, T, dh, T}, {false, false, T, dh, T}, {true, false, T, dh, T}},
                          batch * heads});
        layers.push_back(linear_products(block + "out_proj", D, D, rows, true));
        layers.push_back(linear_products(block + "linear1", D, F, rows, true));
        layers.push_back(linear_products(block + "linear2", F, D, rows, true));
    }
    layers.push_back(linear_products("head", D, spec.classes, batch, true));
    return layers;
}

// Pre-LN (Xiong et al. 2020) trains without warm-up; AdamW at 1e-3 with a cosine schedule over
// 12 epochs of batch 128 reached 98.02 % on MNIST (best 98.03 %, seed 0; the training set is fit
// to 99.94 %, so the margin over issue 13's 98.0 % is thin: see the branch's README notes).
void recipe(RunConfig& c) {
    c.dataset = "mnist";
    c.epochs = 12;
    c.batch_size = 128;
    c.lr = 1e-3;
    c.weight_decay = 0.05;
}

const std::vector<ModelOption>& vit_options() {
    static const std::vector<ModelOption> options{
        {"image", "", "", {1, 28, 28}},
        {"patch", "--patch", "Patch side in pixels, dividing the image side (vit)", {7}, true},
        {"d_model", "--d-model", "Token width d_model (vit)", {64}, true},
        {"layers", "--layers", "Transformer blocks (vit; default 4) or stacked LSTM layers (lstm; default 1)", {4}, true},
        {"heads", "--heads", "Attention heads, dividing --d-model (vit)", {4}, true},
        {"dim_feedforward", "--dim-feedforward", "Hidden width of each block's feed-forward network (vit)", {128}, true},
        {"norm_placement", "--norm-placement",
         "pre (pre-LN: x + f(norm(x)), with a final norm) or post (post-LN: norm(x + f(x)), PyTorch's default) (vit)",
         {1}, true, {{"pre", "pre-LN"}, {"post", "post-LN"}}},
    };
    return options;
}

const ModelOption& placement_option() { return vit_options().back(); }

}  // namespace

const ModelKind& vit_model() {
    static const ModelKind kind{
        .name = "vit",
        .summary = "Vision Transformer: patches embedded by a strided conv, class token and positional embedding, "
                   "Transformer blocks with the norm pre- or post-LN, the head on the class token",
        .site = NormSite::tokens,
        .default_norm = "layer",
        .norm_position = "in every Transformer block (norm1, norm2; and the final norm with pre-LN)",
        .bench_batch_sizes = "32,128",
        .bench_norms = "layer,rms,batch,none",
        .options = vit_options(),
        .recipe = recipe,
        .describe = describe,
        .check = check,
        .parameters = parameters,
        .build = build,
        .gemm_products = gemm_products,
        .onnx_input = image_dims,
    };
    return kind;
}

}  // namespace normnet::cli

// The registry row of the character language model (`--model lm`, `normnet lm train`):
// normnet::models::CharTransformer, a GPT-style decoder (token and position embeddings, causal
// Transformer blocks with the norm pre- or post-LN, an untied head over the vocabulary), issue
// 13's by default: context 128, d_model 128, 4 blocks of 4 heads, pre-LN. Its inputs and classes
// are the corpus's vocabulary, known once the text is read. Its architecture JSON is the one its
// checkpoints have always had ({"type": "char_transformer", "vocab_size": ..., "n_layers": ...}).
#include <cmath>

#include "json_field.hpp"
#include "models.hpp"
#include "normnet/models/char_transformer.hpp"
#include "run_config.hpp"

namespace normnet::cli {
namespace {

// Sizes of the language model, so that products such as steps x batch x context cannot overflow.
constexpr int64_t kMaxLmSize = int64_t{1} << 20;

const ModelOption& placement_option();

bool pre_ln(const ModelSpec& spec) { return choice_of(spec, placement_option()).name == "pre"; }

std::string describe(const ModelSpec& s) {
    const int64_t layers = s.scalar("layers"), heads = s.scalar("heads");
    return str("char-transformer vocab ", s.inputs, ", context ", s.scalar("context"), ", d_model ", s.scalar("d_model"), ", ",
               layers, layers == 1 ? " layer, " : " layers, ", heads, heads == 1 ? " head" : " heads");
}

std::string text(const ModelSpec& s) {
    return describe(s) + ", " + s.norm.name() + (pre_ln(s) ? " pre" : " post") +
           (s.dropout > 0 ? ", dropout " + std::to_string(s.dropout) : std::string());
}

void check(const ModelSpec& s, const std::string&) {
    for (const ModelOption& o : lm_model().options) {
        if (o.dropout || !o.choices.empty()) continue;
        const int64_t v = s.scalar(o.key);
        NORMNET_CHECK(v <= kMaxLmSize, o.flag, ": must be in [1, ", kMaxLmSize, "], got ", v);
    }
    NORMNET_CHECK(s.inputs <= kMaxLmSize, "vocab_size: must be in [0, ", kMaxLmSize, "], got ", s.inputs);
    NORMNET_CHECK(s.scalar("d_model") % s.scalar("heads") == 0, "--d-model ", s.scalar("d_model"), " is not divisible by --heads ",
                  s.scalar("heads"));
    NORMNET_CHECK(std::isfinite(s.dropout) && s.dropout >= 0 && s.dropout < 1, "--dropout: must be in [0, 1), got ", s.dropout);
}

// Token and position embeddings, per block attention (4 d^2 + 4 d) and feed-forward (8 d^2 + 5 d),
// the head (no bias): the norms' weights are not counted, so that every norm's file holds this many.
double parameters(const ModelSpec& s) {
    const auto d = static_cast<double>(s.scalar("d_model")), v = static_cast<double>(s.inputs);
    return v * d + static_cast<double>(s.scalar("context")) * d + static_cast<double>(s.scalar("layers")) * (12 * d * d + 9 * d) +
           d * v;
}

std::shared_ptr<Module> build(const ModelSpec& s) {
    return std::make_shared<models::CharTransformer>(models::CharTransformerOptions{.vocab_size = s.inputs,
                                                                                   .context = s.scalar("context"),
                                                                                   .d_model = s.scalar("d_model"),
                                                                                   .n_layers = s.scalar("layers"),
                                                                                   .n_heads = s.scalar("heads"),
                                                                                   .dropout = s.dropout,
                                                                                   .norm = s.norm,
                                                                                   .norm_first = pre_ln(s)});
}

// Activation checkpointing is a recipe choice: whole blocks (--recompute), or by default the
// feed-forward networks' hidden activations (--recompute-ffn).
void train_setup(Module& model, const RunConfig& c) {
    auto& transformer = static_cast<models::CharTransformer&>(model);  // this row's build
    if (c.recompute) transformer.set_checkpoint_blocks(true);
    if (c.recompute_ffn && !c.recompute) transformer.set_checkpoint_ffn(true);
}

// Every encoder layer's products and the head's (d_model -> vocab, with its input gradient).
std::vector<FloorLayer> gemm_products(const ModelSpec& s, int64_t batch) {
    std::vector<FloorLayer> layers;
    const int64_t T = s.scalar("context"), d = s.scalar("d_model");
    for (int64_t l = 0; l < s.scalar("layers"); ++l) bench::add_encoder_layer_products(layers, batch, T, d, s.scalar("heads"), 4 * d);
    add_linear_products(layers, d, {s.inputs}, batch * T, true);
    return layers;
}

nlohmann::ordered_json to_json(const ModelSpec& s) {
    return {{"type", "char_transformer"}, {"vocab_size", s.inputs},        {"context", s.scalar("context")},
            {"d_model", s.scalar("d_model")}, {"n_layers", s.scalar("layers")}, {"n_heads", s.scalar("heads")},
            {"dropout", s.dropout},           {"norm", s.norm.name()},          {"norm_first", pre_ln(s)}};
}

// Keys that are missing keep their defaults, as they always have.
void from_json(const nlohmann::json& j, ModelSpec& s) {
    int64_t vocab = s.inputs;
    read_field(j, "vocab_size", vocab);  // 0 in a grid's config: the corpus's, once read
    s.inputs = s.classes = vocab;
    for (const auto& [json, key] : {std::pair{"context", "context"}, {"d_model", "d_model"}, {"n_layers", "layers"}, {"n_heads", "heads"}}) {
        read_field(j, json, s.sizes.at(key).at(0));
        NORMNET_CHECK(s.scalar(key) >= 1, json, " must be >= 1, got ", s.scalar(key));
    }
    read_field(j, "dropout", s.dropout);
    std::string norm = s.norm.name();
    read_field(j, "norm", norm);
    s.norm = Norm(norm);
    bool norm_first = pre_ln(s);
    read_field(j, "norm_first", norm_first);
    s.sizes["norm_placement"] = {norm_first ? 1 : 2};
}

// AdamW with warm-up then cosine, gradients clipped at 1, as issue 13's recipe.
void recipe(RunConfig& c) {
    c.val_fraction = 0.05;  // of the corpus's records
    c.steps = 2000;
    c.epochs = 0;
    c.batch_size = 32;
    c.lr = 1e-3;
    c.weight_decay = 0.1;
    c.warmup = 100;
    c.clip = 1.0;
    c.eval_every = 200;
}

const std::vector<ModelOption>& lm_options() {
    static const std::vector<ModelOption> options{
        {"context", "--context", "Characters the model sees", {128}, true},
        {"d_model", "--d-model", "Width of the model", {128}, true},
        {"layers", "--layers", "Transformer blocks", {4}, true},
        {"heads", "--heads", "Attention heads per block", {4}, true},
        {"dropout", "--dropout", "Dropout on embeddings, attention and residual branches", {}, true, {}, true},
        {"norm_placement", "--norm-placement", "pre (pre-LN, with a final norm) or post (post-LN)", {1}, true,
         {{"pre", "pre-LN"}, {"post", "post-LN"}}},
    };
    return options;
}

const ModelOption& placement_option() { return lm_options().back(); }

}  // namespace

const ModelKind& lm_model() {
    static const ModelKind kind{
        .name = "lm",
        .summary = "character language model: a GPT-style decoder (CharTransformer) on a UTF-8 corpus, validated in "
                   "bits per character",
        .site = NormSite::tokens,
        .default_norm = "layer",
        .norm_position = "in every Transformer block (norm1, norm2; and the final norm with pre-LN)",
        .bench_batch_sizes = "32",
        .bench_norms = "layer",
        .options = lm_options(),
        .recipe = recipe,
        .describe = describe,
        .check = check,
        .parameters = parameters,
        .build = build,
        .gemm_products = gemm_products,
        .task = kLanguageModel,
        .json_type = "char_transformer",
        .to_json = to_json,
        .from_json = from_json,
        .str = text,
        .train_setup = train_setup,
        .compare_norms = "layer,rms,batch,none",
        .compare_batch_sizes = "32",
        .compare_options = {{"--norm-placement", "pre,post"}},
        .compare_recipe = [](RunConfig& c) {
            c.steps = 500;
            c.eval_every = 100;
        },
        .bench_recipe = [](RunConfig& c) {  // the peers' (apps/peers/torch_lm.py): no decay schedule, no clipping
            c.lr = 1e-3;
            c.weight_decay = 0.01;
            c.schedule = "constant";
            c.warmup = 0;
            c.clip = 0;
        },
    };
    return kind;
}

}  // namespace normnet::cli

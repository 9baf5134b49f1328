// The registry row of the row-by-row LSTM (`--model lstm`): normnet::models::RowLSTM reads a
// 28x28 image as 28 steps of 28 pixels and classifies from the last step's hidden state. With
// --norm layer it is Ba et al.'s LayerNorm LSTM (LayerNormLSTM: the input and hidden gate
// pre-activations and the cell state normalised); with --norm none the plain LSTM, whose
// state_dict (rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0, head.*) is
// that of torch.nn.LSTM(batch_first=True) and a Linear.
#include "models.hpp"
#include "normnet/models/row_lstm.hpp"
#include "run_config.hpp"

namespace normnet::cli {
namespace {

// [channels, rows, pixels per row]: the steps are the rows, a step's input a row of pixels.
using Image = ImageShape;

models::RowLSTMOptions options_of(const ModelSpec& spec) {
    const Image im = image_of(spec);
    return {.rows = im.height,
            .row_size = im.width,
            .hidden_size = spec.scalar("hidden"),
            .num_layers = spec.scalar("layers"),
            .num_classes = spec.classes,
            .dropout = 0.0,
            .norm = spec.norm};
}

std::string describe(const ModelSpec& spec) {
    const Image im = image_of(spec);
    return "lstm " + std::to_string(im.height) + " steps x " + std::to_string(im.width) + " pixels, hidden " +
           std::to_string(spec.scalar("hidden")) + " x" + std::to_string(spec.scalar("layers")) + " layers";
}

void check(const ModelSpec& spec, const std::string& where) {
    check_image(spec, where);
    NORMNET_CHECK(image_of(spec).channels == 1, where, ": the row LSTM reads one-channel images, got ", image_of(spec).channels,
                  " channels");
}

// The gate weights W_ih [4H, I], W_hh [4H, H] and their biases per layer, and the head.
double parameters(const ModelSpec& spec) {
    const double h = static_cast<double>(spec.scalar("hidden"));
    double in = static_cast<double>(image_of(spec).width), total = 0;
    for (int64_t l = 0; l < spec.scalar("layers"); ++l) {
        total += 4 * h * (in + h + 2);
        in = h;
    }
    return total + (h + 1) * static_cast<double>(spec.classes);
}

std::shared_ptr<Module> build(const ModelSpec& spec) { return std::make_shared<models::RowLSTM>(options_of(spec)); }

// Per layer, as the LSTM kernels run them: the input product of every step at once (rows x T
// rows of I pixels -> 4H gates; its weight gradient, and the input gradient above the first
// layer) and the hidden product of each step h_{t-1} [batch, H] @ W_hh^T forward, dh_{t-1} =
// dgates_t @ W_hh backward, then dW_hh over all steps at once; the head on the last step.
std::vector<FloorLayer> gemm_products(const ModelSpec& spec, int64_t batch) {
    const Image im = image_of(spec);
    const int64_t T = im.height, H = spec.scalar("hidden"), G = 4 * H;
    std::vector<FloorLayer> layers;
    int64_t in = im.width;
    for (int64_t l = 0; l < spec.scalar("layers"); ++l) {
        const std::string name = "layer" + std::to_string(l + 1);
        layers.push_back(linear_products(name + " input", in, G, batch * T, l > 0));
        FloorLayer hidden{name + " hidden", {}, {{true, false, G, H, batch * T}}, 0};
        for (int64_t t = 0; t < T; ++t) {
            hidden.forward.push_back({false, true, batch, G, H});
            hidden.backward.push_back({false, false, batch, H, G});
        }
        layers.push_back(hidden);
        in = H;
    }
    layers.push_back(linear_products("head", H, spec.classes, batch, true));
    return layers;
}

// AdamW with a cosine schedule; gradient clipping at 1, the usual guard of recurrent networks
// against exploding gradients. With LayerNorm: 99.00 % on MNIST after 8 epochs (seed 0).
void recipe(RunConfig& c) {
    c.dataset = "mnist";
    c.epochs = 8;
    c.batch_size = 128;
    c.lr = 2e-3;
    c.weight_decay = 0.01;
    c.clip = 1.0;
}

}  // namespace

const ModelKind& lstm_model() {
    static const ModelKind kind{
        .name = "lstm",
        .summary = "LSTM reading the image row by row (28 steps of 28 pixels), LayerNorm LSTM (Ba et al.) or plain, "
                   "the head on the last step",
        .site = NormSite::cell,
        .default_norm = "layer",
        .norm_position = "inside the LSTM cell (gate pre-activations and cell state, Ba et al. 2016)",
        .bench_batch_sizes = "32,128",
        .bench_norms = "layer,none",
        .options = {{"image", "", "", {1, 28, 28}},
                    {"hidden", "--hidden-size", "Hidden units of each LSTM layer (lstm)", {128}, true},
                    {"layers", "--layers", "Transformer blocks (vit; default 4) or stacked LSTM layers (lstm; default 1)", {1}, true}},
        .recipe = recipe,
        .describe = describe,
        .check = check,
        .parameters = parameters,
        .build = build,
        .gemm_products = gemm_products,
        // Its input as a sequence: [steps, pixels per step].
        .onnx_input = [](const ModelSpec& spec) { return std::vector<int64_t>{image_of(spec).height, image_of(spec).width}; },
    };
    return kind;
}

}  // namespace normnet::cli

// What a CharTransformer step holds at its peak, against what its backward needs: the tensors
// the ops save (counted by hand below from the model's sizes) plus a few gradients in flight.
// One more saved [B, T, d_model] tensor per block (a copy where a view would do) would push the
// step over the bound.
#include "memory.hpp"
#include "normnet/models/char_transformer.hpp"
#include "test_helpers.hpp"

using namespace normnet;

TEST_CASE("models memory: a CharTransformer step peaks at its saved activations", "[models][memory]") {
    const int64_t V = 40, B = 4, T = 32, d = 32, layers = 2, H = 2, ff = 4 * d;
    manual_seed(0);
    models::CharTransformer model(models::CharTransformerOptions{
        .vocab_size = V, .context = T, .d_model = d, .n_layers = layers, .n_heads = H});
    Generator gen(1);
    const Tensor x = randint(V, {B, T}, gen), y = randint(V, {B * T}, gen);
    const auto step = [&] { cross_entropy(model.forward(x).reshape({-1, V}), y).backward(); };
    step();  // the parameters' gradients exist from here on

    // Floats saved per token. Each block: its input and the input after attention (saved by the
    // norms), the two norms' outputs (saved by in_proj and linear1), q k v (in_proj's output,
    // read in place), the attention weights (H x T per query), the heads' output (out_proj's
    // input), linear1's output and its GELU (saved by GELU and linear2); with the norms'
    // statistics (mean and rstd in double). After the blocks: the final norm's input and output
    // and the logits and their softmax.
    const int64_t per_block = 8 * d + 2 * ff + H * T + 2 * 4;
    const int64_t saved = B * T * (layers * per_block + 2 * d + 4 + 2 * V) * 4;
    // Gradients in flight at the peak, when backward starts: the logits' and the input gradients
    // of the head and the final norm (later gradients take the place of saved tensors already
    // freed; the weights' gradients exist before the step).
    const int64_t in_flight = B * T * (V + 2 * d) * 4;

    const int64_t before = detail::buffer_bytes_in_use();
    detail::reset_peak_buffer_bytes_in_use();
    step();
    const int64_t peak = detail::peak_buffer_bytes_in_use() - before;
    INFO("peak " << peak << " bytes over the step's start; saved " << saved << ", in flight " << in_flight);
    CHECK(peak <= saved + in_flight);
    CHECK(peak >= saved);  // the count above is not loose: it is what the step must hold
    CHECK(detail::buffer_bytes_in_use() == before);  // and all of it is given back
}

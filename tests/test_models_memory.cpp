// What a CharTransformer step holds at its peak, against what its backward needs: the tensors
// the ops save (counted by hand below from the model's sizes) plus a few gradients in flight.
// One more saved [B, T, d_model] tensor per block (a copy where a view would do, or a norm's
// output kept instead of recomputed) would push the step over the bound.
#include "memory.hpp"
#include "parallel.hpp"
#include "normnet/models/char_transformer.hpp"
#include "test_helpers.hpp"

using namespace normnet;

TEST_CASE("models memory: a CharTransformer step peaks at its saved activations", "[models][memory]") {
    // T = 64 keys are more than a head's q, k and v rows hold (3 x 16 floats): the attention
    // recomputes its weights, as the LM's. T = 32: it saves them, as the ViT's.
    const int64_t T = GENERATE(32, 64);
    const int64_t V = 40, B = 4, d = 32, layers = 2, H = 2, ff = 4 * d;
    const int64_t softmax_per_head = T <= 3 * (d / H) ? T : 2;
    manual_seed(0);
    models::CharTransformer model(models::CharTransformerOptions{
        .vocab_size = V, .context = T, .d_model = d, .n_layers = layers, .n_heads = H});
    Generator gen(1);
    const Tensor x = randint(V, {B, T}, gen), y = randint(V, {B * T}, gen);
    const auto step = [&] { cross_entropy(model.forward(x).reshape({-1, V}), y).backward(); };
    step();  // the parameters' gradients exist from here on

    // Floats saved per token. Each block: its input and the input after attention (saved by the
    // norms), q k v (in_proj's output, read in place), per head either the query's row of
    // attention weights or its softmax maximum and 1 / sum (to recompute them), the heads' output
    // (out_proj's input), the feed-forward network's hidden pre-activation (ff, kept by the fused
    // feed_forward); with the norms' statistics (mean and rstd in double). Not the norms'
    // outputs (the inputs of in_proj and of the feed-forward network): those are recomputed in
    // backward from what the norms save. After the blocks: the final norm's input (its output,
    // the head's input, is recomputed too) and the logits and their softmax.
    const int64_t per_block = 6 * d + ff + softmax_per_head * H + 2 * 4;
    const int64_t saved = B * T * (layers * per_block + d + 4 + 2 * V) * 4;
    // In flight at the peak, in the last block's feed-forward backward: the gradients of the
    // block's output and of the network's input (d floats each per token), and feed_forward's
    // scratch: per thread, its block of rows of ff floats (here all B * T rows between them) and
    // ff doubles, and for threads after the first, their partial weight gradients (2 d ff
    // floats) (the head's and the final norm's saved tensors, freed by then, make room for more;
    // the weights' gradients exist before the step).
    const int64_t threads = detail::parallel_chunks(B * T, 32);  // feed_forward: 32 rows a thread at least
    const int64_t in_flight = B * T * (2 * d) * 4 + (B * T * ff + threads * 2 * ff + (threads - 1) * 2 * d * ff) * 4;

    const int64_t before = detail::buffer_bytes_in_use();
    detail::reset_peak_buffer_bytes_in_use();
    step();
    const int64_t peak = detail::peak_buffer_bytes_in_use() - before;
    INFO("peak " << peak << " bytes over the step's start; saved " << saved << ", in flight " << in_flight);
    CHECK(peak <= saved + in_flight);
    CHECK(peak >= saved);  // the count above is not loose: it is what the step must hold
    CHECK(detail::buffer_bytes_in_use() == before);  // and all of it is given back
}

TEST_CASE("models memory: checkpointed blocks or feed-forward sublayers give the same step for less memory",
          "[models][memory][checkpoint]") {
    const int64_t V = 40, B = 4, T = 32, d = 32, layers = 3, H = 2;
    Generator gen(1);
    const Tensor x = randint(V, {B, T}, gen), y = randint(V, {B * T}, gen);
    struct Step {
        float loss;
        std::vector<std::vector<float>> grads;
        int64_t peak;
    };
    // The second of two steps (the parameters' gradients exist from the first on), with the
    // same dropout draws in every run.
    const auto run = [&](models::CharTransformerOptions o) {
        o.vocab_size = V, o.context = T, o.d_model = d, o.n_layers = layers, o.n_heads = H;
        manual_seed(0);
        models::CharTransformer model(o);
        const auto step = [&] {
            Tensor loss = cross_entropy(model.forward(x).reshape({-1, V}), y);
            loss.backward();
            return loss.item();
        };
        step();
        for (auto& p : model.parameters()) p.grad().zero_();
        const int64_t before = detail::buffer_bytes_in_use();
        detail::reset_peak_buffer_bytes_in_use();
        manual_seed(1);
        Step s;
        s.loss = step();
        s.peak = detail::peak_buffer_bytes_in_use() - before;
        for (const auto& p : model.parameters()) s.grads.push_back(p.grad().to_vector());
        return s;
    };
    for (const bool pre : {true, false}) {
        for (const double p : {0.0, 0.1}) {
            INFO("norm_first " << pre << ", dropout " << p);
            const models::CharTransformerOptions o{.dropout = p, .norm_first = pre};
            auto blocks = o, ffn = o;
            blocks.checkpoint_blocks = true;
            ffn.checkpoint_ffn = true;
            const Step plain = run(o), checkpointed = run(blocks), ffn_checkpointed = run(ffn);
            CHECK(checkpointed.loss == plain.loss);
            CHECK(checkpointed.grads == plain.grads);
            CHECK(ffn_checkpointed.loss == plain.loss);
            CHECK(ffn_checkpointed.grads == plain.grads);
            INFO("peak " << plain.peak << " bytes plain, " << checkpointed.peak << " with checkpointed blocks, "
                         << ffn_checkpointed.peak << " with checkpointed feed-forward sublayers");
            // Between forward and backward a checkpointed block keeps only its input (d floats per
            // token) instead of its activations (6 d + ff + ... floats), and one block's activations
            // exist again at a time in backward; a checkpointed feed-forward sublayer drops its ff
            // floats per token.
            CHECK(checkpointed.peak < plain.peak * 2 / 3);
            CHECK(ffn_checkpointed.peak < plain.peak);
        }
    }
}

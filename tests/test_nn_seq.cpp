// Sequence layers against PyTorch goldens (tests/golden/gen_seq_modules.py): Embedding,
// MultiheadAttention (every mask kind, batch_first both ways, need_weights, size-1 and unbatched
// input), TransformerEncoderLayer (post/pre-LN, relu/gelu, the norm swapped for rms, batch over
// batch x time, none) and TransformerEncoder; gradcheck on small shapes; errors.
#include "module_golden.hpp"

#include "normnet/nn/attention.hpp"
#include "normnet/nn/embedding.hpp"
#include "normnet/nn/norm.hpp"
#include "normnet/nn/transformer.hpp"

using namespace normnet;
using Catch::Contains;
using test::check_gradcheck;
using test::meta_flag;
using test::meta_int;
using test::require_close;

TEST_CASE("nn seq: Embedding matches PyTorch, the padding row gets no gradient", "[nn][seq][golden]") {
    const auto g = test::golden("seq_modules.safetensors");
    for (const std::string c : {"emb_pad", "emb_plain", "emb_negpad"}) {
        INFO("case " << c);
        const std::string pad = g.metadata.at(c + ".padding_idx");
        Embedding emb(meta_int(g, c + ".num_embeddings"), meta_int(g, c + ".embedding_dim"),
                      pad == "none" ? std::nullopt : std::optional<int64_t>(std::stoll(pad)));
        test::load_torch_state(emb, g, c);
        const Tensor out = emb(g.at(c + ".idx"));
        require_close(out, g.at(c + ".out"), 1e-5, c + ".out");
        out.backward(g.at(c + ".dout"));
        test::require_torch_grads(emb, g, c);
    }
    Embedding padded(5, 3, -2);
    CHECK(padded.options().padding_idx == 3);
    CHECK(padded.weight.select(0, 3).abs().sum().item<float>() == 0.0f);
    CHECK(padded.to_string() == "Embedding(5, 3, padding_idx=3)");
    CHECK_THROWS_WITH(Embedding(5, 3, 5), Contains("padding_idx") && Contains("5"));
    CHECK_THROWS_WITH(Embedding(0, 3), Contains("Embedding") && Contains("positive"));
}

TEST_CASE("nn seq: MultiheadAttention matches PyTorch with every mask kind and layout", "[nn][seq][golden]") {
    const auto g = test::golden("seq_modules.safetensors");
    for (const std::string c : {"mha_self_kpm", "mha_cross_bf_float", "mha_attn3d_kpm", "mha_kpm_float", "mha_causal_kpm_bf",
                                "mha_causal_weights", "mha_no_bias", "mha_size1", "mha_unbatched"}) {
        INFO("case " << c);
        MultiheadAttention mha(MultiheadAttentionOptions{.embed_dim = meta_int(g, c + ".embed_dim"),
                                                         .num_heads = meta_int(g, c + ".num_heads"),
                                                         .bias = meta_flag(g, c + ".bias"),
                                                         .batch_first = meta_flag(g, c + ".batch_first")});
        test::load_torch_state(mha, g, c);
        const bool self = meta_flag(g, c + ".self"), need = meta_flag(g, c + ".need_weights");
        Tensor q = test::leaf(g.at(c + ".q"));
        Tensor k = self ? q : test::leaf(g.at(c + ".k")), v = self ? q : test::leaf(g.at(c + ".v"));
        const Tensor attn_mask = find_tensor(g.tensors, c + ".attn_mask"), kpm = find_tensor(g.tensors, c + ".kpm");
        auto [out, weights] = mha.forward(q, k, v, kpm, need, attn_mask, meta_flag(g, c + ".average"),
                                          meta_flag(g, c + ".causal"));
        require_close(out, g.at(c + ".out"), 1e-5, c + ".out");
        if (need) require_close(weights, g.at(c + ".weights"), 1e-5, c + ".weights");
        else CHECK_FALSE(weights.defined());
        out.backward(g.at(c + ".dout"));
        require_close(q.grad(), g.at(c + ".dq"), 1e-5, c + ".dq");
        if (!self) {
            require_close(k.grad(), g.at(c + ".dk"), 1e-5, c + ".dk");
            require_close(v.grad(), g.at(c + ".dv"), 1e-5, c + ".dv");
        }
        test::require_torch_grads(mha, g, c);
    }
}

TEST_CASE("nn seq: MultiheadAttention gradcheck, with masks and the weights path", "[nn][seq][gradcheck]") {
    manual_seed(3);
    MultiheadAttention mha(MultiheadAttentionOptions{.embed_dim = 4, .num_heads = 2, .batch_first = true});
    const Tensor x = randn({2, 3, 4}).requires_grad_();
    check_gradcheck(gradcheck(mha, x));
    Tensor kpm = zeros({2, 3}, kBool);
    kpm.data_ptr<bool>()[2] = true;
    std::vector<Tensor> inputs{x, randn({2, 3, 4}).requires_grad_()};
    for (const auto& p : mha.parameters()) inputs.push_back(p);
    check_gradcheck(gradcheck(
        [&](const std::vector<Tensor>& in) { return std::get<0>(mha.forward(in[0], in[1], in[1], kpm, true, {}, true, true)); },
        inputs));
    // The weights do not depend on out_proj: only the inputs and the input projection.
    check_gradcheck(gradcheck([&](const std::vector<Tensor>& in) { return std::get<1>(mha.forward(in[0], in[1], in[1], {}, true)); },
                              {inputs[0], inputs[1], mha.in_proj_weight, mha.in_proj_bias}));
}

TEST_CASE("nn seq: MultiheadAttention's fused paths equal its weights path, and a sample's output is its own",
          "[nn][seq]") {
    // need_weights = false runs the fused ops (the packed op for self-attention,
    // scaled_dot_product_attention otherwise), need_weights = true the composite one: the same
    // outputs and gradients for every mask kind, at batch 1 and 2. And sample 1 of a batch of 2
    // attends as it does alone (with its rows of the masks).
    manual_seed(7);
    const int64_t E = 6, H = 3, L = 4, S = 5, N = 2;
    MultiheadAttention mha(MultiheadAttentionOptions{.embed_dim = E, .num_heads = H, .batch_first = true});
    Generator gen(8);
    const Tensor x = randn({N, L, E}, gen), kv = randn({N, S, E}, gen), dout = randn({N, L, E}, gen);
    // PyTorch's convention: true = masked out; key (row % keys) of every row stays allowed.
    const auto bool_mask = [&](const Shape& shape) {
        Tensor m = rand(shape, gen) > 0.6f;
        const int64_t keys = shape[shape.size() - 1];
        for (int64_t r = 0; r < m.numel() / keys; ++r) m.data_ptr<bool>()[r * keys + r % keys] = false;
        return m;
    };
    // Key padding keeps key 0 as well, so that causal rows (query 0 sees key 0 only) keep a key:
    // a row with none is NaN on both paths, as torch's.
    const auto padding_mask = [&](int64_t keys) {
        Tensor m = bool_mask({N, keys});
        for (int64_t n = 0; n < N; ++n) m.data_ptr<bool>()[n * keys] = false;
        return m;
    };
    struct Masks {
        const char* name;
        Tensor attn, kpm;
        bool causal = false;
    };
    for (const bool self : {true, false}) {
        const int64_t keys = self ? L : S;
        const std::vector<Masks> kinds{{"none", {}, {}},
                                       {"2-D bool", bool_mask({L, keys}), {}},
                                       {"2-D float", randn({L, keys}, gen), {}},
                                       {"3-D bool", bool_mask({N * H, L, keys}), {}},
                                       {"3-D float", randn({N * H, L, keys}, gen), {}},
                                       {"bool key padding", {}, padding_mask(keys)},
                                       {"float key padding", {}, randn({N, keys}, gen)},
                                       {"3-D float and bool key padding", randn({N * H, L, keys}, gen), padding_mask(keys)},
                                       {"causal", {}, {}, true},
                                       {"causal and key padding", {}, padding_mask(keys), true}};
        for (const Masks& m : kinds) {
            if (m.causal && !self) continue;
            // Sample 1 alone, with its rows of the per-sample masks (3-D attn_mask, key padding).
            const auto second_half = [](const Tensor& t) { return t.narrow(0, t.size(0) / 2, t.size(0) / 2); };
            const Tensor attn1 = m.attn.defined() && m.attn.dim() == 3 ? second_half(m.attn) : m.attn;
            const Masks one{m.name, attn1, m.kpm.defined() ? second_half(m.kpm) : m.kpm, m.causal};
            for (const int64_t n : {N, int64_t{1}}) {
                INFO((self ? "self" : "cross") << "-attention, masks " << m.name << ", batch " << n);
                const Masks& mk = n == N ? m : one;
                std::vector<Tensor> got[2];
                for (const bool need_weights : {false, true}) {
                    mha.zero_grad();
                    Tensor q = test::leaf(x.narrow(0, N - n, n)), k = self ? q : test::leaf(kv.narrow(0, N - n, n));
                    auto [out, weights] = mha.forward(q, k, k, mk.kpm, need_weights, mk.attn, true, mk.causal);
                    out.backward(dout.narrow(0, N - n, n));
                    got[need_weights] = {out.detach(), q.grad(), mha.in_proj_weight.grad(), mha.out_proj->weight.grad()};
                    if (!self) got[need_weights].push_back(k.grad());
                }
                const char* const names[] = {"out", "dq", "din_proj_weight", "dout_proj_weight", "dkv"};
                for (size_t i = 0; i < got[0].size(); ++i) require_close(got[0][i], got[1][i], 1e-5, names[i]);
                if (n == 1) {  // the batch of one is sample 1 of the batch of two
                    Tensor q = x, k = self ? x : kv;
                    const Tensor in_batch = std::get<0>(mha.forward(q, k, k, m.kpm, false, m.attn, true, m.causal));
                    require_close(got[0][0], in_batch.detach().narrow(0, 1, 1), 1e-5, "sample 1 alone vs in its batch");
                }
            }
        }
    }
}

TEST_CASE("nn seq: MultiheadAttention refuses bad options and shapes, naming them", "[nn][seq]") {
    CHECK_THROWS_WITH(MultiheadAttention(6, 4), Contains("divisible by num_heads"));
    MultiheadAttention mha(4, 2);
    const Tensor x = randn({3, 2, 4});
    CHECK_THROWS_WITH(mha.forward(randn({3, 2, 5})), Contains("embed_dim 4") && Contains("[3, 2, 5]"));
    CHECK_THROWS_WITH(mha.forward(x, x, x, zeros({3, 3}, kBool)), Contains("key_padding_mask") && Contains("[2, 3]"));
    CHECK_THROWS_WITH(mha.forward(x, x, x, {}, false, zeros({2, 3}, kBool)), Contains("2D attn_mask") && Contains("[3, 3]"));
    CHECK_THROWS_WITH(mha.forward(x, randn({4, 3, 4}), randn({4, 3, 4})), Contains("batch"));
}

TEST_CASE("nn seq: TransformerEncoderLayer matches PyTorch, post- and pre-LN, with each norm", "[nn][seq][golden]") {
    const auto g = test::golden("seq_modules.safetensors");
    for (const std::string c : {"tel_post_relu_kpm", "tel_pre_gelu_bf_causal", "tel_pre_float_mask", "tel_rms_pre",
                                "tel_rms_post", "tel_batch_pre", "tel_batch_post", "tel_none_pre", "tel_size1"}) {
        INFO("case " << c);
        TransformerEncoderLayer layer(TransformerEncoderLayerOptions{
            .d_model = meta_int(g, c + ".d_model"),
            .nhead = meta_int(g, c + ".nhead"),
            .dim_feedforward = meta_int(g, c + ".dim_feedforward"),
            .dropout = 0.0,
            .activation = g.metadata.at(c + ".activation"),
            .batch_first = meta_flag(g, c + ".batch_first"),
            .norm_first = meta_flag(g, c + ".norm_first"),
            .norm = g.metadata.at(c + ".norm")});
        test::load_torch_state(layer, g, c);
        const std::string masks = g.metadata.at(c + ".masks");
        Tensor x = test::leaf(g.at(c + ".x"));
        const Tensor out = layer.forward(x, find_tensor(g.tensors, c + ".mask"), find_tensor(g.tensors, c + ".kpm"),
                                         masks.find("causal") != std::string::npos);
        require_close(out, g.at(c + ".out"), 1e-5, c + ".out");
        out.backward(g.at(c + ".dout"));
        require_close(x.grad(), g.at(c + ".dx"), 1e-5, c + ".dx");
        test::require_torch_grads(layer, g, c);
        for (const auto& [name, b] : layer.named_buffers()) require_close(b, g.at(c + ".after." + name), 1e-5, name);
    }
}

TEST_CASE("nn seq: TransformerEncoder with a final norm matches PyTorch", "[nn][seq][golden]") {
    const auto g = test::golden("seq_modules.safetensors");
    const std::string c = "encoder_pre_final";
    TransformerEncoder enc(TransformerEncoderOptions{
        .encoder_layer = {.d_model = 8, .nhead = 2, .dim_feedforward = 16, .dropout = 0.0, .activation = "gelu",
                          .norm_first = true},
        .num_layers = 2,
        .final_norm = true});
    test::load_torch_state(enc, g, c);
    Tensor x = test::leaf(g.at(c + ".x"));
    const Tensor out = enc.forward(x, {}, {}, true);
    require_close(out, g.at(c + ".out"), 1e-5, "out");
    out.backward(g.at(c + ".dout"));
    require_close(x.grad(), g.at(c + ".dx"), 1e-5, "dx");
    test::require_torch_grads(enc, g, c);
    CHECK(enc.clone()->state_dict().size() == enc.state_dict().size());
}

TEST_CASE("nn seq: TransformerEncoderLayer gradcheck with each norm and placement", "[nn][seq][gradcheck]") {
    for (const std::string norm : {"layer", "rms", "batch", "none"}) {
        for (const bool first : {false, true}) {
            INFO(norm << " norm_first " << first);
            manual_seed(7);
            TransformerEncoderLayer layer(TransformerEncoderLayerOptions{
                .d_model = 4, .nhead = 2, .dim_feedforward = 6, .dropout = 0.0, .activation = "gelu",
                .batch_first = true, .norm_first = first, .norm = norm});
            check_gradcheck(gradcheck(layer, randn({2, 3, 4}).requires_grad_()));
        }
    }
    SequenceBatchNorm bn(3);
    check_gradcheck(gradcheck(bn, randn({2, 4, 3}).requires_grad_()));
}

TEST_CASE("nn seq: TransformerEncoderLayer refuses unknown activations and norms", "[nn][seq]") {
    CHECK_THROWS_WITH(TransformerEncoderLayer(TransformerEncoderLayerOptions{.d_model = 4, .nhead = 2, .activation = "tanh"}),
                      Contains("activation should be relu or gelu"));
    CHECK_THROWS_WITH(TransformerEncoderLayer(TransformerEncoderLayerOptions{.d_model = 4, .nhead = 2, .norm = "group"}),
                      Contains("unknown norm 'group'") && Contains("layer, batch, rms or none"));
    CHECK_THROWS_WITH(SequenceBatchNorm(3).forward(randn({3})), Contains("SequenceBatchNorm"));
}

TEST_CASE("nn seq: Embedding gradcheck (the padding row stays without gradient)", "[nn][seq][gradcheck]") {
    manual_seed(4);
    Embedding emb(6, 3, 1);
    // By design the padding row's analytic gradient is 0 although it changes the output (as torch),
    // so the finite differences run on indices without it.
    check_gradcheck(gradcheck(emb, test::labels_of({0, 3, 5, 3, 2, 0})));
    const Tensor idx = test::labels_of({0, 1, 5, 1, 2, 0});
    sum(emb(idx)).backward();
    CHECK(emb.weight.grad().select(0, 1).abs().sum().item<float>() == 0.0f);
}

TEST_CASE("nn seq: attention and block dropout act in training only", "[nn][seq]") {
    manual_seed(6);
    TransformerEncoderLayer layer(TransformerEncoderLayerOptions{.d_model = 8, .nhead = 2, .dim_feedforward = 16,
                                                                 .dropout = 0.3, .batch_first = true});
    const Tensor x = randn({2, 5, 8});
    CHECK((layer(x) - layer(x)).abs().sum().item<float>() > 0.0f);
    layer.eval();
    require_close(layer(x), layer(x), 0.0, "eval");
    MultiheadAttention mha(MultiheadAttentionOptions{.embed_dim = 8, .num_heads = 2, .dropout = 0.5});
    const Tensor q = randn({5, 2, 8});
    CHECK((mha(q) - mha(q)).abs().sum().item<float>() > 0.0f);
    mha.eval();
    require_close(mha(q), mha(q), 0.0, "eval");
}

// The sequence model classes of normnet::models against torch equivalents written in
// tests/golden/gen_seq_models.py (state_dict names and shapes load strictly; one forward and
// backward of a tiny configuration), their options and errors.
#include "module_golden.hpp"

#include "normnet/models/char_transformer.hpp"
#include "normnet/models/row_lstm.hpp"
#include "normnet/models/vision_transformer.hpp"

using namespace normnet;
using namespace normnet::models;
using Catch::Contains;
using test::check_gradcheck;
using test::meta_flag;
using test::meta_int;
using test::require_close;

TEST_CASE("models: CharTransformer matches its PyTorch equivalent", "[models][seq][golden]") {
    const auto g = test::golden("seq_models.safetensors");
    for (const std::string c : {"char_pre_layer", "char_post_layer", "char_pre_rms", "char_pre_batch", "char_size1"}) {
        INFO("case " << c);
        CharTransformer m(CharTransformerOptions{.vocab_size = meta_int(g, c + ".vocab_size"),
                                                 .context = meta_int(g, c + ".context"),
                                                 .d_model = meta_int(g, c + ".d_model"),
                                                 .n_layers = meta_int(g, c + ".n_layers"),
                                                 .n_heads = meta_int(g, c + ".n_heads"),
                                                 .dropout = 0.0,
                                                 .norm = g.metadata.at(c + ".norm"),
                                                 .norm_first = meta_flag(g, c + ".norm_first"),
                                                 .dim_feedforward = meta_int(g, c + ".dim_feedforward")});
        test::load_torch_state(m, g, c);
        const Tensor out = m.forward(g.at(c + ".tokens"));
        require_close(out, g.at(c + ".out"), 1e-5, c + ".out");
        out.backward(g.at(c + ".dout"));
        test::require_torch_grads(m, g, c);
    }
}

TEST_CASE("models: CharTransformer defaults, causality and errors", "[models][seq]") {
    manual_seed(1);
    CharTransformer m(CharTransformerOptions{.vocab_size = 13, .context = 16, .d_model = 16, .n_layers = 2, .n_heads = 2});
    CHECK(m.options().norm == "layer");
    CHECK(m.options().norm_first);
    CHECK(find_tensor(m.named_parameters(), "head.weight").shape() == Shape{13, 16});
    CHECK(find_tensor(m.named_parameters(), "encoder.layers.1.linear1.weight").shape() == Shape{64, 16});
    CHECK(find_tensor(m.named_parameters(), "encoder.norm.weight").defined());
    // Position t depends on tokens 0..t only: changing the last token leaves earlier logits alone.
    Tensor a = randint(13, {1, 10}), b = a.clone();
    b.data_ptr<int64_t>()[9] = (a.data_ptr<int64_t>()[9] + 1) % 13;
    const Tensor la = m.forward(a), lb = m.forward(b);
    require_close(la.narrow(1, 0, 9), lb.narrow(1, 0, 9), 1e-6, "earlier positions");
    CHECK((la.narrow(1, 9, 1) - lb.narrow(1, 9, 1)).abs().sum().item<float>() > 0.0f);
    CHECK_THROWS_WITH(m.forward(randint(13, {1, 17})), Contains("sequence length 17") && Contains("context = 16"));
    CHECK_THROWS_WITH(m.forward(randn({1, 4})), Contains("int64 tokens [B, T]"));
    CHECK(m.clone()->state_dict().size() == m.state_dict().size());
}

TEST_CASE("models: VisionTransformer matches its PyTorch equivalent", "[models][seq][golden]") {
    const auto g = test::golden("seq_models.safetensors");
    for (const std::string c : {"vit_pre_layer", "vit_post_batch", "vit_pre_none"}) {
        INFO("case " << c);
        VisionTransformer m(VisionTransformerOptions{.image_size = meta_int(g, c + ".image_size"),
                                                     .patch_size = meta_int(g, c + ".patch_size"),
                                                     .in_channels = meta_int(g, c + ".in_channels"),
                                                     .num_classes = meta_int(g, c + ".num_classes"),
                                                     .d_model = meta_int(g, c + ".d_model"),
                                                     .num_layers = meta_int(g, c + ".num_layers"),
                                                     .num_heads = meta_int(g, c + ".num_heads"),
                                                     .dim_feedforward = meta_int(g, c + ".dim_feedforward"),
                                                     .norm = g.metadata.at(c + ".norm"),
                                                     .norm_first = meta_flag(g, c + ".norm_first")});
        test::require_module_case(m, g, c);
    }
}

TEST_CASE("models: VisionTransformer defaults are the MNIST model, flat images are accepted", "[models][seq]") {
    manual_seed(2);
    VisionTransformer m;
    CHECK(m.pos_embedding.shape() == Shape{1, 17, 64});
    CHECK(m.conv_proj->weight.shape() == Shape{64, 1, 7, 7});
    const Tensor x = randn({2, 1, 28, 28});
    require_close(m.forward(x.reshape({2, 784})), m.forward(x), 1e-6, "flat");
    CHECK(m.forward(x).shape() == Shape{2, 10});
    CHECK_THROWS_WITH(m.forward(randn({2, 1, 27, 28})), Contains("VisionTransformer") && Contains("[2, 1, 27, 28]"));
    CHECK_THROWS_WITH(VisionTransformer(VisionTransformerOptions{.patch_size = 5}), Contains("must divide"));
}

TEST_CASE("models: RowLSTM matches its PyTorch equivalent, with and without LayerNorm", "[models][seq][golden]") {
    const auto g = test::golden("seq_models.safetensors");
    for (const std::string c : {"row_layer", "row_none"}) {
        INFO("case " << c);
        RowLSTM m(RowLSTMOptions{.rows = meta_int(g, c + ".rows"),
                                 .row_size = meta_int(g, c + ".row_size"),
                                 .hidden_size = meta_int(g, c + ".hidden_size"),
                                 .num_classes = meta_int(g, c + ".num_classes"),
                                 .norm = g.metadata.at(c + ".norm")});
        test::require_module_case(m, g, c);
    }
    RowLSTM m;
    CHECK(dynamic_cast<LayerNormLSTM*>(m.rnn.get()) != nullptr);
    CHECK(m.forward(randn({2, 784})).shape() == Shape{2, 10});
    CHECK_THROWS_WITH(RowLSTM(RowLSTMOptions{.norm = "batch"}), Contains("expected layer or none"));
    CHECK_THROWS_WITH(m.forward(randn({2, 27, 28})), Contains("RowLSTM") && Contains("[2, 27, 28]"));
}

TEST_CASE("models: gradcheck of tiny CharTransformer, VisionTransformer and RowLSTM", "[models][seq][gradcheck]") {
    for (const bool first : {true, false}) {
        manual_seed(8);
        CharTransformer lm(CharTransformerOptions{.vocab_size = 5, .context = 4, .d_model = 4, .n_layers = 1, .n_heads = 2,
                                                  .norm_first = first, .dim_feedforward = 6});
        // Embeddings of scale 1 rather than 0.02: finite differences of 1e-3 on vectors of 0.02
        // that a LayerNorm then scales up are far from linear.
        nn::init::normal_(lm.tok_emb->weight);
        nn::init::normal_(lm.pos_emb);
        INFO("CharTransformer norm_first " << first);
        check_gradcheck(gradcheck(lm, test::labels_of({0, 3, 1, 4, 2, 2}).reshape({2, 3})));
    }
    manual_seed(9);
    VisionTransformer vit(VisionTransformerOptions{.image_size = 4, .patch_size = 2, .num_classes = 3, .d_model = 4,
                                                   .num_layers = 1, .num_heads = 2, .dim_feedforward = 6});
    INFO("VisionTransformer");
    check_gradcheck(gradcheck(vit, randn({2, 1, 4, 4}).requires_grad_()));
    RowLSTM row(RowLSTMOptions{.rows = 3, .row_size = 2, .hidden_size = 3, .num_classes = 2});
    check_gradcheck(gradcheck(row, randn({2, 6}).requires_grad_()));
}

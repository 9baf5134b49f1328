// The libtorch idioms a C++ user types, each compiled here against the public target only (as a
// user's program would be) and checked to do what libtorch does.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "normnet/normnet.hpp"

using namespace normnet;
using Catch::Matchers::Contains;

TEST_CASE("idioms: options take libtorch's builder calls beside designated initialisers", "[idioms]") {
    // Braces for the positional arguments work with every C++20 compiler; parentheses, as in
    // libtorch, need C++20's parenthesised aggregate initialisation (GCC 10, clang 16).
    const SGDOptions sgd = SGDOptions{0.01}.momentum(0.5).nesterov(true);
    CHECK(sgd.lr() == 0.01);
    CHECK(sgd.momentum() == 0.5);
    CHECK(sgd.nesterov);
    CHECK(sgd.dampening == 0.0);  // untouched fields keep PyTorch's defaults
    const SGDOptions designated{.lr = 0.1, .momentum = 0.9};
    CHECK(designated.momentum == 0.9);
    const auto lstm = LSTMOptions{1, 64}.batch_first(true).num_layers(2);
    CHECK((lstm.input_size == 1 && lstm.hidden_size == 64 && lstm.batch_first && lstm.num_layers == 2));
    const auto layer = TransformerEncoderLayerOptions{32, 4}.dim_feedforward(64).activation("gelu");
    CHECK(layer.dim_feedforward() == 64);
    CHECK(layer.activation == "gelu");
    const auto conv = Conv2dOptions{1, 10, 5}.stride(2).bias(false);
    CHECK((conv.kernel_size.h == 5 && conv.stride.w == 2 && !conv.bias));
    const auto ce = CrossEntropyLossOptions().reduction(kSum).label_smoothing(0.1);
    CHECK(ce.reduction == kSum);
    CHECK(AdamOptions{}.betas(Betas{0.8, 0.9}).betas().first == 0.8);
    // Fields read and assign as plain values.
    SGDOptions o;
    o.lr = 0.5;
    o.momentum += 0.25;
    const double lr = o.lr;
    CHECK(lr == 0.5);
    CHECK(o.momentum == 0.25);
#ifdef __cpp_aggregate_paren_init
    const auto parens = SGDOptions(0.01).momentum(0.5);
    CHECK(parens.lr == 0.01);
    const auto lstm_parens = LSTMOptions(1, 64).batch_first(true);
    CHECK(lstm_parens.hidden_size == 64);
#endif
    // The options build the modules and optimizers as before.
    Linear fc(LinearOptions{3, 2}.bias(false));
    CHECK_FALSE(fc.bias.defined());
    SGD optimizer(fc.parameters(), SGDOptions{0.1}.momentum(0.9));
    CHECK(optimizer.options().momentum == 0.9);
}

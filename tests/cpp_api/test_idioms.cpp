// The libtorch idioms a C++ user types, each compiled here against the public target only (as a
// user's program would be) and checked to do what libtorch does: builder-style options beside
// designated initialisers, integer-dim reductions, equal/remainder/fmod/bernoulli, randint with a
// dtype, int32 and integer arithmetic, LSTM/GRU forward returning the states, module holders and
// NORMNET_MODULE, the nn::functional / optim / nn::utils names, param_groups(), saved_data values,
// named_parameters() lookups, the DataLoader's defaults and a torch.save file given as safetensors.
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

TEST_CASE("idioms: reductions take one integer dimension", "[idioms]") {
    const Tensor x = arange(6).reshape({2, 3});
    CHECK(equal(x.sum(1), tensor({3, 12})));
    CHECK(equal(x.mean(0), tensor({1.5, 2.5, 3.5})));
    CHECK(equal(sum(x, 1, true), tensor({3, 12}).reshape({2, 1})));
    auto [values, indices] = x.max(1);
    CHECK(equal(values, tensor({2, 5})));
    CHECK(equal(indices, tensor({2, 2}, kInt64)));
    CHECK(equal(x.amax(0), tensor({3, 4, 5})));
    CHECK(x.view(-1).dim() == 1);
    CHECK(zeros(5).shape() == Shape{5});
}

TEST_CASE("idioms: equal, remainder, fmod and bernoulli", "[idioms]") {
    CHECK(equal(tensor({1, 2}), tensor({1, 2})));
    CHECK_FALSE(equal(tensor({1, 2}), tensor({1, 3})));
    CHECK_FALSE(equal(tensor({1, 2}), tensor({1, 2, 3})));
    CHECK_FALSE(equal(tensor({NAN}), tensor({NAN})));  // as torch.equal
    // torch.remainder takes the divisor's sign, torch.fmod the dividend's.
    const Tensor a = tensor({-3, 3, -3, 3, 5.5f}), b = tensor({2, -2, -2, 2, 2});
    CHECK(equal(remainder(a, b), tensor({1, -1, -1, 1, 1.5f})));
    CHECK(equal(fmod(a, b), tensor({-1, 1, -1, 1, 1.5f})));
    CHECK(equal(remainder(a, 2.0), tensor({1, 1, 1, 1, 1.5f})));
    const Tensor ia = tensor({-7, 7, -7}, kInt64), ib = tensor({3, -3, -3}, kInt64);
    CHECK(equal(remainder(ia, ib), tensor({2, -2, -1}, kInt64)));
    CHECK(equal(fmod(ia, ib), tensor({-1, 1, -1}, kInt64)));
    CHECK(remainder(ia, 4).dtype() == kInt64);
    CHECK_THROWS_WITH(remainder(ia, 0), Contains("integer division by zero"));
    // Gradients as torch: d/da 1, d/db -floor(a / b).
    Tensor x = tensor({5.5f, -3}).requires_grad_(), d = tensor({2, 2}).requires_grad_();
    remainder(x, d).sum().backward();
    CHECK(equal(x.grad(), tensor({1, 1})));
    CHECK(equal(d.grad(), tensor({-2, 2})));
    Generator gen(1);
    const Tensor draws = bernoulli(full({1000}, 0.3), gen);
    CHECK(draws.dtype() == kFloat32);
    CHECK(equal(logical_or(draws == 0.0, draws == 1.0), ones({1000}, kBool)));
    CHECK(std::abs(draws.mean().item() - 0.3f) < 0.06f);
    CHECK(equal(bernoulli(zeros({4}), 1.0, gen), ones({4})));
    Tensor filled = empty({3});
    filled.bernoulli_(0.0, gen);
    CHECK(equal(filled, zeros({3})));
}

TEST_CASE("idioms: randint with a dtype, int32, item<int> and integer arithmetic", "[idioms]") {
    Generator gen(3);
    const Tensor r = randint(0, 10, {100}, kInt32, gen);
    CHECK(r.dtype() == kInt32);
    CHECK(r.min().item<int>() >= 0);
    CHECK(r.max().item<int>() < 10);
    Generator again(3);
    CHECK(equal(randint(0, 10, {100}, again).to(kInt32), r));  // the same draws as int64
    const Tensor i32 = tensor({1, 2, 3}, kInt32);
    CHECK(tensor({7}, kInt32).item<int>() == 7);
    CHECK(i32.sum().dtype() == kInt64);  // as torch
    CHECK(i32.sum().item<int>() == 6);
    CHECK((i32 + i32).dtype() == kInt32);
    CHECK((i32 + tensor({1}, kInt64)).dtype() == kInt64);
    CHECK(cat({i32, i32}).numel() == 6);
    CHECK(i32.str() == "tensor([1, 2, 3], dtype=torch.int32)");
    CHECK(tensor({2.0f}, kInt32).item<int>() == 2);
    CHECK(zeros({2}, kInt).dtype() == kInt32);
    // int64 arithmetic, in place and not: integers stay integers, / is true division.
    Tensor labels = tensor({1, 2, 3}, kInt64);
    labels += 1;
    labels *= 2;
    labels -= tensor({1, 1, 1}, kInt64);
    CHECK(equal(labels, tensor({3, 5, 7}, kInt64)));
    CHECK((labels + 1).dtype() == kInt64);
    CHECK((labels * 0.5f).dtype() == kFloat32);
    CHECK(equal(labels / 2, tensor({1.5, 2.5, 3.5})));
    CHECK((labels + tensor({0.5})).dtype() == kFloat32);
    CHECK_THROWS_WITH(labels += 0.5f, Contains("can't be cast to the desired output type int64"));
    CHECK_THROWS_WITH(labels /= 2.0f, Contains("can't be cast"));
    Tensor correct = zeros({}, kInt64);
    correct += (tensor({1, 2, 3}) == tensor({1, 0, 3})).sum();
    CHECK(correct.item<int64_t>() == 2);
}

TEST_CASE("idioms: LSTM and GRU forward return the states, for structured bindings", "[idioms]") {
    manual_seed(0);
    LSTM lstm(LSTMOptions{3, 5}.batch_first(true));
    const Tensor x = randn({2, 4, 3});
    auto [output, state] = lstm.forward(x);
    auto [h, c] = state;
    CHECK(output.shape() == Shape{2, 4, 5});
    CHECK(h.shape() == Shape{1, 2, 5});
    CHECK(c.shape() == Shape{1, 2, 5});
    auto [output2, state2] = lstm(x);  // operator() too, as libtorch's holder
    CHECK(equal(output2, output));
    GRU gru(GRUOptions{3, 5}.batch_first(true));
    auto [gru_out, h_n] = gru.forward(x);
    CHECK(h_n.shape() == Shape{1, 2, 5});
    // Seen as a Module (in a Sequential), the output alone.
    Module& as_module = lstm;
    CHECK(equal(as_module.forward(x), output));
}

namespace {

// A model written as in libtorch: holders declared empty or from arguments, registered by name.
struct NetImpl : nn::Module {
    NetImpl() : fc1(4, 8), fc2(nn::LinearOptions{8, 2}) {
        register_module("fc1", fc1);
        register_module("fc2", fc2);
        drop = register_module("drop", nn::Dropout(0.5));
    }
    Tensor forward(const Tensor& x) override {
        return fc2->forward(drop(nn::functional::relu(fc1(x))));
    }
    nn::Linear fc1, fc2;
    nn::Dropout drop{nullptr};
};
NORMNET_MODULE(Net);

}  // namespace

TEST_CASE("idioms: module holders share their module; NORMNET_MODULE declares one", "[idioms]") {
    manual_seed(0);
    Net net;
    CHECK(net->named_parameters().size() == 4);
    // The registered child is the member itself, not a copy.
    CHECK(net->named_children()[0].second.get() == net->fc1.get());
    net->fc1->weight.detach().fill_(0.0);
    CHECK(net->named_parameters()["fc1.weight"].abs().sum().item() == 0.0f);
    // Holders copy as handles; a Sequential of holders shares them.
    nn::Linear shared(3, 3);
    nn::Linear alias = shared;
    nn::Sequential seq{shared, nn::ReLU()};
    CHECK(seq->named_children()[0].second.get() == shared.get());
    CHECK(alias.get() == shared.get());
    nn::Linear empty_holder{nullptr};
    CHECK(empty_holder.is_empty());
    CHECK_THROWS_WITH(empty_holder->forward(ones({1, 3})), Contains("empty module holder"));
    net->eval();
    CHECK(net(ones({1, 4})).shape() == Shape{1, 2});
    // optim and nn::utils under libtorch's names.
    optim::SGD optimizer(net->parameters(), optim::SGDOptions{0.1}.momentum(0.9));
    net(ones({2, 4})).sum().backward();
    const double norm = nn::utils::clip_grad_norm_(net->parameters(), 1.0);
    CHECK(norm >= 0.0);
    optimizer.step();
}

TEST_CASE("idioms: param_groups() reads and sets each group's learning rate", "[idioms]") {
    Linear fc(3, 2);
    Adam optimizer(std::vector<ParamGroup>{ParamGroup(NamedTensors{{"w", fc.weight}}), ParamGroup(NamedTensors{{"b", fc.bias}}, {.lr = 0.5})},
                   AdamOptions{0.01});
    auto groups = optimizer.param_groups();
    REQUIRE(groups.size() == 2);
    CHECK(groups[0].options().get_lr() == 0.01);
    CHECK(groups[1].options().lr() == 0.5);
    for (auto& group : optimizer.param_groups()) group.options().set_lr(group.options().get_lr() / 10);
    CHECK(optimizer.lr(0) == Approx(0.001));
    CHECK(optimizer.lr(1) == Approx(0.05));
    CHECK(groups[1].params().size() == 1);
    CHECK(groups[1].params()[0].shares_storage(fc.bias));
    CHECK_THROWS_WITH(groups[0].options().set_lr(-1.0), Contains("invalid learning rate"));
}

namespace {
// scale * x^power, with the power and a note in saved_data beside a double.
struct Power : Function<Power> {
    static Tensor forward(AutogradContext* ctx, const Tensor& x, int64_t power, double scale) {
        ctx->save_for_backward({x});
        ctx->saved_data["power"] = power;
        ctx->saved_data["scale"] = scale;
        ctx->saved_data["shape"] = x.shape();
        ctx->saved_data["name"] = "power";
        ctx->saved_data["flag"] = true;
        return pow(x, static_cast<float>(power)) * static_cast<float>(scale);
    }
    static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
        const Tensor x = ctx->get_saved_variables()[0];
        const int64_t p = ctx->saved_data["power"].toInt();
        const double s = ctx->saved_data["scale"].toDouble();
        REQUIRE(ctx->saved_data["shape"].toIntVector() == x.shape().vec());
        REQUIRE(ctx->saved_data["name"].toStringRef() == "power");
        REQUIRE(ctx->saved_data["flag"].toBool());
        return {grads[0] * pow(x, static_cast<float>(p - 1)) * static_cast<float>(p * s), Tensor(), Tensor()};
    }
};
}  // namespace

TEST_CASE("idioms: saved_data holds integers, strings, bools, shapes and tensors", "[idioms]") {
    Tensor x = tensor({1, 2, 3}).requires_grad_();
    Power::apply(x, int64_t{3}, 0.5).sum().backward();
    CHECK(allclose(x.grad(), tensor({1.5, 6, 13.5})));
    IValue v = int64_t{4};
    CHECK(v.toDouble() == 4.0);
    CHECK_THROWS_WITH(v.toTensor(), "saved_data: the value is an integer, not a Tensor");
}

TEST_CASE("idioms: named_parameters() is used like libtorch's OrderedDict", "[idioms]") {
    Sequential model{Linear(3, 4), ReLU(), Linear(4, 2)};
    auto params = model.named_parameters();
    std::vector<std::string> keys;
    for (const auto& p : params) keys.push_back(p.key());
    CHECK(keys == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
    CHECK(params.keys() == keys);
    CHECK(params["2.bias"].shape() == Shape{2});
    CHECK(params.contains("0.weight"));
    CHECK(params.find("1.weight") == nullptr);
    CHECK_THROWS_WITH(params["1.weight"], Contains("no tensor named '1.weight'"));
    for (const auto& [name, tensor] : params) CHECK(tensor.requires_grad());
    CHECK(params[0].value().shares_storage(params.values()[0]));
}

TEST_CASE("idioms: DataLoader shuffles by default; image batches are [N, C, H, W]", "[idioms]") {
    auto data = std::make_shared<Dataset>();
    data->images = {.count = 64, .rows = 2, .cols = 3, .pixels = std::vector<uint8_t>(64 * 6)};
    for (int64_t i = 0; i < 64; ++i) data->labels.push_back(static_cast<uint8_t>(i % 10));
    for (int64_t i = 0; i < 64 * 6; ++i) data->images.pixels[static_cast<size_t>(i)] = static_cast<uint8_t>(i / 6);
    const auto first_samples = [&](DataLoaderOptions options) {
        DataLoader loader(data, options);
        const Batch& first = *loader.begin();
        REQUIRE(first.inputs.shape() == Shape{16, 1, 2, 3});
        return (first.inputs.select(1, 0).select(1, 0).select(1, 0) * 255.0f).to(kInt64);  // pixel 0 = sample index
    };
    CHECK(DataLoaderOptions{16}.shuffle);
    CHECK_FALSE(equal(first_samples(DataLoaderOptions{16}), arange(16, kInt64)));
    CHECK(equal(first_samples(DataLoaderOptions{16}.shuffle(false)), arange(16, kInt64)));
}

TEST_CASE("idioms: a torch.save file given as safetensors says what it is and how to convert it", "[idioms]") {
    const auto dir = std::filesystem::temp_directory_path() / ("normnet_idioms_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string zip = (dir / "model.pt").string(), pickle = (dir / "legacy.pt").string();
    std::ofstream(zip, std::ios::binary) << std::string("PK\x03\x04\x00\x00\x08\x00archive/data.pkl", 24);
    std::ofstream(pickle, std::ios::binary) << std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8", 12);
    CHECK_THROWS_WITH(load_safetensors(zip), Contains("a PyTorch file (a zip archive, as torch.save and libtorch's "
                                                      "torch::save write), not safetensors") &&
                                                 Contains("safetensors.torch.save_file("));
    CHECK_THROWS_WITH(load_safetensors(pickle), Contains("a pickle, as torch.save wrote before PyTorch 1.6"));
    Sequential model{Linear(2, 2)};
    CHECK_THROWS_WITH(load(model, zip), Contains("not safetensors"));
    // A safetensors header of 0x280 bytes begins as a pickle does (0x80, 0x02): still safetensors.
    const std::string header = "{\"__metadata__\": {\"k\": \"v\"}}" + std::string(640 - 28, ' ');
    const std::string length("\x80\x02\x00\x00\x00\x00\x00\x00", 8);
    std::ofstream(dir / "tricky.safetensors", std::ios::binary) << length << header;
    CHECK(load_safetensors((dir / "tricky.safetensors").string()).metadata.at("k") == "v");
    std::filesystem::remove_all(dir);
}

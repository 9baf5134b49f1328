// Dropout (functional and module), Flatten, Unflatten, ModuleList, ModuleDict, Functional, the
// tree walks (named_modules, modules, children, apply), clone() and Sequential's handling of
// named modules: PyTorch's names, reprs and semantics.
#include <cmath>

#include "test_helpers.hpp"

using namespace normnet;

namespace {

std::vector<std::string> keys(const NamedTensors& named) {
    std::vector<std::string> out;
    for (const auto& [k, v] : named) out.push_back(k);
    return out;
}

std::vector<std::string> names(const NamedModules& named) {
    std::vector<std::string> out;
    for (const auto& [k, v] : named) out.push_back(k);
    return out;
}

void require_gradcheck(const GradcheckResult& r) {
    INFO(r.message);
    REQUIRE(r.ok);
    REQUIRE(r.checked > 0);
}

// A model of our own, cloneable because it derives from Cloneable<Net> and has a default constructor.
struct Net : Cloneable<Net> {
    std::shared_ptr<Linear> fc;
    std::shared_ptr<BatchNorm1d> bn;
    Tensor scale;
    Net() {
        fc = register_module("fc", Linear(4, 4));
        bn = register_module("bn", BatchNorm1d(4));
        scale = register_parameter("scale", ones({4}));
    }
    Tensor forward(const Tensor& x) override { return mul(bn->forward(fc->forward(x)), scale); }
};

}  // namespace

TEST_CASE("dropout: torch's semantics for p, training and the scale", "[nn][modules][dropout]") {
    Generator gen(1);
    const Tensor x = randn({1000, 1000}, gen);
    // Nothing to do: the input itself comes back.
    CHECK(dropout(x, 0.0, true).impl_ptr() == x.impl_ptr());
    CHECK(dropout(x, 0.5, false).impl_ptr() == x.impl_ptr());
    const Tensor y = dropout(x, 0.3, true, gen);
    const auto xs = x.to_vector(), ys = y.to_vector();
    int64_t dropped = 0, wrong = 0;
    const float scale = 1.0f / 0.7f;
    for (size_t i = 0; i < xs.size(); ++i) {
        if (ys[i] == 0.0f && xs[i] != 0.0f) {
            ++dropped;
        } else {
            wrong += ys[i] != xs[i] * scale;
        }
    }
    CHECK(wrong == 0);
    // 300,000 expected, standard deviation sqrt(1e6 * 0.3 * 0.7) = 458.
    CHECK(std::abs(static_cast<double>(dropped) - 3e5) < 5 * 458.0);
    // p = 1: x * 0, so a dropped -x is -0 and a dropped inf is nan, as torch.
    const std::vector<float> all = dropout(tensor({-2.0f, INFINITY, 3.0f}), 1.0, true).to_vector();
    CHECK(std::signbit(all[0]));
    CHECK(std::isnan(all[1]));
    CHECK(all[2] == 0.0f);
    CHECK_THROWS_WITH(dropout(x, 1.5), Catch::Contains("dropout: dropout probability has to be between 0 and 1, but got 1.5"));
    CHECK_THROWS_WITH(dropout(zeros({2}, kInt64)), Catch::Contains("dropout: expected a float32 tensor, got int64"));
}

TEST_CASE("dropout: the mask is reproducible from the seed, whatever the thread count", "[nn][modules][dropout]") {
    const test::ThreadsGuard restore;
    const Tensor x = ones({300, 1000});  // several mask chunks
    std::vector<float> first;
    for (const int threads : {1, 2}) {
        set_num_threads(threads);
        Generator gen(42);
        const auto y = dropout(x, 0.5, true, gen).to_vector();
        if (first.empty()) {
            first = y;
        } else {
            CHECK(y == first);
        }
        // The generator moved on: the next mask differs.
        CHECK(dropout(x, 0.5, true, gen).to_vector() != first);
    }
    manual_seed(3);
    const auto a = dropout(x, 0.2).to_vector();
    manual_seed(3);
    CHECK(dropout(x, 0.2).to_vector() == a);
}

TEST_CASE("dropout: the backward goes through the saved mask", "[nn][modules][dropout][gradcheck]") {
    require_gradcheck(gradcheck(
        [](const std::vector<Tensor>& in) {
            Generator gen(5);  // the same mask on every call
            return dropout(in[0], 0.4, true, gen);
        },
        {randn({7, 9}).requires_grad_()}));
    Tensor x = randn({4, 5}).requires_grad_();
    Generator gen(6);
    const Tensor y = dropout(x.t(), 0.5, true, gen);  // a strided input
    y.backward(ones({5, 4}));
    const auto g = x.grad().t().contiguous().to_vector(), out = y.to_vector(), in = x.t().contiguous().to_vector();
    for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == (out[i] == 0.0f && in[i] != 0.0f ? 0.0f : 2.0f));
    Tensor all = randn({3}).requires_grad_();
    dropout(all, 1.0).backward(ones({3}));
    CHECK(all.grad().to_vector() == std::vector<float>(3, 0.0f));
}

TEST_CASE("modules: Dropout, Flatten and Unflatten", "[nn][modules]") {
    Dropout drop(0.25);
    CHECK(drop.to_string() == "Dropout(p=0.25, inplace=False)");
    CHECK(Dropout().options().p == 0.5);
    const Tensor x = randn({8, 16});
    CHECK_FALSE(test::bit_equal(drop(x), x));
    drop.eval();
    CHECK(drop(x).impl_ptr() == x.impl_ptr());
    CHECK_THROWS_WITH(Dropout(-0.1), Catch::Contains("Dropout: dropout probability has to be between 0 and 1"));

    Flatten flatten;
    CHECK(flatten.to_string() == "Flatten(start_dim=1, end_dim=-1)");
    CHECK(flatten(zeros({2, 3, 4, 5})).shape() == Shape{2, 60});
    CHECK(Flatten(0)(zeros({2, 3, 4})).shape() == Shape{24});
    CHECK(Flatten(FlattenOptions{.start_dim = 1, .end_dim = 2})(zeros({2, 3, 4, 5})).shape() == Shape{2, 12, 5});
    Unflatten unflatten(1, {2, 5});
    CHECK(unflatten.to_string() == "Unflatten(dim=1, unflattened_size=(2, 5))");
    CHECK(unflatten(zeros({3, 10})).shape() == Shape{3, 2, 5});
    CHECK(Unflatten(-1, {-1, 2})(zeros({3, 10})).shape() == Shape{3, 5, 2});
    CHECK_THROWS_WITH(unflatten(zeros({3, 9})),
                      Catch::Contains("Unflatten: provided sizes [2, 5] don't multiply up to the size of dim 1 (9)"));
    CHECK_THROWS_WITH(Unflatten(2, {1})(zeros({3})), Catch::Contains("Unflatten: dimension 2 is out of range"));
    // Both pass gradients through, also from a strided input.
    Sequential reshape{Flatten(), Unflatten(1, {4, 3})};
    require_gradcheck(gradcheck([&](const std::vector<Tensor>& in) { return reshape(in[0].transpose(1, 2)); },
                                {randn({2, 3, 4}).requires_grad_()}));
}

TEST_CASE("modules: ModuleList and ModuleDict name their children as PyTorch", "[nn][modules]") {
    ModuleList list{Linear(2, 3), ReLU()};
    list.push_back(std::make_shared<Linear>(3, 1));
    CHECK(list.size() == 3);
    CHECK(keys(list.state_dict()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
    CHECK(list.to_string() ==
          "ModuleList(\n"
          "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
          "  (1): ReLU()\n"
          "  (2): Linear(in_features=3, out_features=1, bias=True)\n"
          ")");
    Tensor h = ones({4, 2});
    for (const auto& m : list) h = m->forward(h);
    CHECK(h.shape() == Shape{4, 1});
    CHECK(list.at<Linear>(2)->weight.shape() == Shape{1, 3});
    CHECK_THROWS_WITH(list.at<Linear>(1), Catch::Contains("ModuleList::at: module 1 is a ReLU"));
    CHECK_THROWS_WITH(list[3], Catch::Contains("ModuleList: index 3 is out of range for 3 modules"));
    CHECK_THROWS_WITH(list(h), Catch::Contains("ModuleList has no single-input forward()"));
    ModuleList more;
    more.extend(list);
    CHECK(more[2] == list[2]);  // extend shares

    ModuleDict dict{{"fc", Linear(2, 2)}, {"act", ReLU()}};
    dict.insert("out", Linear(2, 1));
    CHECK(dict.keys() == std::vector<std::string>{"fc", "act", "out"});
    CHECK(keys(dict.state_dict()) == std::vector<std::string>{"fc.weight", "fc.bias", "out.weight", "out.bias"});
    CHECK(dict.to_string() ==
          "ModuleDict(\n"
          "  (fc): Linear(in_features=2, out_features=2, bias=True)\n"
          "  (act): ReLU()\n"
          "  (out): Linear(in_features=2, out_features=1, bias=True)\n"
          ")");
    CHECK(dict.contains("act"));
    CHECK(dict.at<Linear>("out")->weight.shape() == Shape{1, 2});
    // Inserting under a taken key replaces, in place; pop removes.
    dict.insert("fc", Linear(2, 5));
    CHECK(dict.at<Linear>("fc")->weight.shape() == Shape{5, 2});
    CHECK(dict.keys() == std::vector<std::string>{"fc", "act", "out"});
    CHECK(dict.pop("act")->type_name() == "ReLU");
    CHECK(dict.keys() == std::vector<std::string>{"fc", "out"});
    CHECK(dict.values().size() == 2);
    CHECK_THROWS_WITH(dict["nope"], Catch::Contains("ModuleDict: no module under key 'nope'"));
    CHECK_THROWS_WITH(dict.insert("a.b", ReLU()), Catch::Contains("invalid module member name 'a.b'"));
    CHECK_THROWS_WITH(dict.at<ReLU>("out"), Catch::Contains("ModuleDict::at: module 'out' is a Linear"));
}

TEST_CASE("modules: Functional puts a function in a Sequential", "[nn][modules]") {
    Sequential model{Linear(3, 4), Functional(relu), Functional(log_softmax, 1),
                     Functional([](const Tensor& x) { return mul(x, 2.0f); })};
    CHECK(model.to_string().find("(1): Functional()") != std::string::npos);
    const Tensor x = randn({2, 3});
    const Tensor want = mul(log_softmax(relu(model.at<Linear>(0)->forward(x)), 1), 2.0f);
    CHECK(test::bit_equal(model(x), want));
    CHECK_THROWS_WITH(Functional(Functional::Function()), Catch::Contains("Functional: the function is empty"));
}

TEST_CASE("modules: named_modules, modules, children and apply walk the tree as PyTorch", "[nn][modules]") {
    auto shared = std::make_shared<Linear>(4, 4);
    Sequential model{Linear(3, 4), Sequential{ReLU(), shared}, shared, Net()};
    CHECK(names(model.named_modules()) ==
          std::vector<std::string>{"", "0", "1", "1.0", "1.1", "3", "3.fc", "3.bn"});  // "2" is "1.1" again
    CHECK(names(model.named_modules("model", false)) ==
          std::vector<std::string>{"model.0", "model.1", "model.1.0", "model.1.1", "model.3", "model.3.fc", "model.3.bn"});
    CHECK(model.named_modules()[0].second.get() == &model);
    CHECK(model.modules().size() == 8);
    CHECK(model.modules(false).size() == 7);
    CHECK(model.children().size() == 4);
    CHECK(model.children()[2] == shared);
    // apply: each child's subtree first, then the module itself (PyTorch's order).
    std::vector<std::string> order;
    model.apply([&](Module& m) { order.push_back(m.type_name()); });
    CHECK(order == std::vector<std::string>{"Linear", "ReLU", "Linear", "Sequential", "Linear", "Linear", "BatchNorm1d",
                                            "Net", "Sequential"});
}

TEST_CASE("modules: clone() is a deep copy of every module type", "[nn][modules][clone]") {
    manual_seed(0);
    Sequential model{Linear(3, 4), LayerNorm({4}), Dropout(0.1), Net(), Flatten(), Unflatten(1, {2, 2}),
                     ModuleList{RMSNorm({2}), Identity()}, ModuleDict{{"act", ReLU()}}, Functional(relu)};
    auto bn = model.at<Net>(3)->bn;
    bn->forward(randn({5, 4}));  // running statistics and num_batches_tracked move
    model.at<Net>(3)->scale.set_grad(ones({4}));
    model.at<Linear>(0)->bias.requires_grad_(false);
    model[1]->eval();
    const std::array<uint64_t, 4> rng = default_generator().state();

    const std::shared_ptr<Module> copy = model.clone();
    CHECK(default_generator().state() == rng);  // rebuilding drew nothing from the generator
    CHECK(copy->to_string() == model.to_string());
    const NamedTensors a = model.state_dict(), b = copy->state_dict();
    REQUIRE(keys(a) == keys(b));
    for (size_t i = 0; i < a.size(); ++i) {
        INFO(a[i].first);
        CHECK(test::bit_equal(a[i].second, b[i].second));
        CHECK_FALSE(a[i].second.shares_storage(b[i].second));
        CHECK(a[i].second.requires_grad() == b[i].second.requires_grad());
    }
    CHECK(find_tensor(b, "3.bn.num_batches_tracked").item<int64_t>() == 1);
    CHECK_FALSE(find_tensor(b, "0.bias").requires_grad());
    CHECK_FALSE(find_tensor(copy->named_parameters(), "3.scale").grad().defined());  // gradients are not copied
    const auto modes = [](const Module& m) {
        std::vector<bool> out;
        for (const auto& sub : m.modules()) out.push_back(sub->is_training());
        return out;
    };
    CHECK(modes(*copy) == modes(model));
    // The copy's members are its own: forward uses the copied parameters.
    auto& twin = dynamic_cast<Sequential&>(*copy);
    CHECK(twin.at<Net>(3)->fc->weight.shares_storage(find_tensor(b, "3.fc.weight")));
    model.eval();
    twin.eval();
    const auto run = [](const Sequential& m, const Tensor& x) {  // up to the containers, which have no forward
        Tensor h = x;
        for (size_t i = 0; i < 6; ++i) h = m[i]->forward(h);
        return h;
    };
    const Tensor x = randn({2, 3});
    CHECK(test::bit_equal(run(twin, x), run(model, x)));
    {
        NoGradGuard no_grad;
        twin.at<Linear>(0)->weight.fill_(0.0);
    }
    CHECK_FALSE(test::bit_equal(run(twin, x), run(model, x)));
    CHECK(model.at<Linear>(0)->weight.to_vector() != std::vector<float>(12, 0.0f));

    // A module that is not Cloneable says what to do; one whose constructor does not make its
    // structure says so too.
    struct Plain : Module {};
    CHECK_THROWS_WITH(Plain().clone(), Catch::Contains("Plain does not support clone(): derive it from Cloneable<Plain>"));
    Net grown;
    grown.register_parameter("extra", ones({1}));
    CHECK_THROWS_WITH(grown.clone(), Catch::Contains("clone: the rebuilt Net has 1 parameters, the original 2"));
}

TEST_CASE("modules: Sequential moves temporaries, shares shared_ptrs, copies only through clone()", "[nn][modules]") {
    Linear named(3, 2);
    auto shared = std::make_shared<Linear>(2, 2);
    Linear moved(2, 2);
    const Tensor moved_weight = moved.weight;
    // A named module value is refused at compile time (tests/cpp_api/compile_fail); a copy is
    // asked for with clone().
    Sequential model{named.clone(), ReLU(), shared, std::move(moved)};
    // The clone: same values, its own storage.
    CHECK(test::bit_equal(model.at<Linear>(0)->weight, named.weight));
    CHECK_FALSE(model.at<Linear>(0)->weight.shares_storage(named.weight));
    CHECK(model[2] == shared);
    CHECK(model.at<Linear>(3)->weight.shares_storage(moved_weight));
    const Sequential& as_const = model;
    Sequential nested;
    nested.push_back(as_const.clone());
    CHECK(nested.at<Sequential>(0)->size() == 4);
}

TEST_CASE("channel dropout: whole channels, torch's scale, the seed's mask, eval", "[nn][modules][dropout]") {
    Generator gen(11);
    const Tensor x = rand({200, 50, 3, 4}, gen) + 1.0f;  // no zeros of its own
    const Tensor y = dropout2d(x, 0.3, true, gen);
    const auto xs = x.to_vector(), ys = y.to_vector();
    int64_t dropped = 0, wrong = 0;
    const float scale = 1.0f / 0.7f;
    for (int64_t c = 0; c < 200 * 50; ++c) {
        const bool zero = ys[static_cast<size_t>(c * 12)] == 0.0f;
        dropped += zero;
        for (int64_t k = 0; k < 12; ++k) {
            const auto i = static_cast<size_t>(c * 12 + k);
            wrong += zero ? ys[i] != 0.0f : ys[i] != xs[i] * scale;
        }
    }
    CHECK(wrong == 0);
    // 3,000 channels expected, standard deviation sqrt(1e4 * 0.3 * 0.7) = 46.
    CHECK(std::abs(static_cast<double>(dropped) - 3000.0) < 5 * 46.0);
    // The same seed, the same channels; the gradient goes through the kept channels, scaled.
    Generator a(3), b(3);
    Tensor leaf = x.detach().requires_grad_();
    const Tensor z = dropout2d(leaf, 0.5, true, a);
    CHECK(test::bit_equal(z, dropout2d(x, 0.5, true, b)));
    z.backward(ones(z.shape()));
    const auto g = leaf.grad().to_vector(), zs = z.to_vector();
    for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == (zs[i] == 0.0f ? 0.0f : 2.0f));
    // The ranks torch takes: dropout1d [C, L] and dropout3d [C, D, H, W] are one sample.
    const Tensor unbatched = dropout1d(ones({1000, 4}), 0.5, true, gen);
    CHECK(unbatched.shape() == Shape{1000, 4});
    const auto u = unbatched.to_vector();
    for (size_t c = 0; c < 1000; ++c) CHECK(u[c * 4] == u[c * 4 + 3]);
    CHECK_THROWS_WITH(dropout1d(ones({2, 3, 4, 5})), Catch::Contains("dropout1d: Expected 2D or 3D input, but received a 4D input"));
    CHECK_THROWS_WITH(dropout2d(ones({3})), Catch::Contains("Feature dropout requires at least 2 dimensions"));
    CHECK_THROWS_WITH(feature_dropout(ones({3, 2}), 1.5), Catch::Contains("dropout probability has to be between 0 and 1"));

    Dropout2d layer(0.25);
    CHECK(layer.to_string() == "Dropout2d(p=0.25, inplace=False)");
    CHECK(Dropout1d().to_string() == "Dropout1d(p=0.5, inplace=False)");
    CHECK(Dropout3d(Dropout3dOptions{.p = 0.1}).to_string() == "Dropout3d(p=0.1, inplace=False)");
    FeatureDropout old_name(0.5);  // libtorch 1.0-1.4's name, as the old cpp/mnist example wrote it
    CHECK(old_name.to_string() == "Dropout2d(p=0.5, inplace=False)");
    CHECK_FALSE(test::bit_equal(layer(x), x));
    layer.eval();
    CHECK(layer(x).impl_ptr() == x.impl_ptr());
    CHECK_THROWS_WITH(Dropout2d(1.5), Catch::Contains("Dropout2d: dropout probability has to be between 0 and 1, but got 1.5"));
    CHECK(std::dynamic_pointer_cast<Dropout2d>(layer.clone())->options().p == 0.25);
}

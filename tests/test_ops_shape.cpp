// The shape and indexing family against PyTorch (tests/golden/gen_shape.py), gradcheck of every
// differentiable op, views sharing storage, the factories, and the error messages.
#include "op_test_helpers.hpp"
#include "tensor_impl.hpp"

using namespace normnet;
using test::Inputs;
using test::input;
using test::require_gradcheck;
using test::leaf;
using test::require_close;

namespace {

Tensor indices(std::initializer_list<int64_t> values, const Shape& shape) {
    const std::vector<int64_t> v(values);
    return from_vector(v, shape);
}

}  // namespace

TEST_CASE("shape ops match PyTorch's outputs and gradients", "[ops][shape]") {
    const SafetensorsData g = test::golden("shape.safetensors");
    using test::run_golden_case;
    run_golden_case(g, "cat1", {"a", "b", "c"}, [](Inputs& in) { return cat({in["a"], in["b"], in["c"]}, 1); });
    run_golden_case(g, "cat0", {"a", "b", "c"}, [](Inputs& in) { return cat({in["a"], in["b"], in["c"]}); });
    run_golden_case(g, "cat_legacy", {"a", "b"}, [](Inputs& in) { return cat({in["a"], in["b"]}, -1); });
    run_golden_case(g, "cat3d", {"a", "b"}, [](Inputs& in) { return cat(std::vector<Tensor>{in["a"], in["b"]}, -2); });
    run_golden_case(g, "stack1", {"a", "b", "c"}, [](Inputs& in) { return stack({in["a"], in["b"], in["c"]}, 1); });
    run_golden_case(g, "stack_last", {"a", "b"}, [](Inputs& in) { return stack({in["a"], in["b"]}, -1); });
    run_golden_case(g, "split", {"x"}, [](Inputs& in) {
        const auto p = split(in["x"], 3);
        REQUIRE(p.size() == 3);
        return cat({p[0], p[2]});
    });
    run_golden_case(g, "split_sizes", {"x"}, [](Inputs& in) {
        const auto p = in["x"].split_with_sizes({1, 0, 3, 2}, 1);
        return cat({p[2], p[3]}, 1);
    });
    run_golden_case(g, "chunk", {"x"}, [](Inputs& in) {
        const auto p = in["x"].chunk(3, 1);
        REQUIRE(p.size() == 3);
        return stack({p[0], p[1]});
    });
    run_golden_case(g, "unbind", {"x"}, [](Inputs& in) {
        const auto p = unbind(in["x"], 1);
        return cat({p[0], p[2]});
    });
    run_golden_case(g, "permute", {"x"}, [](Inputs& in) { return in["x"].permute({2, 0, 1}); });
    run_golden_case(g, "permute_t", {"x"}, [](Inputs& in) { return permute(in["x"].unsqueeze(0), {2, 0, 1}); });
    run_golden_case(g, "unsqueeze", {"x"}, [](Inputs& in) { return unsqueeze(in["x"].unsqueeze(-1), 0); });
    run_golden_case(g, "squeeze", {"x"}, [](Inputs& in) { return squeeze(in["x"]); });
    run_golden_case(g, "squeeze_dim", {"x"}, [](Inputs& in) { return in["x"].squeeze(2).squeeze(1); });
    run_golden_case(g, "expand", {"x"}, [](Inputs& in) { return in["x"].expand({2, 3, 4}); });
    run_golden_case(g, "expand_keep", {"x"}, [](Inputs& in) { return in["x"].expand({3, -1}); });
    run_golden_case(g, "flatten", {"x"}, [](Inputs& in) { return flatten(in["x"], 1); });
    run_golden_case(g, "flatten_t", {"x"}, [](Inputs& in) { return in["x"].flatten(); });
    run_golden_case(g, "unflatten", {"x"}, [](Inputs& in) { return in["x"].unflatten(1, {3, -1}); });
    run_golden_case(g, "unflatten_t", {"x"}, [](Inputs& in) { return unflatten(in["x"], 1, {2, 3}); });
    run_golden_case(g, "slice_step", {"x"}, [](Inputs& in) { return in["x"].slice(1, 1, 6, 2); });
    run_golden_case(g, "slice_neg", {"x"}, [](Inputs& in) { return in["x"].slice(0, -4, -1); });
    run_golden_case(g, "repeat", {"x"}, [](Inputs& in) { return in["x"].repeat({2, 1, 3}); });
    run_golden_case(g, "repeat_1d", {"x"}, [](Inputs& in) { return in["x"].repeat({2, 2}); });
    run_golden_case(g, "repeat_t", {"x"}, [](Inputs& in) { return in["x"].repeat({2, 2}); });
}

TEST_CASE("index ops match PyTorch's outputs and gradients", "[ops][shape]") {
    const SafetensorsData g = test::golden("shape.safetensors");
    using test::run_golden_case;
    const std::vector<std::string> index{"index"};
    run_golden_case(g, "index_select", {"x", "index"}, [](Inputs& in) { return index_select(in["x"], 1, in["index"]); }, index);
    run_golden_case(g, "index_select0", {"x", "index"}, [](Inputs& in) { return in["x"].index_select(0, in["index"]); }, index);
    run_golden_case(g, "index_select_empty", {"x", "index"}, [](Inputs& in) { return in["x"].index_select(0, in["index"]); }, index);
    run_golden_case(g, "gather1", {"x", "index"}, [](Inputs& in) { return gather(in["x"], 1, in["index"]); }, index);
    run_golden_case(g, "gather0", {"x", "index"}, [](Inputs& in) { return in["x"].gather(0, in["index"]); }, index);
    run_golden_case(g, "gather_t", {"x", "index"}, [](Inputs& in) { return in["x"].gather(1, in["index"]); }, index);
    run_golden_case(g, "scatter_add", {"x", "index", "src"},
                    [](Inputs& in) { return scatter_add(in["x"], 0, in["index"], in["src"]); }, index);
    run_golden_case(g, "scatter_add1", {"x", "index", "src"},
                    [](Inputs& in) { return in["x"].scatter_add(1, in["index"], in["src"]); }, index);
    const std::vector<std::string> ind{"indices"};
    run_golden_case(g, "embedding", {"weight", "indices"}, [](Inputs& in) { return embedding(in["indices"], in["weight"]); }, ind);
    run_golden_case(g, "embedding_pad", {"weight", "indices"},
                    [](Inputs& in) { return embedding(in["indices"], in["weight"], 2); }, ind);
    run_golden_case(g, "embedding_padneg", {"weight", "indices"},
                    [](Inputs& in) { return embedding(in["indices"], in["weight"], -1); }, ind);
    run_golden_case(g, "one_hot", {"indices"}, [](Inputs& in) { return one_hot(in["indices"], 5); }, ind);
    run_golden_case(g, "one_hot_infer", {"indices"}, [](Inputs& in) { return one_hot(in["indices"]); }, ind);
}

TEST_CASE("linspace matches PyTorch", "[ops][shape]") {
    const SafetensorsData g = test::golden("shape.safetensors");
    require_close(linspace(0.0, 1.0, 5), g.at("linspace5.y"), 0.0, "linspace5");
    require_close(linspace(-2.0, 3.0, 7), g.at("linspace7.y"), 1e-7, "linspace7");
    require_close(linspace(3.0, 9.0, 1), g.at("linspace1.y"), 0.0, "linspace1");
    require_close(linspace(1.0, -1.0, 4), g.at("linspace_desc.y"), 1e-7, "linspace_desc");
    CHECK(linspace(0, 1, 0).numel() == 0);
    CHECK(linspace(0, 4, 5, kInt64).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
}

TEST_CASE("shape ops pass gradcheck", "[ops][shape][gradcheck]") {
    const Tensor a = input({2, 3}, 1), b = input({2, 2}, 2), c = input({3, 2}, 3);
    require_gradcheck([](auto& in) { return cat({in[0], in[1], in[2].t()}, 1); }, {a, b, c});
    require_gradcheck([](auto& in) { return stack({in[0], in[1].t(), in[0]}, 2); }, {a, c});
    const Tensor x = input({2, 3, 4}, 4);
    require_gradcheck([](auto& in) { return in[0].permute({1, 2, 0}); }, {x});
    require_gradcheck([](auto& in) { return in[0].transpose(0, 2).unsqueeze(1).squeeze(); }, {x});
    require_gradcheck([](auto& in) { return in[0].narrow(2, 1, 2).expand({3, 2, 3, 2}); }, {x});
    require_gradcheck([](auto& in) { return in[0].transpose(1, 2).repeat({2, 1, 1, 2}); }, {x});
    require_gradcheck([](auto& in) { return in[0].slice(2, 0, 4, 3).unflatten(1, {1, 3}); }, {x});
    require_gradcheck([](auto& in) {
        const auto parts = in[0].chunk(3, 2);
        return cat({parts[1], parts[0]}, 2);
    }, {x});
    const Tensor idx = indices({2, 0, 2}, {3});
    require_gradcheck([&](auto& in) { return index_select(in[0].transpose(0, 1), 0, idx); }, {x});
    const Tensor gi = indices({0, 2, 2, 1, 0, 0}, {2, 3});
    require_gradcheck([&](auto& in) { return gather(in[0], 1, gi); }, {a});
    require_gradcheck([&](auto& in) { return scatter_add(in[0], 1, gi, in[1]); }, {a, input({2, 4}, 5)});
    const Tensor ei = indices({1, 3, 1, 0}, {2, 2});
    require_gradcheck([&](auto& in) { return embedding(ei, in[0]); }, {input({4, 3}, 6)});  // padding: golden only (its row gets no gradient by design)
}

TEST_CASE("views share storage and are marked as views", "[ops][shape]") {
    Tensor x = arange(24).view({2, 3, 4});
    for (const Tensor& v : {x.permute({2, 0, 1}), x.unsqueeze(1), x.squeeze(), x.unflatten(2, {2, 2}),
                            x.slice(2, 1, 4, 2), x.narrow(0, 1, 1).expand({3, 3, 4}), x.transpose(0, 1), x.select(1, 2),
                            x.split(2, 2)[1], x.chunk(2, 1)[0], x.unbind(0)[1]}) {
        CHECK(v.shares_storage(x));
        CHECK(v.impl().is_view);
    }
    CHECK(x.permute({2, 0, 1}).at({3, 1, 2}) == x.at({1, 2, 3}));
    CHECK(x.slice(2, 1, 4, 2).shape() == Shape{2, 3, 2});
    CHECK(x.slice(2, 1, 4, 2).at({1, 2, 1}) == x.at({1, 2, 3}));
    CHECK(x.slice(1, -10, 10).shape() == x.shape());  // bounds clamped, as Python slicing
    CHECK(x.slice(1, 2, 1).shape() == Shape{2, 0, 4});
    CHECK(x.expand({5, 2, 3, 4}).strides() == Shape{0, 12, 4, 1});
    CHECK(x.unsqueeze(-1).shape() == Shape{2, 3, 4, 1});
    CHECK(x.squeeze(1).shape() == x.shape());  // not size 1: unchanged, as torch
    CHECK(x.transpose(1, 2).unflatten(1, {2, 2}).at({1, 1, 0, 2}) == x.at({1, 2, 2}));
    // A non-contiguous input to cat, repeat and clone is read through its strides.
    const Tensor t = x.transpose(0, 2);
    CHECK(cat({t, t}, 0).narrow(0, 4, 4).contiguous().to_vector() == t.contiguous().to_vector());
    CHECK(t.repeat({1, 1, 2}).narrow(2, 2, 2).contiguous().to_vector() == t.contiguous().to_vector());
    // int64 tensors go through cat, stack, repeat and the index ops too.
    const Tensor i = arange(6, kInt64).view({2, 3});
    CHECK(cat({i, i}, 1).dtype() == kInt64);
    CHECK(stack({i, i}).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5});
    CHECK(i.repeat({1, 2}).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5});
    CHECK(i.index_select(1, indices({2, 0}, {2})).to_vector<int64_t>() == std::vector<int64_t>{2, 0, 5, 3});
    CHECK(i.gather(1, indices({1, 1, 0, 2}, {2, 2})).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 3, 5});
}

TEST_CASE("randint and randperm are seeded and in range", "[ops][shape]") {
    Generator g1(7), g2(7);
    const Tensor a = randint(-3, 5, {1000}, g1), b = randint(-3, 5, {1000}, g2);
    CHECK(a.dtype() == kInt64);
    CHECK(a.to_vector<int64_t>() == b.to_vector<int64_t>());
    const auto v = a.to_vector<int64_t>();
    CHECK(*std::min_element(v.begin(), v.end()) == -3);
    CHECK(*std::max_element(v.begin(), v.end()) == 4);
    CHECK(randint(3, {2, 2}).shape() == Shape{2, 2});
    Tensor p = randperm(50, g1);
    auto pv = p.to_vector<int64_t>();
    CHECK(pv != arange(50, kInt64).to_vector<int64_t>());
    std::sort(pv.begin(), pv.end());
    CHECK(pv == arange(50, kInt64).to_vector<int64_t>());
    CHECK(randperm(0).numel() == 0);
    CHECK_THROWS_WITH(randint(2, 2, {1}), Catch::Contains("randint: expected 'low' to be less than 'high'"));
}

TEST_CASE("shape and index ops reject bad arguments with clear messages", "[ops][shape]") {
    const Tensor a = zeros({2, 3}), b = zeros({2, 4});
    CHECK_THROWS_WITH(cat({a, b}), Catch::Contains("cat: sizes of tensors must match except in dimension 0. Expected size 3 "
                                                   "but got size 4 for tensor number 1"));
    CHECK(cat({a, zeros({2, 3}, kInt64)}).dtype() == kFloat32);  // promoted, as torch (the op table checks values)
    CHECK_THROWS_WITH(a.expand({-2, 3}), Catch::Contains("expand: invalid size -2"));
    CHECK_THROWS_WITH(cat({a, zeros({2, 3, 1})}), Catch::Contains("cat: tensors must have same number of dimensions"));
    CHECK_THROWS_WITH(cat(std::vector<Tensor>{}), Catch::Contains("cat: expected a non-empty list of tensors"));
    CHECK_THROWS_WITH(cat({a}, 2), Catch::Contains("cat: dimension 2 out of range"));
    CHECK_THROWS_WITH(stack({a, b}), Catch::Contains("stack expects each tensor to be equal size, but got [2, 3] at entry 0 "
                                                     "and [2, 4] at entry 1"));
    CHECK_THROWS_WITH(a.permute({0, 0}), Catch::Contains("permute: repeated dim 0"));
    CHECK_THROWS_WITH(a.permute({0}), Catch::Contains("permute: number of dims don't match"));
    CHECK_THROWS_WITH(a.expand({4, 3}), Catch::Contains("expand: the expanded size of the tensor (4) must match the existing "
                                                        "size (2) at non-singleton dimension 0"));
    CHECK_THROWS_WITH(a.expand({3}), Catch::Contains("expand: the number of sizes provided (1)"));
    CHECK_THROWS_WITH(a.repeat({2}), Catch::Contains("repeat: number of dimensions of repeat dims ([2])"));
    CHECK_THROWS_WITH(a.unflatten(1, {2, 2}), Catch::Contains("shape '[2, 2]' is invalid for input of size 3"));
    CHECK_THROWS_WITH(a.slice(1, 0, 3, 0), Catch::Contains("slice: step must be positive"));
    CHECK_THROWS_WITH(a.unsqueeze(3), Catch::Contains("unsqueeze: dimension 3 out of range"));
    CHECK_THROWS_WITH(a.split_with_sizes({1, 1}, 1), Catch::Contains("split_with_sizes expects split_sizes to sum exactly to 3"));
    CHECK_THROWS_WITH(a.chunk(0), Catch::Contains("chunk expects `chunks` to be greater than 0"));
    const Tensor idx = indices({0, 3}, {2});
    CHECK_THROWS_WITH(index_select(a, 1, idx), Catch::Contains("index_select: index 3 is out of range (expected values in [0, 3))"));
    CHECK_THROWS_WITH(index_select(a, 1, zeros({2})), Catch::Contains("index_select: expected an index of dtype int64, got float32"));
    CHECK_THROWS_WITH(index_select(scalar_tensor(1), 0, zeros({2}, kInt64)),
                      Catch::Contains("index_select: an index into a 0-dim tensor can have only 1 value, got 2"));
    CHECK_THROWS_WITH(gather(a, 1, indices({0, 1}, {2})), Catch::Contains("gather: index tensor must have the same number of "
                                                                          "dimensions as input tensor"));
    CHECK_THROWS_WITH(gather(a, 0, zeros({2, 4}, kInt64)), Catch::Contains("gather: size does not match at dimension 1"));
    CHECK_THROWS_WITH(gather(a, 1, full({1, 1}, 5, kInt64)), Catch::Contains("gather: index 5 is out of range"));
    CHECK_THROWS_WITH(scatter_add(a, 0, zeros({2, 3}, kInt64), zeros({1, 3})),
                      Catch::Contains("scatter_add: size does not match at dimension 0 expected index [2, 3] to be smaller "
                                      "than src [1, 3]"));
    CHECK_THROWS_WITH(embedding(idx, zeros({3, 2})), Catch::Contains("embedding: index 3 is out of range (expected values in [0, 3))"));
    CHECK_THROWS_WITH(embedding(idx, zeros({3})), Catch::Contains("embedding: expected a float32 weight [num_embeddings, "
                                                                  "embedding_dim], got float32 [3]"));
    CHECK_THROWS_WITH(embedding(idx, zeros({5, 2}), 5), Catch::Contains("embedding: padding_idx 5 must be within num_embeddings (5)"));
    CHECK_THROWS_WITH(one_hot(idx, 3), Catch::Contains("one_hot: class values must be smaller than num_classes (3), got 3"));
    CHECK_THROWS_WITH(one_hot(indices({-1}, {1})), Catch::Contains("one_hot: class values must be non-negative, got -1"));
    CHECK_THROWS_WITH(one_hot(zeros({2})), Catch::Contains("one_hot is only applicable to index tensors of dtype int64"));
}

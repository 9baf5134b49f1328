// Tensor: shapes, views sharing storage, factories, the seeded generator, printing, errors.
#include <limits>

#include "test_helpers.hpp"

using namespace normnet;

TEST_CASE("tensor: shape queries and negative indices", "[tensor]") {
    Tensor t = zeros({4, 2, 3});
    CHECK(t.dim() == 3);
    CHECK(t.numel() == 24);
    CHECK(t.size(0) == 4);
    CHECK(t.size(-1) == 3);
    CHECK(t.size(-3) == 4);
    CHECK_THROWS_WITH(t.size(3), Catch::Contains("Dimension out of range"));
    CHECK(scalar_tensor(2.5f).dim() == 0);
    CHECK(scalar_tensor(2.5f).item() == 2.5f);
    CHECK_THROWS_WITH(t.item(), Catch::Contains("24 elements cannot be converted to a scalar"));
}

TEST_CASE("tensor: factories", "[tensor]") {
    CHECK(ones({2, 2}).to_vector() == std::vector<float>{1, 1, 1, 1});
    CHECK(full({3}, 7.0f).to_vector() == std::vector<float>{7, 7, 7});
    CHECK(arange(4).to_vector() == std::vector<float>{0, 1, 2, 3});
    CHECK(arange(1.0, 2.0, 0.25).to_vector() == std::vector<float>{1, 1.25, 1.5, 1.75});
    Tensor v = from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
    CHECK(v.at({1, 2}) == 6.0f);
    CHECK_THROWS_WITH(from_vector({1, 2, 3}, {2, 2}), Catch::Contains("3 values do not fill shape [2, 2]"));
    CHECK(tensor({1, 2}).shape() == Shape{2});
}

TEST_CASE("tensor: views share storage, reshape and contiguous", "[tensor]") {
    Tensor a = arange(6).view({2, 3});
    Tensor b = a.view({3, 2});
    CHECK(b.shares_storage(a));
    b.data()[0] = 42.0f;
    CHECK(a.at({0, 0}) == 42.0f);
    CHECK(a.view({-1}).shape() == Shape{6});
    CHECK_THROWS_WITH(a.view({4, -1}), Catch::Contains("shape '[4, -1]' is invalid for input of size 6"));

    Tensor t = a.t();
    CHECK(t.shape() == Shape{3, 2});
    CHECK_FALSE(t.is_contiguous());
    CHECK(t.shares_storage(a));
    CHECK(t.at({2, 1}) == a.at({1, 2}));
    CHECK_THROWS_WITH(t.view({6}), Catch::Contains("view size is not compatible") && Catch::Contains("use reshape()"));
    // Where the strides allow the new shape, a non-contiguous tensor is viewed without a copy, as torch.
    const Tensor narrowed = arange(24).view({4, 6}).narrow(1, 0, 4);
    const Tensor split = narrowed.view({4, 2, 2});
    CHECK(split.shares_storage(narrowed));
    CHECK(split.strides() == Shape{6, 2, 1});
    CHECK(split.to_vector() == narrowed.reshape({4, 2, 2}).contiguous().to_vector());
    CHECK(t.view({3, 1, 2}).shares_storage(a));
    CHECK_THROWS_WITH(narrowed.view({16}), Catch::Contains("view size is not compatible"));
    Tensor c = t.contiguous();
    CHECK(c.is_contiguous());
    CHECK_FALSE(c.shares_storage(a));
    CHECK(c.to_vector() == std::vector<float>{42, 3, 1, 4, 2, 5});
    CHECK(t.reshape({6}).to_vector() == c.to_vector());

    Tensor row = a.select(0, 1);
    CHECK(row.to_vector() == std::vector<float>{3, 4, 5});
    Tensor cols = a.narrow(1, 1, 2);
    CHECK(cols.to_vector() == std::vector<float>{1, 2, 4, 5});
    CHECK_THROWS_WITH(a.narrow(1, 2, 2), Catch::Contains("out of range"));
    CHECK(zeros({2, 3, 4}).flatten(1).shape() == Shape{2, 12});
}

TEST_CASE("tensor: generator is reproducible given its seed", "[tensor]") {
    Generator g1(123), g2(123), g3(124);
    Tensor a = randn({100}, g1), b = randn({100}, g2), c = randn({100}, g3);
    CHECK(a.to_vector() == b.to_vector());
    CHECK(a.to_vector() != c.to_vector());
    // Statistics of 100k draws: mean ~0, std ~1; uniform in [0, 1).
    Generator g(7);
    Tensor n = randn({100000}, g);
    const double m = mean(n).item();
    const double var = mean(mul(n, n)).item() - m * m;
    CHECK(std::abs(m) < 0.02);
    CHECK(std::abs(var - 1.0) < 0.02);
    Tensor u = rand({10000}, g);
    for (float v : u.to_vector()) REQUIRE((v >= 0.0f && v < 1.0f));
    // Saving and restoring the state replays the same numbers.
    const auto state = g.state();
    const float first = g.uniform();
    g.set_state(state);
    CHECK(g.uniform() == first);
}

TEST_CASE("tensor: prints like PyTorch", "[tensor]") {
    Tensor t = from_vector({-1.2758f, 1.1659f, 0.1099f, 0.6532f, -1.4123f, 0.7591f}, {2, 3});
    CHECK(t.str() == "tensor([[-1.2758,  1.1659,  0.1099],\n        [ 0.6532, -1.4123,  0.7591]])");
    CHECK(tensor({1, 2, 3}).str() == "tensor([1., 2., 3.])");
    CHECK(scalar_tensor(0.5f).str() == "tensor(0.5000)");
    CHECK(tensor({1e-5f, 1.0f}).str() == "tensor([1.0000e-05, 1.0000e+00])");
    Tensor three = from_vector({1, 2, 3, 4}, {2, 1, 2});
    CHECK(three.str() == "tensor([[[1., 2.]],\n\n        [[3., 4.]]])");
    Tensor w = ones({2}).requires_grad_();
    CHECK(w.str() == "tensor([1., 1.], requires_grad=True)");
    CHECK(mul(w, 2.0f).str() == "tensor([2., 2.], grad_fn=<MulBackward1>)");
    // Large tensors are summarised with "..." like PyTorch.
    const std::string big = arange(2000).str();
    CHECK(big == "tensor([   0.,    1.,    2.,  ..., 1997., 1998., 1999.])");
}

TEST_CASE("tensor: in-place updates and shape errors", "[tensor]") {
    Tensor a = ones({2, 2});
    a.add_(full({2, 2}, 2.0f), 0.5f);
    CHECK(a.to_vector() == std::vector<float>{2, 2, 2, 2});
    a.mul_(3.0f);
    CHECK(a.at({1, 1}) == 6.0f);
    CHECK_THROWS_WITH(a.add_(ones({3})), Catch::Contains("[3]") && Catch::Contains("[2, 2]"));
    CHECK_THROWS_WITH(add(ones({2, 3}), ones({2})), Catch::Contains("[2, 3]") && Catch::Contains("[2]"));
    CHECK_THROWS_WITH(matmul(ones({2, 3}), ones({2, 3})), Catch::Contains("[2, 3] and [2, 3]"));
    CHECK_THROWS_AS(Tensor().numel(), Error);
    static_assert(std::is_base_of_v<std::runtime_error, Error>);  // catch (std::exception&) sees it
}

TEST_CASE("tensor: int64 and bool dtypes: factories, conversion, printing, and ops that refuse them", "[tensor][dtype]") {
    const Tensor labels = from_vector(std::vector<int64_t>{3, -1, 40000000000}, {3});
    CHECK(labels.dtype() == kInt64);
    CHECK(labels.to_vector<int64_t>() == std::vector<int64_t>{3, -1, 40000000000});
    CHECK(labels.str() == "tensor([          3,          -1, 40000000000])");
    CHECK(tensor({3, 1, 4}, kInt64).str() == "tensor([3, 1, 4])");
    CHECK(zeros({2}, kBool).str() == "tensor([False, False])");
    CHECK(ones({2, 2}, kInt64).to_vector<int64_t>() == std::vector<int64_t>(4, 1));
    CHECK(element_size(kInt64) == 8);
    CHECK(element_size(kBool) == 1);
    // to(): float -> int64 truncates toward zero, as torch; nonzero -> true.
    const Tensor f = tensor({-1.7f, 0.0f, 2.9f});
    CHECK(f.to(kInt64).to_vector<int64_t>() == std::vector<int64_t>{-1, 0, 2});
    CHECK(f.to(kBool).to_vector<bool>() == std::vector<bool>{true, false, true});
    CHECK(f.to(kInt64).to(kFloat32).to_vector() == std::vector<float>{-1, 0, 2});
    CHECK(f.to(kFloat32).shares_storage(f));  // the same dtype: the tensor itself
    // NaN, inf and floats beyond int64's range give INT64_MIN, as torch on x86 (a plain cast is UB).
    const int64_t lowest = std::numeric_limits<int64_t>::min();
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    CHECK(tensor({nan, 1e30f, -1e30f, inf, 2.5f}).to(kInt64).to_vector<int64_t>() ==
          std::vector<int64_t>{lowest, lowest, lowest, lowest, 2});
    CHECK(full({2}, nan, kInt64).to_vector<int64_t>() == std::vector<int64_t>{lowest, lowest});
    CHECK(full({}, nan).item<int64_t>() == lowest);
    // copy_ broadcasts its source and converts it; an int64 destination takes no gradient from it.
    Tensor counts = zeros({2, 3}, kInt64);
    counts.copy_(tensor({1.5f, -2.5f, 3.0f}).requires_grad_());
    CHECK(counts.to_vector<int64_t>() == std::vector<int64_t>{1, -2, 3, 1, -2, 3});
    CHECK_FALSE(counts.requires_grad());
    CHECK_THROWS_WITH(counts.copy_(zeros({2})), Catch::Contains("copy_") && Catch::Contains("[2]"));
    CHECK(labels.select(0, 0).item<int64_t>() == 3);
    CHECK(full({}, 7.0, kInt64).item<int64_t>() == 7);
    // Views, clone and contiguous keep the dtype.
    CHECK(labels.narrow(0, 1, 2).clone().to_vector<int64_t>() == std::vector<int64_t>{-1, 40000000000});
    CHECK(from_vector(std::vector<int64_t>{1, 2, 3, 4}, {2, 2}).t().contiguous().to_vector<int64_t>() ==
          std::vector<int64_t>{1, 3, 2, 4});
    // Only float32 takes part in autograd and in float ops; messages name the op and both dtypes.
    CHECK_THROWS_WITH(Tensor(labels).requires_grad_(), Catch::Contains("floating point"));
    CHECK_THROWS_WITH(relu(labels), Catch::Contains("relu") && Catch::Contains("int64"));
    CHECK(add(labels, labels).dtype() == kInt64);  // integer arithmetic stays integer, as torch
    CHECK_THROWS_WITH(labels.data(), Catch::Contains("float32") && Catch::Contains("int64"));
    CHECK_THROWS_WITH(linear(zeros({2, 3}), zeros({4, 3}, kInt64)),
                      Catch::Contains("linear") && Catch::Contains("weight") && Catch::Contains("int64"));
}

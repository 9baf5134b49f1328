// Reductions against PyTorch (tests/golden/gen_reduce.py) and against naive double-precision
// references on the shapes the fast kernels special-case (short rows, narrow and wide columns,
// long rows split between threads); gradcheck of every differentiable reduction; NaN, empty and
// dtype behaviour; the error messages.
#include <cmath>
#include <limits>

#include "golden_cases.hpp"
#include "op_test_helpers.hpp"

using namespace normnet;
using test::Inputs;
using test::input;
using test::require_gradcheck;
using test::require_close;
using test::run_golden_case;

namespace {

// A reduction case whose op returns (values, indices): compares the indices too.
void run_indexed_case(const SafetensorsData& g, const std::string& name,
                      const std::function<std::tuple<Tensor, Tensor>(const Tensor&)>& fn) {
    Tensor indices;
    run_golden_case(g, name, {"x"}, [&](Inputs& in) {
        auto [values, idx] = fn(in["x"]);
        indices = idx;
        return values;
    });
    REQUIRE(indices.dtype() == kInt64);
    require_close(indices.to(kFloat32), g.at(name + ".idx"), 0.0, name + ".idx");
}

// Σ over dim `d` of a contiguous [A, B] tensor, in double (the naive reference).
std::vector<double> naive_sum(const Tensor& x, int d) {
    const int64_t A = x.size(0), B = x.size(1);
    std::vector<double> out(static_cast<size_t>(d == 0 ? B : A), 0.0);
    const float* p = x.data();
    for (int64_t a = 0; a < A; ++a) {
        for (int64_t b = 0; b < B; ++b) out[static_cast<size_t>(d == 0 ? b : a)] += p[a * B + b];
    }
    return out;
}

// |actual - expected| <= tol * (|expected| + sqrt(n)): the rounding of the float result plus the
// error of float partial sums of n unit-sized terms (torch's own float sums err by as much).
void require_near(const Tensor& actual, const std::vector<double>& expected, double n, double tol, const std::string& what) {
    INFO(what);
    const auto a = actual.to_vector<double>();
    REQUIRE(a.size() == expected.size());
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, std::abs(a[i] - expected[i]) / (std::abs(expected[i]) + std::sqrt(n)));
    }
    INFO("worst error " << worst << " (relative to |expected| + sqrt(n))");
    REQUIRE(worst <= tol);
}

}  // namespace

TEST_CASE("sum and mean match PyTorch, for float32, int64 and bool inputs", "[ops][reduce]") {
    const SafetensorsData g = test::golden("reduce.safetensors");
    const std::vector<std::pair<Dims, bool>> args{{{1}, false}, {{0, 2}, true}, {{-1}, false},
                                                  {{0, 1, 2}, false}, {{2, 0}, false}, {{1, 2}, true}};
    for (size_t i = 0; i < args.size(); ++i) {
        const auto& [dims, keep] = args[i];
        run_golden_case(g, "sum" + std::to_string(i), {"x"}, [dims = dims, keep = keep](Inputs& in) { return sum(in["x"], dims, keep); });
        run_golden_case(g, "mean" + std::to_string(i), {"x"}, [dims = dims, keep = keep](Inputs& in) { return in["x"].mean(dims, keep); });
    }
    run_golden_case(g, "sum_t", {"x"}, [](Inputs& in) { return in["x"].sum({1}); });
    run_golden_case(g, "mean_narrow", {"x"}, [](Inputs& in) { return mean(in["x"], {0, 2}); });
    run_golden_case(g, "sum_empty", {"x"}, [](Inputs& in) { return sum(in["x"], {1}); });
    run_golden_case(g, "sum_rows_long", {"x"}, [](Inputs& in) { return sum(in["x"], {1}); });
    run_golden_case(g, "sum_cols_long", {"x"}, [](Inputs& in) { return sum(in["x"], {0}); });
    const Tensor xi = g.at("sum_int.x").to(kInt64);
    require_close(sum(xi, {1}).to(kFloat32), g.at("sum_int.y"), 0.0, "sum_int");
    CHECK(sum(xi, {1}).dtype() == kInt64);
    const Tensor mask = g.at("sum_bool.x").to(kBool);
    CHECK(sum(mask, {0}).dtype() == kInt64);
    require_close(sum(mask, {0}).to(kFloat32), g.at("sum_bool.y"), 0.0, "sum_bool");
    require_close(g.at("sum_bool_all.x").to(kBool).sum().to(kFloat32), g.at("sum_bool_all.y"), 0.0, "sum_bool_all");
    // mean of a mask or an int64 tensor: a float32 mean (the golden is torch's mean of the float copy).
    const Tensor m = mean(g.at("mean_bool.x").to(kBool), {1});
    CHECK(m.dtype() == kFloat32);
    require_close(m, g.at("mean_bool.y"), 1e-7, "mean_bool");
    require_close(g.at("mean_int.x").to(kInt64).mean({0}), g.at("mean_int.y"), 1e-7, "mean_int");
}

TEST_CASE("reductions over dims split by kept ones around size-1 dims, and to empty outputs, match PyTorch",
          "[ops][reduce]") {
    using nlohmann::json;
    using In = const std::vector<Tensor>&;
    using A = const json&;
    const auto dims = [](const json& a) { return Dims(a.at("dims").get<std::vector<int64_t>>()); };
    const auto keep = [](const json& a) { return a.at("keepdim").get<bool>(); };
    const std::map<std::string, test::GoldenOp> ops = {
        {"sum", [=](In in, A a) { return sum(in[0], dims(a), keep(a)); }},
        {"mean", [=](In in, A a) { return mean(in[0], dims(a), keep(a)); }},
        {"amax", [=](In in, A a) { return amax(in[0], dims(a), keep(a)); }},
        {"amin", [=](In in, A a) { return amin(in[0], dims(a), keep(a)); }},
        {"var", [=](In in, A a) { return var(in[0], dims(a), test::arg(a, "correction"), keep(a)); }},
        {"std", [=](In in, A a) { return normnet::std(in[0], dims(a), test::arg(a, "correction"), keep(a)); }},
        {"logsumexp", [=](In in, A a) { return logsumexp(in[0], dims(a), keep(a)); }},
        {"norm", [=](In in, A a) { return norm(in[0], test::arg(a, "p"), dims(a), keep(a)); }},
        {"max_dim", [=](In in, A a) { return std::get<0>(max(in[0], a.at("dim").get<int64_t>(), keep(a))); }},
        {"min_dim", [=](In in, A a) { return std::get<0>(min(in[0], a.at("dim").get<int64_t>(), keep(a))); }},
        {"add", [](In in, A) { return add(in[0], in[1]); }},
    };
    CHECK(test::run_golden_cases("reduce_dims.safetensors", ops) == 141);
}

TEST_CASE("sum over rows and columns of every kernel shape matches a double reference", "[ops][reduce]") {
    const test::ThreadsGuard threads;
    for (int t : {1, 2}) {
        set_num_threads(t);
        // Short rows (compile-time sizes), medium and long rows, long rows split between threads;
        // narrow columns (read as wide rows), wide columns in strips, columns split by rows.
        for (const Shape& shape : {Shape{1000, 3}, Shape{700, 16}, Shape{300, 17}, Shape{50, 300}, Shape{7, 5000},
                                   Shape{1, 70000}, Shape{3, 50000}, Shape{40000, 5}, Shape{3000, 70}, Shape{20, 3000},
                                   Shape{5000, 20}, Shape{2, 1}, Shape{1, 1}}) {
            const Tensor x = randn(shape, *std::make_unique<Generator>(static_cast<uint64_t>(shape.numel())));
            for (int d : {0, 1}) {
                INFO("shape " << shape << " dim " << d << " threads " << t);
                const auto n = static_cast<double>(shape[d]);
                require_near(sum(x, {d}), naive_sum(x, d), n, 1e-6, "sum");
                std::vector<double> mean_ref = naive_sum(x, d);
                for (double& v : mean_ref) v /= static_cast<double>(shape[d]);
                require_near(mean(x, {d}), mean_ref, 1.0, 1e-6, "mean");
            }
        }
        // Middle dims and two reduced runs go through the same kernels on [outer, R, inner] blocks.
        const Tensor y = randn({6, 50, 7, 3});
        const Tensor ref = sum(sum(y.permute({1, 3, 0, 2}).contiguous().view({150, 42}), {0}).view({6, 7}), {});
        CHECK(std::abs(sum(y, {1, 3}).sum().item() - ref.item()) < 1e-3);
    }
    // A long sum does not drift as one float accumulator would (by ~1e3 here): the partial sums
    // are folded into double.
    const Tensor tenths = full({1 << 22}, 0.1);
    CHECK(std::abs(sum(tenths).item<double>() - double(0.1f) * double(1 << 22)) < 0.5);  // torch's: 0.125
}

TEST_CASE("var, std, logsumexp, norm and cumsum match PyTorch", "[ops][reduce]") {
    const SafetensorsData g = test::golden("reduce.safetensors");
    const std::vector<std::tuple<Dims, double, bool>> args{{{1}, 1, false}, {{0, 2}, 0, true}, {{}, 1, false}, {{-1}, 2, false}};
    for (size_t i = 0; i < args.size(); ++i) {
        const auto& [dims, corr, keep] = args[i];
        run_golden_case(g, "var" + std::to_string(i), {"x"}, [dims = dims, corr = corr, keep = keep](Inputs& in) { return var(in["x"], dims, corr, keep); });
        run_golden_case(g, "std" + std::to_string(i), {"x"}, [dims = dims, corr = corr, keep = keep](Inputs& in) { return in["x"].std(dims, corr, keep); });
    }
    run_golden_case(g, "var_unbiased_false", {"x"}, [](Inputs& in) { return var(in["x"], {1}, false); });
    run_golden_case(g, "std_t", {"x"}, [](Inputs& in) { return normnet::std(in["x"], {0}); });
    run_golden_case(g, "var_offset", {"x"}, [](Inputs& in) { return in["x"].var({1}); });
    run_golden_case(g, "logsumexp1", {"x"}, [](Inputs& in) { return logsumexp(in["x"], {1}); });
    run_golden_case(g, "logsumexp02", {"x"}, [](Inputs& in) { return in["x"].logsumexp({0, 2}, true); });
    run_golden_case(g, "logsumexp_large", {"x"}, [](Inputs& in) { return logsumexp(in["x"], {-1}); });
    run_golden_case(g, "logsumexp_t", {"x"}, [](Inputs& in) { return logsumexp(in["x"], {1}); });
    const std::vector<std::pair<double, Dims>> norms{{2, {1}}, {1, {0}}, {INFINITY, {1}}, {-INFINITY, {1}},
                                                     {0, {1}}, {3, {0, 1}}, {0.5, {1}}, {2, {}}};
    for (size_t i = 0; i < norms.size(); ++i) {
        const auto& [p, dims] = norms[i];
        const std::string name = "norm" + std::to_string(i);
        if (p == 0) {
            require_close(norm(g.at(name + ".x"), p, dims), g.at(name + ".y"), 0.0, name);
            continue;
        }
        run_golden_case(g, name, {"x"}, [p = p, dims = dims](Inputs& in) { return norm(in["x"], p, dims); });
    }
    run_golden_case(g, "norm_inf_ties", {"x"}, [](Inputs& in) { return in["x"].norm(INFINITY, {1}); });
    run_golden_case(g, "norm_fro", {"x"}, [](Inputs& in) { return norm(in["x"], "fro", {1, 2}, true); });
    run_golden_case(g, "norm_default", {"x"}, [](Inputs& in) { return in["x"].norm(); });
    run_golden_case(g, "cumsum1", {"x"}, [](Inputs& in) { return cumsum(in["x"], 1); });
    run_golden_case(g, "cumsum_last", {"x"}, [](Inputs& in) { return in["x"].cumsum(-1); });
    run_golden_case(g, "cumsum_t", {"x"}, [](Inputs& in) { return in["x"].cumsum(0); });
    const Tensor ci = cumsum(g.at("cumsum_int.x").to(kInt64), 1);
    CHECK(ci.dtype() == kInt64);
    require_close(ci.to(kFloat32), g.at("cumsum_int.y"), 0.0, "cumsum_int");
    require_close(cumsum(g.at("cumsum_bool.x").to(kBool), 0).to(kFloat32), g.at("cumsum_bool.y"), 0.0, "cumsum_bool");
}

TEST_CASE("the max/min family and topk match PyTorch, ties included", "[ops][reduce]") {
    const SafetensorsData g = test::golden("reduce.safetensors");
    run_golden_case(g, "amax1", {"x"}, [](Inputs& in) { return amax(in["x"], {1}); });
    run_golden_case(g, "amax02", {"x"}, [](Inputs& in) { return in["x"].amax({0, 2}, true); });
    run_golden_case(g, "amin_all", {"x"}, [](Inputs& in) { return amin(in["x"]); });
    run_golden_case(g, "amax_rand", {"x"}, [](Inputs& in) { return amax(in["x"], {-1}); });
    run_golden_case(g, "max_all", {"x"}, [](Inputs& in) { return max(in["x"]); });
    run_golden_case(g, "min_all", {"x"}, [](Inputs& in) { return in["x"].min(); });
    run_indexed_case(g, "max_dim1", [](const Tensor& x) { return max(x, 1); });
    run_indexed_case(g, "max_dim0", [](const Tensor& x) { return x.max(0, true); });
    run_indexed_case(g, "min_dim", [](const Tensor& x) { return min(x, -1); });
    run_indexed_case(g, "min_dim_t", [](const Tensor& x) { return x.min(0); });
    run_indexed_case(g, "topk", [](const Tensor& x) { return topk(x, 3); });
    run_indexed_case(g, "topk_small0", [](const Tensor& x) { return x.topk(2, 0, false); });
    run_indexed_case(g, "topk_t", [](const Tensor& x) { return topk(x, 4, 1); });
    const auto check_index = [&](const std::string& name, const Tensor& got) {
        INFO(name);
        CHECK(got.dtype() == kInt64);
        require_close(got.to(kFloat32), g.at(name + ".y"), 0.0, name);
    };
    check_index("argmax_all", argmax(g.at("argmax_all.x")));
    check_index("argmax1", g.at("argmax1.x").argmax(1));
    check_index("argmin0", argmin(g.at("argmin0.x"), 0, true));
    check_index("argmin_all", g.at("argmin_all.x").argmin());
}

TEST_CASE("reductions pass gradcheck", "[ops][reduce][gradcheck]") {
    const Tensor x = input({3, 4, 5}, 1);
    require_gradcheck([](auto& in) { return sum(in[0].transpose(0, 2), {0, 2}); }, {x});
    require_gradcheck([](auto& in) { return mean(in[0], {1}, true); }, {x});
    require_gradcheck([](auto& in) { return var(in[0], {0, 2}); }, {x});
    require_gradcheck([](auto& in) { return normnet::std(in[0], {1}, 0.0, true); }, {x});
    require_gradcheck([](auto& in) { return normnet::std(in[0]); }, {x});
    require_gradcheck([](auto& in) { return logsumexp(in[0], {2, 0}); }, {x});
    // |y| in [0.5, 1.5) with mixed signs: p < 1 is steep near 0, and no two |y| of a group tie
    // within gradcheck's step.
    std::vector<float> values = rand({3, 4, 5}, *std::make_unique<Generator>(3)).to_vector();
    for (size_t i = 0; i < values.size(); ++i) values[i] = (values[i] + 0.5f) * (i % 3 == 0 ? -1.0f : 1.0f);
    const Tensor y = from_vector(values, {3, 4, 5}).requires_grad_();
    for (double p : {2.0, 1.0, 3.0, 0.5, double(INFINITY), -double(INFINITY)}) {
        INFO("p " << p);
        require_gradcheck([p](auto& in) { return norm(in[0], p, {1}); }, {y});
    }
    require_gradcheck([](auto& in) { return cumsum(in[0], 1); }, {x});
    require_gradcheck([](auto& in) { return cumsum(in[0].transpose(1, 2), -1); }, {x});
    require_gradcheck([](auto& in) { return amax(in[0], {0, 2}); }, {x});
    require_gradcheck([](auto& in) { return amin(in[0], {1}); }, {x});
    require_gradcheck([](auto& in) { return max(in[0]); }, {x});
    require_gradcheck([](auto& in) { return std::get<0>(max(in[0], 2)); }, {x});
    require_gradcheck([](auto& in) { return std::get<0>(min(in[0].transpose(0, 1), 1, true)); }, {x});
    require_gradcheck([](auto& in) { return std::get<0>(topk(in[0], 2, 1, false)); }, {x});
    // Long rows and columns go through the lanes and the split between threads.
    const Tensor wide = input({2, 3000}, 2);
    require_gradcheck([](auto& in) { return mul(logsumexp(in[0], {1}), 1.0f); }, {wide});
}

TEST_CASE("reductions of NaN, infinities and empty tensors behave as torch's", "[ops][reduce]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const Tensor x = from_vector({1, nan, 3, 4, -2, 4}, {2, 3});
    CHECK(std::isnan(amax(x).item()));
    CHECK(std::isnan(max(x).item()));
    auto [v, i] = max(x, 1);
    CHECK(std::isnan(v.to_vector()[0]));
    CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{1, 0});  // NaN is the max; ties: the first
    CHECK(argmin(x, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 1});
    CHECK(std::get<1>(topk(x, 2, 1)).to_vector<int64_t>() == std::vector<int64_t>{1, 2, 0, 2});
    const Tensor inf_rows = from_vector({-INFINITY, -INFINITY, INFINITY, 1}, {2, 2});
    CHECK(logsumexp(inf_rows, {1}).to_vector() == std::vector<float>{-INFINITY, INFINITY});
    CHECK(logsumexp(zeros({2, 0}), {1}).to_vector() == std::vector<float>{-INFINITY, -INFINITY});
    CHECK(norm(zeros({0})).item() == 0.0f);
    CHECK(std::isnan(var(ones({1})).item()));  // one element, correction 1: 0 / 0
    CHECK(var(ones({1}), {}, 0.0).item() == 0.0f);
    CHECK(std::isnan(mean(zeros({0, 3}), {0}).to_vector()[0]));
    CHECK(sum(zeros({0, 3}, kInt64), {0}).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0});
    CHECK(amax(zeros({0, 3}), {1}).shape() == Shape{0});
    CHECK(cumsum(zeros({2, 0}), 1).shape() == Shape{2, 0});
    CHECK(std::get<0>(topk(zeros({3, 2}), 0, 0)).shape() == Shape{0, 2});
    // A scalar reduces over dim 0 / -1 as torch allows.
    const Tensor s = scalar_tensor(5.0f);
    CHECK(sum(s, {0}).item() == 5.0f);
    CHECK(std::get<1>(max(s, -1)).item<int64_t>() == 0);
    CHECK(argmax(s).item<int64_t>() == 0);
}

TEST_CASE("reductions reject bad arguments with clear messages", "[ops][reduce]") {
    const Tensor x = zeros({2, 3});
    CHECK_THROWS_WITH(sum(x, {2}), Catch::Contains("sum: dimension 2 out of range for a tensor of 2 dimensions"));
    CHECK_THROWS_WITH(amax(x, {1, -1}), Catch::Contains("amax: dim 1 appears multiple times in the list of dims"));
    CHECK_THROWS_WITH(var(zeros({2}, kInt64)), Catch::Contains("var: expected a float32 tensor, got int64"));
    CHECK_THROWS_WITH(max(zeros({0, 3})), Catch::Contains("max(): Expected reduction dim to be specified for input.numel() == 0"));
    CHECK_THROWS_WITH(max(zeros({0, 3}), 0), Catch::Contains("max(): Expected reduction dim 0 to have non-zero size"));
    CHECK_THROWS_WITH(argmax(zeros({2, 0}), 1), Catch::Contains("argmax(): Expected reduction dim 1 to have non-zero size"));
    CHECK_THROWS_WITH(amin(zeros({2, 0}), {1}), Catch::Contains("amin(): Expected reduction dim 1 to have non-zero size"));
    CHECK_THROWS_WITH(topk(x, 4, 1), Catch::Contains("topk: k (4) is out of range for dimension 1 of size 3"));
    CHECK_THROWS_WITH(norm(x, "nuc"), Catch::Contains("norm: p 'nuc' is not supported"));
    CHECK_THROWS_WITH(cumsum(x, 3), Catch::Contains("cumsum: dimension 3 out of range"));
    CHECK_THROWS_WITH(logsumexp(zeros({2}, kBool), {0}), Catch::Contains("logsumexp: expected a float32 tensor, got bool"));
}

TEST_CASE("var and std take torch's unbiased flag and correction forms", "[ops][reduce]") {
    const Tensor x = randn({4, 6});
    const auto same = [](const Tensor& a, const Tensor& b) { return test::bit_equal(a, b); };
    CHECK(same(var(x, true), var(x, {}, 1.0)));
    CHECK(same(var(x, false), var(x, {}, 0.0)));
    CHECK(same(x.var(false), var(x, {}, 0.0)));
    CHECK(same(var(x, {1}, false, true), var(x, {1}, 0.0, true)));
    CHECK(same(x.std({0}, false), normnet::std(x, {0}, 0.0)));
    CHECK(same(normnet::std(x, true), x.std()));
    // An integer is a correction, not a flag: var(x, dims, 2) divides by N - 2.
    const Tensor v2 = var(x, {1}, 2), v0 = var(x, {1}, 0);
    require_close(v2, mul(v0, 6.0f / 4.0f), 1e-6, "correction 2");
    auto [values, indices] = x.max(1);
    CHECK(values.shape() == Shape{4});
    CHECK(indices.dtype() == kInt64);
}

// normnet::Function, the custom-op route of the public API (include/normnet/function.hpp):
// gradients of ops written by users, non-tensor arguments, optional inputs, needs_input_grad,
// grad mode, aliasing, and the errors a wrong backward gets. Its own Catch2 binary, built only
// against the public target, as a user's code would be.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "normnet/normnet.hpp"

using namespace normnet;

namespace {

Tensor leaf(const Shape& shape, uint64_t seed) {
    Generator gen(seed);
    return randn(shape, gen).requires_grad_();
}

void require_ok(const GradcheckResult& r) {
    INFO(r.message);
    REQUIRE(r.ok);
    REQUIRE(r.checked > 0);
}

// y = x * sigmoid(beta * x), beta a plain double.
struct Swish : Function<Swish> {
    static Tensor forward(AutogradContext* ctx, const Tensor& input, double beta) {
        const Tensor x = input.contiguous();
        Tensor y = empty(x.shape());
        for (int64_t i = 0; i < x.numel(); ++i) {
            y.data()[i] = x.data()[i] / (1.0f + std::exp(-static_cast<float>(beta) * x.data()[i]));
        }
        ctx->save_for_backward({x});
        ctx->saved_data["beta"] = beta;
        return y;
    }
    static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
        const Tensor x = ctx->get_saved_variables()[0];
        const auto b = static_cast<float>(ctx->saved_data["beta"]);
        Tensor dx = empty(x.shape());
        for (int64_t i = 0; i < x.numel(); ++i) {
            const float s = 1.0f / (1.0f + std::exp(-b * x.data()[i]));
            dx.data()[i] = grad_outputs[0].data()[i] * (s + b * x.data()[i] * s * (1.0f - s));
        }
        return {dx, Tensor()};
    }
};

// y = x @ w^T + b with normnet ops inside, b optional; records which inputs needed a gradient.
struct LinearFn : Function<LinearFn> {
    static inline std::vector<bool> seen_needs;
    static inline bool forward_grad_mode = true, backward_grad_mode = true;
    static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b) {
        seen_needs = {ctx->needs_input_grad(0), ctx->needs_input_grad(1), ctx->needs_input_grad(2),
                      ctx->needs_input_grad(3)};
        forward_grad_mode = grad_mode_enabled();
        ctx->save_for_backward({x, w, b});
        return linear(x, w, b);
    }
    static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
        backward_grad_mode = grad_mode_enabled();
        const tensor_list& s = ctx->get_saved_variables();
        const Tensor& dy = grad_outputs[0];                            // [N, out]
        Tensor dx = ctx->needs_input_grad(0) ? matmul(dy, s[1]) : Tensor();  // [N, in]
        Tensor dw = ctx->needs_input_grad(1) ? matmul(dy.t(), s[0]) : Tensor();  // [out, in]
        Tensor db;
        if (ctx->needs_input_grad(2)) {
            db = zeros({dy.size(1)});
            for (int64_t n = 0; n < dy.size(0); ++n) db.add_(dy.select(0, n));
        }
        return {dx, dw, db};
    }
};

// Returns its input unchanged.
struct Same : Function<Same> {
    static Tensor forward(AutogradContext*, const Tensor& x) { return x; }
    static tensor_list backward(AutogradContext*, tensor_list grad_outputs) { return {grad_outputs[0]}; }
};

// a * b, for a function of the same tensor twice.
struct Product : Function<Product> {
    static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b) {
        ctx->save_for_backward({a, b});
        return a * b;
    }
    static tensor_list backward(AutogradContext* ctx, tensor_list g) {
        const tensor_list& s = ctx->get_saved_variables();
        return {g[0] * s[1], g[0] * s[0]};
    }
};

// Backwards that break the rules.
struct TooFew : Function<TooFew> {
    static Tensor forward(AutogradContext*, const Tensor& x, float) { return x * 2.0f; }
    static tensor_list backward(AutogradContext*, tensor_list g) { return {g[0]}; }
};
struct WrongShape : Function<WrongShape> {
    static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0f; }
    static tensor_list backward(AutogradContext*, tensor_list) { return {zeros({7})}; }
};
struct GradForNumber : Function<GradForNumber> {
    static Tensor forward(AutogradContext*, const Tensor& x, float) { return x * 2.0f; }
    static tensor_list backward(AutogradContext*, tensor_list g) { return {g[0] * 2.0f, zeros({1})}; }
};

}  // namespace

TEST_CASE("Function: a tensor and a non-tensor argument pass gradcheck", "[function]") {
    require_ok(gradcheck([](const tensor_list& in) { return Swish::apply(in[0], 1.7); }, {leaf({4, 5}, 1)}));
    const Tensor y = Swish::apply(leaf({2}, 2), 1.0);
    CHECK(y.requires_grad());
    CHECK(y.str().find("grad_fn=<SwishBackward>") != std::string::npos);
}

TEST_CASE("Function: several inputs, an undefined optional one, needs_input_grad", "[function]") {
    const Tensor w = leaf({3, 4}, 4), b = leaf({3}, 5);
    require_ok(gradcheck([](const tensor_list& in) { return LinearFn::apply(in[0], in[1], in[2]); },
                         {leaf({2, 4}, 3), w, b}));
    (void)LinearFn::apply(leaf({2, 4}, 3), w, b);  // gradcheck's last forward ran without grad mode
    CHECK(LinearFn::seen_needs == std::vector<bool>{true, true, true, false});
    CHECK_FALSE(LinearFn::forward_grad_mode);
    CHECK_FALSE(LinearFn::backward_grad_mode);

    // No bias, and x needs no gradient: only w's is computed.
    const Tensor x = randn({2, 4});
    require_ok(gradcheck([&x](const tensor_list& in) { return LinearFn::apply(x, in[0], Tensor()); }, {w}));
    (void)LinearFn::apply(x, w, Tensor());
    CHECK(LinearFn::seen_needs == std::vector<bool>{false, true, false, false});
}

TEST_CASE("Function: nothing is recorded without grad mode or inputs that require grad", "[function]") {
    const Tensor x = leaf({3}, 6);
    {
        NoGradGuard no_grad;
        CHECK_FALSE(Swish::apply(x, 1.0).requires_grad());
    }
    CHECK_FALSE(Swish::apply(randn({3}), 1.0).requires_grad());
    CHECK(Swish::apply(x, 1.0).requires_grad());
}

TEST_CASE("Function: an output that is an input leaves the input untouched", "[function]") {
    Tensor x = leaf({3}, 7);
    const Tensor y = Same::apply(x);
    CHECK(x.is_leaf());
    CHECK(y.grad_fn() != nullptr);
    CHECK(y.shares_storage(x));
    sum(y).backward();
    CHECK(x.grad().to_vector() == std::vector<float>{1, 1, 1});
}

TEST_CASE("Function: the same tensor twice gets both gradients, fresh or accumulated", "[function]") {
    Tensor x = from_vector({1, -2, 3}, {3}).requires_grad_();
    sum(Product::apply(x, x)).backward();  // x.grad did not exist: written, then added to
    CHECK(x.grad().to_vector() == std::vector<float>{2, -4, 6});
    sum(Product::apply(x, x)).backward();  // accumulates, as every normnet op
    CHECK(x.grad().to_vector() == std::vector<float>{4, -8, 12});
    require_ok(gradcheck([](const tensor_list& in) { return Product::apply(in[0], in[0]); }, {leaf({5}, 8)}));
}

TEST_CASE("Function: saved tensors are released by backward", "[function]") {
    const Tensor x = leaf({3}, 9);
    const Tensor y = sum(Swish::apply(x, 1.0));
    y.backward();
    CHECK_THROWS_WITH(y.backward(), Catch::Contains("second time"));
}

TEST_CASE("Function: a backward that breaks the rules is an Error naming the Function", "[function]") {
    CHECK_THROWS_WITH(sum(TooFew::apply(leaf({2}, 10), 1.0f)).backward(),
                      Catch::Contains("TooFewBackward") && Catch::Contains("returned 1 gradients, expected 2"));
    CHECK_THROWS_WITH(sum(WrongShape::apply(leaf({2, 3}, 11))).backward(),
                      Catch::Contains("WrongShapeBackward") && Catch::Contains("[7]") && Catch::Contains("[2, 3]"));
    CHECK_THROWS_WITH(sum(GradForNumber::apply(leaf({2}, 12), 1.0f)).backward(),
                      Catch::Contains("GradForNumberBackward") && Catch::Contains("not a Tensor"));
}

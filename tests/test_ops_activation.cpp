// Unary math, activations, softmax and log_softmax, and the activation modules: PyTorch goldens
// (tests/golden/gen_elementwise.py, with special values against float64), gradcheck of every op
// on plain, empty, 0-d and strided inputs, softmax over every dimension, error messages, and
// the modules' options and printed forms.
#include "golden_cases.hpp"
#include "op_test_helpers.hpp"

using namespace normnet;
using Catch::Contains;
using nlohmann::json;
using test::arg;
using test::input;
using test::require_gradcheck;

namespace {

using Unary = std::function<Tensor(const Tensor&)>;

// Every unary op, by the name gen_elementwise.py gives its cases.
std::map<std::string, Unary> unary_ops() {
    return {
        {"neg", [](const Tensor& x) { return neg(x); }},
        {"exp", [](const Tensor& x) { return x.exp(); }},
        {"expm1", [](const Tensor& x) { return expm1(x); }},
        {"log", [](const Tensor& x) { return x.log(); }},
        {"log1p", [](const Tensor& x) { return log1p(x); }},
        {"sqrt", [](const Tensor& x) { return x.sqrt(); }},
        {"rsqrt", [](const Tensor& x) { return rsqrt(x); }},
        {"reciprocal", [](const Tensor& x) { return x.reciprocal(); }},
        {"abs", [](const Tensor& x) { return abs(x); }},
        {"square", [](const Tensor& x) { return x.square(); }},
        {"sign", [](const Tensor& x) { return sign(x); }},
        {"erf", [](const Tensor& x) { return erf(x); }},
        {"clamp", [](const Tensor& x) { return x.clamp(-0.5f, 0.7f); }},
        {"clamp_min", [](const Tensor& x) { return clamp_min(x, -0.2f); }},
        {"clamp_max", [](const Tensor& x) { return x.clamp(std::nullopt, 0.3f); }},
        {"pow2", [](const Tensor& x) { return pow(x, 2.0f); }},
        {"pow3", [](const Tensor& x) { return pow(x, 3.0f); }},
        {"pow0.5", [](const Tensor& x) { return x.pow(0.5f); }},
        {"pow-0.5", [](const Tensor& x) { return pow(x, -0.5f); }},
        {"pow-1", [](const Tensor& x) { return pow(x, -1.0f); }},
        {"pow-2", [](const Tensor& x) { return pow(x, -2.0f); }},
        {"pow1.7", [](const Tensor& x) { return pow(x, 1.7f); }},
        {"pow0", [](const Tensor& x) { return pow(x, 0.0f); }},
        {"relu", [](const Tensor& x) { return x.relu(); }},
        {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2f); }},
        {"elu", [](const Tensor& x) { return elu(x, 1.5f); }},
        {"gelu", [](const Tensor& x) { return gelu(x); }},
        {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }},
        {"silu", [](const Tensor& x) { return silu(x); }},
        {"tanh", [](const Tensor& x) { return x.tanh(); }},
        {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }},
        {"softplus", [](const Tensor& x) { return softplus(x); }},
        {"softplus_beta", [](const Tensor& x) { return softplus(x, 2.0f, 4.0f); }},
    };
}

std::map<std::string, test::GoldenOp> activation_golden_ops() {
    std::map<std::string, test::GoldenOp> ops;
    for (const auto& [name, f] : unary_ops()) {
        ops[name] = [f = f](const std::vector<Tensor>& in, const json&) { return f(in[0]); };
    }
    ops["softmax"] = [](auto& in, auto& a) { return in[0].softmax(a.at("dim").template get<int>()); };
    ops["log_softmax"] = [](auto& in, auto& a) { return log_softmax(in[0], a.at("dim").template get<int>()); };
    return ops;
}

}  // namespace

TEST_CASE("activation: unary math, activations and softmax match PyTorch", "[ops][activation][golden]") {
    const int n = test::run_golden_cases("activation.safetensors", activation_golden_ops());
    CHECK(std::to_string(n) == test::golden("activation.safetensors").metadata.at("cases"));
}

TEST_CASE("activation: gradcheck of every unary op on plain, empty, 0-d and strided inputs",
          "[ops][activation][gradcheck]") {
    // Inputs away from the kinks (abs, clamp, relu, sign at 0) and inside the domains (log, sqrt).
    const std::set<std::string> positive = {"log", "log1p", "sqrt", "rsqrt", "reciprocal", "pow0.5", "pow-0.5",
                                            "pow-1", "pow-2", "pow1.7"};
    for (const auto& [name, f] : unary_ops()) {
        INFO(name);
        const bool pos = positive.count(name) > 0;
        const auto make = [&](const Shape& s, uint64_t seed) {
            Tensor t = input(s, seed, pos ? 0.3f : 1.5f, pos ? 1.5f : 0.0f);
            if (!pos) {  // move values off the kinks at 0 (abs, relu, sign)
                NoGradGuard no_grad;
                t = add(t, mul(t.sign(), 0.05f)).detach().requires_grad_();
            }
            return t;
        };
        GradcheckOptions options;
        options.eps = name.rfind("clamp", 0) == 0 ? 1e-4 : 1e-3;
        require_gradcheck(gradcheck([f = f](auto& in) { return f(in[0]); }, {make({3, 5}, 1)}, options));
        require_gradcheck(gradcheck([f = f](auto& in) { return f(in[0].t()); }, {make({5, 3}, 2)}, options));
        require_gradcheck(gradcheck([f = f](auto& in) { return f(in[0]); }, {make({}, 3)}, options));
        Tensor empty_in = zeros({2, 0}).requires_grad_();
        const Tensor y = f(empty_in);
        CHECK(y.shape() == Shape{2, 0});
        sum(y).backward();
        CHECK(empty_in.grad().shape() == Shape{2, 0});
    }
}

TEST_CASE("activation: gradcheck of softmax and log_softmax over every dimension", "[ops][activation][gradcheck]") {
    const Tensor x = input({3, 4, 5}, 4, 2.0f), wide = input({1, 3, 260}, 5, 2.0f);
    for (const bool log : {false, true}) {
        const auto f = [log](const Tensor& t, int dim) { return log ? log_softmax(t, dim) : softmax(t, dim); };
        for (int dim = -3; dim < 3; ++dim) {
            INFO((log ? "log_softmax" : "softmax") << " dim " << dim);
            require_gradcheck(gradcheck([&](auto& in) { return f(in[0], dim); }, {x}));
            require_gradcheck(gradcheck([&](auto& in) { return f(in[0].transpose(0, 2), dim); }, {x}));
        }
        // More columns (260) than one block of the column kernel (256).
        require_gradcheck(gradcheck([&](auto& in) { return f(in[0], 1); }, {wide}));
        require_gradcheck(gradcheck([&](auto& in) { return f(in[0], 0); }, {input({}, 6)}));
    }
}

TEST_CASE("activation: softmax sums to 1, keeps its accuracy at logits of 1e4, and splits across threads",
          "[ops][activation]") {
    test::ThreadsGuard threads;
    Generator gen(7);
    const Tensor x = mul(randn({64, 1024}, gen), 1e4f);
    set_num_threads(1);
    const Tensor one = softmax(x, 1), one_t = softmax(x.t().contiguous(), 0), one_log = log_softmax(x, 1);
    set_num_threads(2);
    CHECK(test::bit_equal(softmax(x, 1), one));
    CHECK(test::bit_equal(softmax(x.t().contiguous(), 0), one_t));
    CHECK(test::bit_equal(log_softmax(x, 1), one_log));
    test::require_close(one_t.t(), one, 1e-6, "columns vs rows");
    test::require_close(sum(one, {1}), ones({64}), 1e-6, "rows sum to 1");
    // float64: log_softmax([1e4, 9999, 9998]) over either layout.
    const double want0 = -std::log(1.0 + std::exp(-1.0) + std::exp(-2.0));
    const Tensor row = tensor({1e4f, 9999.0f, 9998.0f});
    for (const Tensor& y : {log_softmax(row, 0), log_softmax(row.view({3, 1}), 0).view({3})}) {
        const std::vector<float> v = y.to_vector();
        CHECK(std::abs(v[0] - want0) <= 1e-6);
        CHECK(std::abs(v[2] - (want0 - 2.0)) <= 1e-6);
    }
    // A row of -inf (all masked) gives NaN, as torch; a NaN poisons its row only.
    const Tensor masked = softmax(tensor({-INFINITY, -INFINITY, 0, 1}).view({2, 2}), 1);
    CHECK(std::isnan(masked.to_vector()[0]));
    CHECK(std::abs(masked.to_vector()[3] - 0.7310586f) < 1e-6);
    const std::vector<float> poisoned = softmax(tensor({NAN, 1, 0, 1}).view({2, 2}), 1).to_vector();
    CHECK((std::isnan(poisoned[0]) && std::isnan(poisoned[1]) && !std::isnan(poisoned[2])));
}

TEST_CASE("activation: bad arguments name the op", "[ops][activation]") {
    CHECK_THROWS_WITH(gelu(ones({2}), "fast"), "gelu: approximate must be 'none' or 'tanh', got 'fast'");
    CHECK_THROWS_WITH(GELU(GELUOptions{.approximate = "erf"}), Contains("GELU") && Contains("'erf'"));
    CHECK_THROWS_WITH(softmax(ones({2, 3}), 2), Contains("softmax") && Contains("dimension out of range") &&
                                                   Contains("[-2, 1]") && Contains("[2, 3]"));
    CHECK_THROWS_WITH(log_softmax(ones({2, 3}), -3), Contains("log_softmax") && Contains("-3"));
    CHECK_THROWS_WITH(softmax(ones({2}, kInt64), 0), Contains("softmax") && Contains("int64"));
    CHECK_THROWS_WITH(exp(ones({2}, kBool)), "exp: expected a float32 tensor, got bool");
    CHECK_THROWS_WITH(sigmoid(ones({2}, kInt64)), Contains("sigmoid") && Contains("int64"));
    CHECK_THROWS_WITH(clamp(ones({2}), std::nullopt, std::nullopt), Contains("clamp") && Contains("min") &&
                                                                       Contains("max"));
}

TEST_CASE("activation: elementwise results do not depend on the thread count", "[ops][activation]") {
    test::ThreadsGuard threads;
    Generator gen(8);
    const Tensor x = mul(randn({3, 70001}, gen), 4.0f);
    const std::vector<Unary> fns = {[](const Tensor& t) { return gelu(t); }, [](const Tensor& t) { return t.tanh(); },
                                    [](const Tensor& t) { return silu(t); }, [](const Tensor& t) { return t.exp(); }};
    for (const auto& f : fns) {
        set_num_threads(1);
        const Tensor one = f(x);
        set_num_threads(2);
        CHECK(test::bit_equal(f(x), one));
    }
}

TEST_CASE("activation: modules have PyTorch's options, defaults and printed form", "[ops][activation][modules]") {
    CHECK(GELU().to_string() == "GELU(approximate='none')");
    CHECK(GELU(GELUOptions{.approximate = "tanh"}).to_string() == "GELU(approximate='tanh')");
    CHECK(Tanh().to_string() == "Tanh()");
    CHECK(Sigmoid().to_string() == "Sigmoid()");
    CHECK(SiLU().to_string() == "SiLU()");
    CHECK(LeakyReLU().to_string() == "LeakyReLU(negative_slope=0.01)");
    CHECK(LeakyReLU(LeakyReLUOptions{.negative_slope = 0.2}).to_string() == "LeakyReLU(negative_slope=0.2)");
    CHECK(ELU().to_string() == "ELU(alpha=1.0)");
    CHECK(ELU(ELUOptions{.alpha = 0.5}).to_string() == "ELU(alpha=0.5)");
    CHECK(Softplus().to_string() == "Softplus(beta=1, threshold=20)");
    CHECK(Softplus(SoftplusOptions{.beta = 0.5, .threshold = 10}).to_string() == "Softplus(beta=0.5, threshold=10)");
    CHECK(Softmax(1).to_string() == "Softmax(dim=1)");
    CHECK(LogSoftmax(SoftmaxOptions{.dim = -1}).to_string() == "LogSoftmax(dim=-1)");
    CHECK(LeakyReLU().options().negative_slope == 0.01);
    CHECK(Softplus().options().threshold == 20.0);
    // Forward is the functional op; no parameters.
    Generator gen(9);
    const Tensor x = randn({4, 5}, gen);
    CHECK(test::bit_equal(GELU(GELUOptions{.approximate = "tanh"})(x), gelu(x, "tanh")));
    CHECK(test::bit_equal(LeakyReLU(LeakyReLUOptions{.negative_slope = 0.2})(x), leaky_relu(x, 0.2f)));
    CHECK(test::bit_equal(ELU(ELUOptions{.alpha = 0.5})(x), elu(x, 0.5f)));
    CHECK(test::bit_equal(Softplus(SoftplusOptions{.beta = 2, .threshold = 3})(x), softplus(x, 2, 3)));
    CHECK(test::bit_equal(Softmax(0)(x), softmax(x, 0)));
    CHECK(test::bit_equal(LogSoftmax(1)(x), log_softmax(x, 1)));
    CHECK(test::bit_equal(SiLU()(x), silu(x)));
    CHECK(test::bit_equal(Tanh()(x), tanh(x)));
    CHECK(test::bit_equal(Sigmoid()(x), sigmoid(x)));
    CHECK(GELU().parameters().empty());
    Sequential model{Linear(5, 3), GELU(), Linear(3, 2), LogSoftmax(1)};
    CHECK(model.to_string() == "Sequential(\n  (0): Linear(in_features=5, out_features=3, bias=True)\n"
                               "  (1): GELU(approximate='none')\n"
                               "  (2): Linear(in_features=3, out_features=2, bias=True)\n"
                               "  (3): LogSoftmax(dim=1)\n)");
    require_gradcheck(gradcheck(model, x.detach().requires_grad_()));
}

TEST_CASE("activation: Hardtanh, ReLU6, SELU, Mish, Hardswish and PReLU as modules", "[ops][activation][modules]") {
    CHECK(Hardtanh().to_string() == "Hardtanh(min_val=-1.0, max_val=1.0)");
    CHECK(Hardtanh(HardtanhOptions{.min_val = 0, .max_val = 2.5}).to_string() == "Hardtanh(min_val=0.0, max_val=2.5)");
    CHECK_THROWS_WITH(Hardtanh(HardtanhOptions{.min_val = 1, .max_val = 1}),
                      Contains("Hardtanh: max_val (1) must be greater than min_val (1)"));
    CHECK(ReLU6().to_string() == "ReLU6()");
    CHECK(SELU().to_string() == "SELU()");
    CHECK(Mish().to_string() == "Mish()");
    CHECK(Hardswish().to_string() == "Hardswish()");
    // PReLU: torch's parameter name, shape, initial value and printed form.
    PReLU one;
    CHECK(one.to_string() == "PReLU(num_parameters=1)");
    PReLU per_channel(PReLUOptions{.num_parameters = 3, .init = 0.1});
    REQUIRE(per_channel.named_parameters().size() == 1);
    CHECK(per_channel.named_parameters()[0].first == "weight");
    CHECK(per_channel.weight.shape() == Shape{3});
    CHECK(per_channel.weight.to_vector() == std::vector<float>(3, 0.1f));
    CHECK(one.weight.to_vector() == std::vector<float>{0.25f});
    CHECK_THROWS_WITH(PReLU(PReLUOptions{.num_parameters = 0}), Contains("PReLU: num_parameters must be positive"));

    Generator gen(4);
    const Tensor x = randn({4, 3, 5}, gen);
    CHECK(test::bit_equal(Hardtanh(HardtanhOptions{.min_val = -0.5, .max_val = 2})(x), hardtanh(x, -0.5f, 2.0f)));
    CHECK(test::bit_equal(ReLU6()(x), relu6(x)));
    CHECK(test::bit_equal(SELU()(x), selu(x)));
    CHECK(test::bit_equal(Mish()(x), mish(x)));
    CHECK(test::bit_equal(Hardswish()(x), hardswish(x)));
    CHECK(test::bit_equal(per_channel(x), prelu(x, per_channel.weight)));
    CHECK_THROWS_WITH(per_channel(randn({4, 5})), Contains("prelu: Mismatch of parameter numbers and input channel size"));
    // The slopes learn: gradcheck through the module, and the clone's weight is its own.
    require_gradcheck(gradcheck(per_channel, randn({2, 3, 4}, gen).requires_grad_()));
    const auto copy = std::dynamic_pointer_cast<PReLU>(per_channel.clone());
    REQUIRE(copy);
    CHECK(copy->to_string() == per_channel.to_string());
    CHECK_FALSE(copy->weight.shares_storage(per_channel.weight));
}

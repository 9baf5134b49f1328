// A custom differentiable op: GELU (exact, as torch.nn.GELU()) with its hand-written backward,
// defined with normnet::Function (forward + backward, as torch::autograd::Function), checked
// against central differences with normnet::gradcheck, wrapped in a Module and used in a model
// that learns to classify two interleaved spirals, a problem made in memory (no files).
//   custom_op [--epochs 200] [--points 512 (per class)]
#include <normnet/normnet.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <numbers>
#include <vector>

#include "example_args.hpp"

using namespace normnet;

constexpr float kInvSqrt2 = static_cast<float>(1.0 / std::numbers::sqrt2);
constexpr float kInvSqrt2Pi = static_cast<float>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);

/// gelu(x) = x * Phi(x), Phi the standard normal CDF; gelu'(x) = Phi(x) + x * phi(x).
struct GeluFunction : Function<GeluFunction> {
    static Tensor forward(AutogradContext* ctx, const Tensor& input) {
        const Tensor x = input.contiguous();  // data() is row-major only for contiguous tensors
        Tensor y = empty(x.shape());
        const float* px = x.data();
        float* py = y.data();
        for (int64_t i = 0; i < x.numel(); ++i) py[i] = 0.5f * px[i] * (1.0f + std::erf(px[i] * kInvSqrt2));
        ctx->save_for_backward({x});
        return y;
    }
    static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
        const Tensor x = ctx->get_saved_variables()[0];
        const Tensor& dy = grad_outputs[0];  // contiguous, x's shape
        Tensor dx = empty(x.shape());
        const float* px = x.data();
        const float* pdy = dy.data();
        float* pdx = dx.data();
        for (int64_t i = 0; i < x.numel(); ++i) {
            const float cdf = 0.5f * (1.0f + std::erf(px[i] * kInvSqrt2));
            const float pdf = kInvSqrt2Pi * std::exp(-0.5f * px[i] * px[i]);
            pdx[i] = pdy[i] * (cdf + px[i] * pdf);
        }
        return {dx};  // one gradient per forward argument
    }
};

/// The op as a layer, so it goes into Sequential like ReLU (normnet::GELU is the built-in one).
class CustomGELU : public Module {
public:
    Tensor forward(const Tensor& x) override { return GeluFunction::apply(x); }
};

// Two spirals of `n` points each: inputs [2n, 2], labels 0 and 1.
std::pair<Tensor, Tensor> spirals(int64_t n, Generator& gen) {
    Tensor inputs = empty({2 * n, 2});
    Tensor labels = empty({2 * n}, kInt64);
    for (int64_t i = 0; i < 2 * n; ++i) {
        const int64_t cls = i % 2;
        const double r = static_cast<double>(i / 2) / static_cast<double>(n), angle = 3.0 * std::numbers::pi * r + std::numbers::pi * static_cast<double>(cls);
        inputs.data()[2 * i] = static_cast<float>(r * std::cos(angle) + 0.02 * gen.normal());
        inputs.data()[2 * i + 1] = static_cast<float>(r * std::sin(angle) + 0.02 * gen.normal());
        labels.data_ptr<int64_t>()[i] = cls;
    }
    return {inputs, labels};
}

int main(int argc, char** argv) try {
    examples::Args args(argc, argv, "usage: custom_op [--epochs N] [--points N]\n");
    const int64_t epochs = args.num("epochs", 200), points = args.num("points", 512);
    args.done();

    // 1. The hand-written backward agrees with central differences (inputs spread over [-3, 3]).
    Tensor x = (randn({5, 7}) * 1.5f).detach().requires_grad_();
    const GradcheckResult check = gradcheck([](const tensor_list& in) { return GeluFunction::apply(in[0]); }, {x});
    std::printf("gradcheck GeluFunction: %s (%lld values)\n", check.ok ? "ok" : check.message.c_str(),
                static_cast<long long>(check.checked));
    std::cout << "gelu([-1, 0, 1]) = " << GeluFunction::apply(tensor({-1, 0, 1}).requires_grad_()) << "\n";
    if (!check.ok) return 1;

    // 2. The op inside a model, trained like any other.
    manual_seed(0);
    Generator gen(42);
    auto [inputs, labels] = spirals(points, gen);
    DataLoader loader(inputs, labels, {.batch_size = 64, .shuffle = true});
    Sequential model{Linear(2, 64), CustomGELU(), Linear(64, 64), CustomGELU(), Linear(64, 2)};
    std::cout << model.to_string() << "\n";
    Adam optimizer(model.named_parameters(), {.lr = 1e-2});
    for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
        double loss_sum = 0;
        for (const Batch& batch : loader) {
            Tensor loss = cross_entropy(model(batch.inputs), batch.labels);
            optimizer.zero_grad();
            loss.backward();
            optimizer.step();
            loss_sum += loss.item() * static_cast<double>(batch.size());
        }
        if (epoch % 50 == 0 || epoch == epochs) {
            std::printf("epoch %lld  loss %.4f\n", static_cast<long long>(epoch), loss_sum / double(loader.dataset_size()));
        }
    }
    NoGradGuard no_grad;
    const double acc = 100.0 * double(count_correct(model(inputs), labels)) / double(inputs.size(0));
    std::printf("training accuracy on the spirals: %.1f%%\n", acc);
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "custom_op: error: %s\n", e.what());
    return 1;
}

// gradcheck: analytic gradients against central differences of a random projection of the
// output, evaluated in double. The analytic gradient is taken three ways, which must agree, so
// both branches of the engine's gradient rule are exercised for every op: into .grad pre-filled
// with garbage (added to), into no .grad (written fresh), and through non-leaf copies of the
// inputs used by two calls of the function (the second call's gradient is added to the first's).
#include "normnet/gradcheck.hpp"

#include <cmath>
#include <cstdio>

#include "normnet/autograd.hpp"
#include "normnet/ops.hpp"
#include "ops/op.hpp"

namespace normnet {
namespace {

double projected(const Tensor& out, const std::vector<float>& w) {
    const std::vector<float> v = out.to_vector();
    double s = 0.0;
    for (size_t i = 0; i < v.size(); ++i) s += static_cast<double>(v[i]) * w[i];
    return s;
}

GradcheckResult mismatch(const char* what, size_t input, int64_t element, double a, double b) {
    char buf[240];
    std::snprintf(buf, sizeof buf, "gradcheck: input %zu element %lld: %s %.6g vs %.6g", input,
                  static_cast<long long>(element), what, a, b);
    return {false, buf, 0};
}

}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
    Generator gen(options.seed);
    const size_t n = inputs.size();
    // 1. Into .grad pre-filled with garbage: an op that overwrites instead of adding fails.
    std::vector<Tensor> garbage(n);
    for (size_t i = 0; i < n; ++i) {
        if (!inputs[i].requires_grad()) continue;
        garbage[i] = randn(inputs[i].shape(), gen);
        inputs[i].set_grad(garbage[i].clone());
    }
    const Tensor out = fn(inputs);
    NORMNET_CHECK(out.requires_grad(), "gradcheck: the function's output does not require grad");
    std::vector<float> w(static_cast<size_t>(out.numel()));
    for (auto& v : w) v = static_cast<float>(gen.normal());
    const Tensor weights = from_vector(w, out.shape());
    out.backward(weights);
    std::vector<std::vector<float>> analytic(n);
    for (size_t i = 0; i < n; ++i) {
        if (!inputs[i].requires_grad()) continue;
        analytic[i] = inputs[i].grad().to_vector();
        const std::vector<float> fill = garbage[i].to_vector();
        for (size_t j = 0; j < fill.size(); ++j) analytic[i][j] -= fill[j];
    }
    // The other two ways must give the same gradients (up to the rounding of the garbage).
    const auto agree = [&](const char* what, double factor) -> GradcheckResult {
        for (size_t i = 0; i < n; ++i) {
            if (!inputs[i].requires_grad()) continue;
            const Tensor g = inputs[i].grad();
            if (!g.defined()) return mismatch(what, i, 0, 0.0, 1.0);
            const std::vector<float> v = g.to_vector();
            for (size_t j = 0; j < v.size(); ++j) {
                const double a = factor * analytic[i][j], b = v[j];
                if (!(std::abs(a - b) <= 1e-4 + 1e-4 * std::abs(a))) return mismatch(what, i, static_cast<int64_t>(j), b, a);
            }
        }
        return {};
    };
    // 2. Into no .grad: every gradient buffer is new (and holds NaN) and must be written whole.
    for (const Tensor& x : inputs) {
        if (x.requires_grad()) x.set_grad(Tensor());
    }
    {
        const detail::PoisonFreshGradients poison;
        fn(inputs).backward(weights);
    }
    if (GradcheckResult r = agree("fresh .grad gives", 1.0); !r.ok) return r;
    // 3. Through non-leaf copies used twice: the second gradient is added to the first's buffer.
    for (const Tensor& x : inputs) {
        if (x.requires_grad()) x.set_grad(Tensor());
    }
    std::vector<Tensor> copies;
    for (const Tensor& x : inputs) copies.push_back(x.requires_grad() ? mul(x, 1.0f) : x);
    {
        const detail::PoisonFreshGradients poison;
        add(fn(copies), fn(copies)).backward(weights);
    }
    if (GradcheckResult r = agree("twice through a non-leaf gives", 2.0); !r.ok) return r;

    // Numeric: central differences of the projection, input by input.
    GradcheckResult result;
    NoGradGuard no_grad;
    for (size_t i = 0; i < n; ++i) {
        const Tensor& x = inputs[i];
        if (!x.requires_grad()) continue;
        NORMNET_CHECK(x.is_contiguous(), "gradcheck: input ", i, " must be contiguous");
        float* data = x.data();
        for (int64_t j = 0; j < x.numel(); ++j) {
            const float saved = data[j];
            data[j] = static_cast<float>(saved + options.eps);
            const double plus = projected(fn(inputs), w);
            data[j] = static_cast<float>(saved - options.eps);
            const double minus = projected(fn(inputs), w);
            data[j] = saved;
            const double numeric = (plus - minus) / (2.0 * options.eps);
            const double a = analytic[i][static_cast<size_t>(j)];
            ++result.checked;
            if (!(std::abs(a - numeric) <= options.atol + options.rtol * std::abs(numeric))) {
                return mismatch("analytic", i, j, a, numeric);
            }
        }
    }
    return result;
}

GradcheckResult gradcheck(Module& module, const Tensor& x, const GradcheckOptions& options) {
    std::vector<Tensor> inputs{x};
    for (const Tensor& p : module.parameters()) inputs.push_back(p);
    return gradcheck([&module](const std::vector<Tensor>& in) { return module.forward(in[0]); }, inputs, options);
}

}  // namespace normnet

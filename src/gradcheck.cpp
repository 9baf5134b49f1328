// gradcheck: analytic gradients (one backward with garbage-filled .grad) against central
// differences of a random projection of the output, evaluated in double.
#include "normnet/gradcheck.hpp"

#include <cmath>
#include <cstdio>

#include "normnet/autograd.hpp"

namespace normnet {
namespace {

double projected(const Tensor& out, const std::vector<float>& w) {
    const std::vector<float> v = out.to_vector();
    double s = 0.0;
    for (size_t i = 0; i < v.size(); ++i) s += static_cast<double>(v[i]) * w[i];
    return s;
}

}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
    Generator gen(options.seed);
    GradcheckResult result;

    // Analytic: pre-fill every .grad with garbage, backward once, subtract the garbage.
    std::vector<Tensor> garbage(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].requires_grad()) continue;
        garbage[i] = randn(inputs[i].shape(), gen);
        inputs[i].set_grad(garbage[i].clone());
    }
    const Tensor out = fn(inputs);
    NORMNET_CHECK(out.requires_grad(), "gradcheck: the function's output does not require grad");
    std::vector<float> w(static_cast<size_t>(out.numel()));
    for (auto& v : w) v = static_cast<float>(gen.normal());
    out.backward(from_vector(w, out.shape()));

    NoGradGuard no_grad;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const Tensor& x = inputs[i];
        if (!x.requires_grad()) continue;
        NORMNET_CHECK(x.is_contiguous(), "gradcheck: input ", i, " must be contiguous");
        const std::vector<float> analytic_raw = x.grad().to_vector();
        const std::vector<float> fill = garbage[i].to_vector();
        float* data = x.data();
        for (int64_t j = 0; j < x.numel(); ++j) {
            const float saved = data[j];
            data[j] = static_cast<float>(saved + options.eps);
            const double plus = projected(fn(inputs), w);
            data[j] = static_cast<float>(saved - options.eps);
            const double minus = projected(fn(inputs), w);
            data[j] = saved;
            const double numeric = (plus - minus) / (2.0 * options.eps);
            const double analytic = static_cast<double>(analytic_raw[static_cast<size_t>(j)]) - fill[static_cast<size_t>(j)];
            ++result.checked;
            if (!(std::abs(analytic - numeric) <= options.atol + options.rtol * std::abs(numeric))) {
                char buf[200];
                std::snprintf(buf, sizeof buf, "gradcheck: input %zu element %lld: analytic %.6g vs numeric %.6g", i,
                              static_cast<long long>(j), analytic, numeric);
                result.ok = false;
                result.message = buf;
                return result;
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

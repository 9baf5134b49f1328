// Gradient clipping, as torch.nn.utils (1.13): clip_grad_norm_ by global L2 norm (norm_type 2):
// the norm of the per-tensor norms, then every gradient scaled by min(max_norm / (norm + 1e-6), 1);
// clip_grad_value_, which clamps every element.
#include <algorithm>
#include <cmath>

#include "normnet/optim.hpp"

namespace normnet {
namespace {

// The L2 norm of g: [n], rounded to float32 as torch's per-tensor norm. The squares are summed
// in double in kLanes independent partial sums: without -ffast-math the compiler may not reorder
// one running sum, so separate lanes are what lets it vectorise (and hides the add latency).
float l2_norm(const float* g, int64_t n) {
    constexpr int64_t kLanes = 16;
    double lanes[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] += static_cast<double>(g[i + j]) * g[i + j];
    }
    for (; i < n; ++i) lanes[0] += static_cast<double>(g[i]) * g[i];
    double sum = 0.0;
    for (double lane : lanes) sum += lane;
    return static_cast<float>(std::sqrt(sum));
}

}  // namespace

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
    NORMNET_CHECK(!std::isnan(max_norm) && max_norm >= 0.0, "clip_grad_norm: max_norm must be >= 0, got ", max_norm);
    // torch keeps each tensor's norm and the total as float32 tensors; so do we.
    double sum = 0.0;
    for (const Tensor& p : params) {
        const Tensor g = p.defined() ? p.grad() : Tensor();
        if (!g.defined()) continue;
        if (!g.is_contiguous()) {
            fail("clip_grad_norm: gradients must be contiguous, got strides ", g.strides().str(), " for shape ",
                 g.shape().str());
        }
        const double norm = l2_norm(g.data(), g.numel());
        sum += norm * norm;
    }
    const float total = static_cast<float>(std::sqrt(sum));
    // torch: max_norm / (total_norm + 1e-6) is evaluated as reciprocal(total + 1e-6) * max_norm.
    const float coef = std::min((1.0f / (total + 1e-6f)) * static_cast<float>(max_norm), 1.0f);
    // A coefficient of 1 leaves the gradients bit-identical; skip the pass. (NaN still multiplies.)
    if (coef != 1.0f) {
        for (const Tensor& p : params) {
            const Tensor g = p.defined() ? p.grad() : Tensor();
            if (!g.defined()) continue;
            float* d = g.data();
            for (int64_t i = 0; i < g.numel(); ++i) d[i] *= coef;
        }
    }
    return total;
}

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm) { return clip_grad_norm(params, max_norm); }

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
    NORMNET_CHECK(!std::isnan(clip_value) && clip_value >= 0.0, "clip_grad_value_: clip_value must be >= 0, got ",
                  clip_value);
    // torch clamps with the value as a float32 scalar.
    const float hi = static_cast<float>(clip_value), lo = -hi;
    for (const Tensor& p : params) {
        const Tensor g = p.defined() ? p.grad() : Tensor();
        if (!g.defined()) continue;
        NORMNET_CHECK(g.is_contiguous(), "clip_grad_value_: gradients must be contiguous, got strides ", g.strides().str(),
                      " for shape ", g.shape().str());
        float* __restrict d = g.data();
        // clamp(x, lo, hi) = min(max(x, lo), hi), NaN kept (both comparisons are false for it).
        for (int64_t i = 0; i < g.numel(); ++i) d[i] = d[i] < lo ? lo : d[i] > hi ? hi : d[i];
    }
}

}  // namespace normnet

// Losses and their backwards: the fused cross_entropy (log-softmax and NLL in one pass, saving
// only each row's maximum and sum of exponentials), mse_loss, and count_correct (log_softmax
// itself is in activation.cpp). Log-probabilities are formed as (x - max) - log(sum exp(x -
// max)), never x - (max + log(...)): at logits of 1e4 the latter rounds to 1e-3.
#include <algorithm>
#include <cmath>

#include "../parallel.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"

namespace normnet {
namespace detail {
namespace {

// max: [N] = row maxima, log_sum: [N] = log(sum(exp(x - max))) of x: [N, C]
void row_log_sum_exp(float* max, float* log_sum, const float* x, int64_t N, int64_t C) {
    for (int64_t n = 0; n < N; ++n) {
        const float* row = x + n * C;
        const float m = C > 0 ? *std::max_element(row, row + C) : -INFINITY;
        double s = 0.0;
        for (int64_t c = 0; c < C; ++c) s += std::exp(row[c] - m);
        max[n] = m;
        log_sum[n] = static_cast<float>(std::log(s));
    }
}

// ---- cross_entropy (class indices, mean over the batch) ----------------------------------------

// Returns the summed loss; max, log_sum: [N] saved; logits: [N, C]; targets: [N] in [0, C)
double cross_entropy_forward(float* max, float* log_sum, const float* logits, const int64_t* targets, int64_t N,
                             int64_t C, float smoothing) {
    row_log_sum_exp(max, log_sum, logits, N, C);
    double total = 0.0;
    for (int64_t n = 0; n < N; ++n) {
        const float* row = logits + n * C;
        // -log p_c = (max - x_c) + log_sum
        double loss = (1.0 - smoothing) * ((static_cast<double>(max[n]) - row[targets[n]]) + log_sum[n]);
        if (smoothing != 0.0f) {
            double minus_log_p = 0.0;  // sum over classes of -log p_c
            for (int64_t c = 0; c < C; ++c) minus_log_p += (static_cast<double>(max[n]) - row[c]) + log_sum[n];
            loss += smoothing * minus_log_p / static_cast<double>(C);
        }
        total += loss;
    }
    return total;
}

// dlogits: [N, C] (Store) = dloss / N * (softmax(logits) - smoothed one-hot of the target)
template <class Store>
void cross_entropy_backward(float* dlogits, const float* max, const float* log_sum, const float* logits,
                            const int64_t* targets, float dloss, int64_t N, int64_t C, float smoothing) {
    const float g = dloss / static_cast<float>(N);
    const float off_target = smoothing / static_cast<float>(C);
    for (int64_t n = 0; n < N; ++n) {
        const float* row = logits + n * C;
        float* drow = dlogits + n * C;
        const int64_t t = targets[n];
        for (int64_t c = 0; c < C; ++c) {
            const float p = std::exp((row[c] - max[n]) - log_sum[n]);
            Store::put(drow[c], g * (p - off_target - (c == t ? 1.0f - smoothing : 0.0f)));
        }
    }
}

class CrossEntropyLossBackward final : public OpNode {
public:
    int64_t N = 0, C = 0;
    float smoothing = 0.0f;
    const char* name() const override { return "CrossEntropyLossBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &logits = saved(0), &targets = saved(1), &max = saved(2), &log_sum = saved(3);
        if (const GradOut dl = grad_out(0)) {
            dl.write([&]<class Store>(float* d) {
                const int64_t rows_per_chunk = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(C, 1));
                parallel_for(N, rows_per_chunk, [&](int64_t b, int64_t e) {
                    cross_entropy_backward<Store>(d + b * C, max.data() + b, log_sum.data() + b, logits.data() + b * C,
                                                  targets.data_ptr<int64_t>() + b, dout.item(), e - b, C, smoothing);
                });
            });
        }
    }
};

// Checks logits [N, C] against targets: an int64 tensor of N class indices in [0, C).
void check_targets(const Tensor& logits, const Tensor& targets, const char* op) {
    NORMNET_CHECK(logits.dtype() == kFloat32, op, ": expected float32 logits, got ", logits.dtype());
    NORMNET_CHECK(logits.dim() == 2, op, ": logits must be [N, C], got ", logits.shape());
    NORMNET_CHECK(targets.dtype() == kInt64, op, ": expected target of dtype int64 (class indices), got ",
                  targets.dtype());
    const int64_t N = logits.size(0), C = logits.size(1);
    NORMNET_CHECK(targets.dim() == 1 && targets.size(0) == N, op, ": target of shape ", targets.shape(),
                  " does not match logits of shape ", logits.shape(), " (expected [", N, "])");
    const Tensor t = targets.contiguous();
    const int64_t* p = t.data_ptr<int64_t>();
    for (int64_t i = 0; i < N; ++i) {
        NORMNET_CHECK(p[i] >= 0 && p[i] < C, op, ": target ", p[i], " at row ", i, " is out of bounds for ", C,
                      " classes");
    }
}

}  // namespace
}  // namespace detail

Tensor cross_entropy(const Tensor& logits_in, const Tensor& targets_in, float label_smoothing) {
    detail::check_targets(logits_in, targets_in, "cross_entropy");
    NORMNET_CHECK(label_smoothing >= 0.0f && label_smoothing <= 1.0f,
                  "cross_entropy: label_smoothing must be in [0, 1], got ", label_smoothing);
    const Tensor logits = logits_in.contiguous(), targets = targets_in.contiguous();
    const int64_t N = logits.size(0), C = logits.size(1);
    Tensor max = empty({N}), log_sum = empty({N});
    const double total = detail::cross_entropy_forward(max.data(), log_sum.data(), logits.data(),
                                                       targets.data_ptr<int64_t>(), N, C, label_smoothing);
    // As torch: the mean over an empty batch is nan.
    Tensor out = scalar_tensor(static_cast<float>(total / static_cast<double>(N)));
    if (auto* node = detail::record<detail::CrossEntropyLossBackward>(out, {logits}, {logits, targets, max, log_sum})) {
        node->N = N, node->C = C;
        node->smoothing = label_smoothing;
    }
    return out;
}

namespace detail {
namespace {

// ---- mse_loss (mean) --------------------------------------------------------------------------

// diff: [n] = a - b; returns sum(diff^2)
double mse_forward(float* diff, const float* a, const float* b, int64_t n) {
    double total = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        diff[i] = a[i] - b[i];
        total += static_cast<double>(diff[i]) * diff[i];
    }
    return total;
}

// d: [n] (Store) = g * diff
template <class Store>
void scaled_copy(float* __restrict d, const float* __restrict diff, float g, int64_t n) {
    for (int64_t i = 0; i < n; ++i) Store::put(d[i], g * diff[i]);
}

class MseLossBackward final : public OpNode {
public:
    const char* name() const override { return "MseLossBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor& diff = saved(0);
        const int64_t n = diff.numel();
        const float g = 2.0f * dout.item() / static_cast<float>(n);
        for (int i = 0; i < 2; ++i) {
            if (const GradOut d = grad_out(i)) {
                d.write([&]<class Store>(float* p) { scaled_copy<Store>(p, diff.data(), i == 0 ? g : -g, n); });
            }
        }
    }
};

}  // namespace
}  // namespace detail

Tensor mse_loss(const Tensor& input, const Tensor& target) {
    NORMNET_CHECK(input.dtype() == kFloat32 && target.dtype() == kFloat32, "mse_loss: expected float32 tensors, got ",
                  input.dtype(), " and ", target.dtype());
    NORMNET_CHECK(input.shape() == target.shape(), "mse_loss: input of shape ", input.shape(), " and target of shape ",
                  target.shape(), " differ");
    const Tensor a = input.contiguous(), b = target.contiguous();
    Tensor diff = empty(a.shape());
    const double total = detail::mse_forward(diff.data(), a.data(), b.data(), a.numel());
    // As torch: the mean over no elements is nan.
    Tensor out = scalar_tensor(static_cast<float>(total / static_cast<double>(a.numel())));
    detail::record<detail::MseLossBackward>(out, {a, b}, {diff});
    return out;
}

int64_t count_correct(const Tensor& logits_in, const Tensor& targets) {
    detail::check_targets(logits_in, targets, "count_correct");
    const Tensor logits = logits_in.contiguous(), t = targets.contiguous();
    const int64_t N = logits.size(0), C = logits.size(1);
    const int64_t* target = t.data_ptr<int64_t>();
    int64_t correct = 0;
    for (int64_t n = 0; n < N && C > 0; ++n) {
        const float* row = logits.data() + n * C;
        correct += (std::max_element(row, row + C) - row) == target[n];
    }
    return correct;
}

}  // namespace normnet

// Losses and their backwards: log_softmax, the fused cross_entropy (log-softmax and NLL in one
// pass, saving only each row's log-sum-exp), mse_loss, and the count_correct metric.
#include <algorithm>
#include <cmath>

#include "normnet/autograd.hpp"
#include "normnet/ops.hpp"

namespace normnet {
namespace detail {

// lse: [N] = log(sum(exp(x))) per row of x: [N, C], stable: the row's maximum is factored out.
void log_sum_exp_rows(float* lse, const float* x, int64_t N, int64_t C) {
    for (int64_t n = 0; n < N; ++n) {
        const float* row = x + n * C;
        const float max = *std::max_element(row, row + C);
        float s = 0.0f;
        for (int64_t c = 0; c < C; ++c) s += std::exp(row[c] - max);
        lse[n] = max + std::log(s);
    }
}

// Returns the summed loss; lse: [N] saved; logits: [N, C]; targets: [N].
double cross_entropy_forward(float* lse, const float* logits, const int64_t* targets, int64_t N, int64_t C,
                             float smoothing) {
    log_sum_exp_rows(lse, logits, N, C);
    double total = 0.0;
    for (int64_t n = 0; n < N; ++n) {
        const float* row = logits + n * C;
        double loss = lse[n] - (1.0 - smoothing) * row[targets[n]];
        if (smoothing != 0.0f) {
            double row_sum = 0.0;
            for (int64_t c = 0; c < C; ++c) row_sum += row[c];
            loss -= smoothing * row_sum / static_cast<double>(C);
        }
        total += loss;
    }
    return total;
}

// dlogits: [N, C] += dloss / N * (softmax(logits) - smoothed one-hot of the target)
void cross_entropy_backward(float* dlogits, const float* lse, const float* logits, const float* targets,
                            float dloss, int64_t N, int64_t C, float smoothing) {
    const float g = dloss / static_cast<float>(N);
    const float off_target = smoothing / static_cast<float>(C);
    for (int64_t n = 0; n < N; ++n) {
        const float* row = logits + n * C;
        float* drow = dlogits + n * C;
        for (int64_t c = 0; c < C; ++c) drow[c] += g * (std::exp(row[c] - lse[n]) - off_target);
        drow[static_cast<int64_t>(targets[n])] -= g * (1.0f - smoothing);
    }
}

}  // namespace detail

namespace {

struct LogSoftmaxBackward final : Node {
    Tensor out;  // saved output (log-probabilities)
    int64_t N = 0, C = 0;
    const char* name() const override { return "LogSoftmaxBackward0"; }
    void backward(const Tensor& dout) override {
        Tensor dx = grad_input(0);
        if (!dx.defined()) return;
        // dx += dy - softmax * sum(dy), row by row
        for (int64_t n = 0; n < N; ++n) {
            const float* dy = dout.data() + n * C;
            const float* y = out.data() + n * C;
            float* d = dx.data() + n * C;
            float s = 0.0f;
            for (int64_t c = 0; c < C; ++c) s += dy[c];
            for (int64_t c = 0; c < C; ++c) d[c] += dy[c] - std::exp(y[c]) * s;
        }
    }
    void release_saved() override { out = Tensor(); }
};

struct CrossEntropyBackward final : Node {
    Tensor logits, lse, targets;  // targets kept as floats: exact below 2^24 classes
    int64_t N = 0, C = 0;
    float smoothing = 0.0f;
    const char* name() const override { return "CrossEntropyLossBackward0"; }
    void backward(const Tensor& dout) override {
        Tensor dl = grad_input(0);
        if (dl.defined()) {
            detail::cross_entropy_backward(dl.data(), lse.data(), logits.data(), targets.data(), dout.item(), N, C,
                                           smoothing);
        }
    }
    void release_saved() override { logits = lse = targets = Tensor(); }
};

struct MseBackward final : Node {
    Tensor diff;  // input - target
    const char* name() const override { return "MseLossBackward0"; }
    void backward(const Tensor& dout) override {
        const float g = 2.0f * dout.item() / static_cast<float>(diff.numel());
        if (Tensor di = grad_input(0); di.defined()) di.add_(diff, g);
        if (Tensor dt = grad_input(1); dt.defined()) dt.add_(diff, -g);
    }
    void release_saved() override { diff = Tensor(); }
};

void check_targets(std::span<const int64_t> targets, int64_t N, int64_t C, const char* op) {
    check(static_cast<int64_t>(targets.size()) == N, op, ": ", targets.size(), " targets for a batch of ", N,
          " rows");
    for (size_t i = 0; i < targets.size(); ++i) {
        check(targets[i] >= 0 && targets[i] < C, op, ": target ", targets[i], " at row ", i,
              " is out of bounds for ", C, " classes");
    }
}

}  // namespace

Tensor log_softmax(const Tensor& x_in, int dim) {
    check(x_in.dim() >= 1 && (dim == -1 || dim == x_in.dim() - 1),
          "log_softmax: only the last dimension is supported, got dim ", dim, " for shape ", x_in.shape());
    const Tensor x = x_in.contiguous();
    const int64_t C = x.size(-1), N = x.numel() / std::max<int64_t>(C, 1);
    Tensor out = empty(x.shape());
    Tensor lse = empty({N});
    detail::log_sum_exp_rows(lse.data(), x.data(), N, C);
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = 0; c < C; ++c) out.data()[n * C + c] = x.data()[n * C + c] - lse.data()[n];
    }
    if (autograd::any_requires_grad({&x})) {
        auto node = autograd::make_node<LogSoftmaxBackward>({&x});
        node->out = out.detach();
        node->N = N, node->C = C;
        autograd::set_history(out, node);
    }
    return out;
}

Tensor cross_entropy(const Tensor& logits_in, std::span<const int64_t> targets, float label_smoothing) {
    check(logits_in.dim() == 2, "cross_entropy: logits must be [N, C], got ", logits_in.shape());
    check(label_smoothing >= 0.0f && label_smoothing <= 1.0f, "cross_entropy: label_smoothing must be in [0, 1], got ",
          label_smoothing);
    const Tensor logits = logits_in.contiguous();
    const int64_t N = logits.size(0), C = logits.size(1);
    check(N > 0, "cross_entropy: empty batch");
    check_targets(targets, N, C, "cross_entropy");
    Tensor lse = empty({N});
    const double total =
        detail::cross_entropy_forward(lse.data(), logits.data(), targets.data(), N, C, label_smoothing);
    Tensor out = scalar_tensor(static_cast<float>(total / static_cast<double>(N)));
    if (autograd::any_requires_grad({&logits})) {
        auto node = autograd::make_node<CrossEntropyBackward>({&logits});
        node->logits = logits.detach();
        node->lse = lse;
        node->targets = empty({N});
        for (int64_t n = 0; n < N; ++n) node->targets.data()[n] = static_cast<float>(targets[static_cast<size_t>(n)]);
        node->N = N, node->C = C;
        node->smoothing = label_smoothing;
        autograd::set_history(out, node);
    }
    return out;
}

Tensor mse_loss(const Tensor& input, const Tensor& target) {
    check(input.shape() == target.shape(), "mse_loss: input of shape ", input.shape(),
          " and target of shape ", target.shape(), " differ");
    const Tensor a = input.contiguous(), b = target.contiguous();
    Tensor diff = empty(a.shape());
    double total = 0.0;
    const int64_t n = a.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float d = a.data()[i] - b.data()[i];
        diff.data()[i] = d;
        total += static_cast<double>(d) * d;
    }
    Tensor out = scalar_tensor(static_cast<float>(total / static_cast<double>(std::max<int64_t>(a.numel(), 1))));
    if (autograd::any_requires_grad({&a, &b})) {
        auto node = autograd::make_node<MseBackward>({&a, &b});
        node->diff = diff;
        autograd::set_history(out, node);
    }
    return out;
}

int64_t count_correct(const Tensor& logits_in, std::span<const int64_t> targets) {
    check(logits_in.dim() == 2, "count_correct: logits must be [N, C], got ", logits_in.shape());
    const Tensor logits = logits_in.contiguous();
    const int64_t N = logits.size(0), C = logits.size(1);
    check_targets(targets, N, C, "count_correct");
    int64_t correct = 0;
    for (int64_t n = 0; n < N; ++n) {
        const float* row = logits.data() + n * C;
        correct += (std::max_element(row, row + C) - row) == targets[static_cast<size_t>(n)];
    }
    return correct;
}

}  // namespace normnet

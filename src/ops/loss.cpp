// Losses over a class dimension and their backwards: nll_loss, the fused cross_entropy
// (log-softmax and NLL in one pass, saving only each position's maximum and log-sum-exp),
// count_correct; and the reduction every loss shares (loss.hpp). (log_softmax itself, over any
// dimension, is in activation.cpp.)
// Log-probabilities are formed as (x - max) - log(sum exp(x - max)), never x - (max + log(...)):
// at logits of 1e4 the latter rounds to 1e-3.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "../parallel.hpp"
#include "normnet/ops.hpp"
#include "loop.hpp"
#include "loss.hpp"
#include "op.hpp"

namespace normnet {
namespace detail {

// ---- The reduction shared by every loss -------------------------------------------------------

Tensor reduce_loss(const Tensor& losses, Reduction reduction, double divisor) {
    if (reduction == kNone) return losses;
    const double total = sum(losses).item<double>();
    // As torch: a mean over nothing (no elements, or no counted target) is nan.
    return scalar_tensor(static_cast<float>(reduction == kMean ? total / divisor : total));
}

void check_constant_weight(const Tensor& weight, const char* op, const char* what) {
    NORMNET_CHECK(!weight.requires_grad() || !grad_mode_enabled(), op, ": the derivative for '", what,
                  "' is not implemented (as in torch); pass ", what, ".detach()");
}

namespace {

// ---- The class dimension ------------------------------------------------------------------------

// An input [N, C, d1, ...] (or [C], one unbatched sample) seen as N x C x S with S = d1 * ...: a
// loss runs over the N * S positions p = n * S + s, and class c of position p lies at offset(p) +
// c * S. Per-position values (losses, max, log-sum-exp) are stored in that order, which is the
// row-major order of a class-index target [N, d1, ...].
struct ClassLayout {
    int64_t N = 1, C = 0, S = 1;
    int64_t positions() const { return N * S; }
    int64_t offset(int64_t p) const { return (p / S) * C * S + p % S; }
};

ClassLayout class_layout(const Tensor& input, const char* op, const char* input_name) {
    NORMNET_CHECK(input.dtype() == kFloat32, op, ": expected float32 ", input_name, ", got ", input.dtype());
    NORMNET_CHECK(input.dim() >= 1, op, ": ", input_name, " must be [N, C, ...] or [C], got ", input.shape());
    ClassLayout L;
    if (input.dim() == 1) {
        L.C = input.size(0);
        return L;
    }
    L.N = input.size(0);
    L.C = input.size(1);
    for (int d = 2; d < input.dim(); ++d) L.S *= input.size(d);
    return L;
}

// The input's shape without its class dimension: that of a class-index target and of an
// unreduced loss.
Shape without_class_dim(const Shape& shape) {
    const int class_dim = shape.size() == 1 ? 0 : 1;
    Shape out;
    for (int d = 0; d < shape.size(); ++d) {
        if (d != class_dim) out.push_back(shape[d]);
    }
    return out;
}

// A contiguous copy of the per-class weight [C] (undefined when not given).
Tensor class_weight(const Tensor& weight, int64_t C, const char* op) {
    if (!weight.defined()) return {};
    NORMNET_CHECK(weight.dtype() == kFloat32, op, ": expected a float32 weight, got ", weight.dtype());
    NORMNET_CHECK(weight.dim() == 1 && weight.size(0) == C, op, ": weight tensor should be defined either for all ", C,
                  " classes or no classes but got weight tensor of shape: ", weight.shape());
    check_constant_weight(weight, op, "weight");
    return weight.contiguous();
}

// Checks class-index targets (int64, values in [0, C) or ignore_index) and returns the summed
// weight of the counted ones (their number without weights): the divisor of the mean.
double check_class_targets(const Tensor& input, const Tensor& target, const ClassLayout& L, const float* w,
                           int64_t ignore_index, const char* op, const char* input_name) {
    NORMNET_CHECK(target.dtype() == kInt64, op, ": expected target of dtype int64 (class indices), got ",
                  target.dtype());
    const Shape want = without_class_dim(input.shape());
    NORMNET_CHECK(target.shape() == want, op, ": target of shape ", target.shape(), " does not match ", input_name,
                  " of shape ", input.shape(), " (expected ", want, ")");
    const int64_t* t = target.data_ptr<int64_t>();
    double total = 0.0;
    for (int64_t p = 0; p < L.positions(); ++p) {
        if (t[p] == ignore_index) continue;
        NORMNET_CHECK(t[p] >= 0 && t[p] < L.C, op, ": target ", t[p], " at index ", p, " is out of bounds for ", L.C,
                      " classes");
        total += w ? w[t[p]] : 1.0;
    }
    return total;
}

// Positions per chunk of a class loop, so a chunk holds about kElementGrain elements.
int64_t position_grain(const ClassLayout& L) { return item_grain(L.C); }

// ---- nll_loss -----------------------------------------------------------------------------------

// loss: [P] = -w_t * x_t, 0 where t is ignored; x: [N, C, S] log-probabilities
void nll_forward(float* loss, const float* x, const int64_t* target, const float* w, const ClassLayout& L,
                 int64_t ignore_index) {
    for (int64_t p = 0; p < L.positions(); ++p) {
        const int64_t t = target[p];
        loss[p] = t == ignore_index ? 0.0f : -(w ? w[t] : 1.0f) * x[L.offset(p) + t * L.S];
    }
}

// dx: as x (Store) = -g_p * w_t at class t of each position, 0 elsewhere
template <class Store>
void nll_backward(float* dx, LossGrad g, const int64_t* target, const float* w, const ClassLayout& L,
                  int64_t ignore_index, int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
        float* d = dx + L.offset(p);
        const int64_t t = target[p];
        for (int64_t c = 0; c < L.C; ++c) Store::put(d[c * L.S], 0.0f);
        if (t != ignore_index) Store::put(d[t * L.S], -g[p] * (w ? w[t] : 1.0f));
    }
}

class NllLossBackward final : public OpNode {
public:
    ClassLayout L;
    Reduction reduction = kMean;
    double divisor = 1.0;
    int64_t ignore_index = -100;
    const char* name() const override { return "NllLossBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &target = saved(0), &weight = saved(1);
        const float* w = weight.defined() ? weight.data() : nullptr;
        const LossGrad g = loss_grad(dout, reduction, divisor);
        if (const GradOut dx = grad_out(0)) {
            dx.write([&]<class Store>(float* d) {
                parallel_for(L.positions(), position_grain(L), [&](int64_t b, int64_t e) {
                    nll_backward<Store>(d, g, target.data_ptr<int64_t>(), w, L, ignore_index, b, e);
                });
            });
        }
    }
};

}  // namespace
}  // namespace detail

Tensor nll_loss(const Tensor& input_in, const Tensor& target_in, const NLLLossFuncOptions& options) {
    using namespace detail;
    const ClassLayout L = class_layout(input_in, "nll_loss", "input");
    const Tensor x = input_in.contiguous(), target = target_in.contiguous();
    const Tensor weight = class_weight(options.weight, L.C, "nll_loss");
    const float* w = weight.defined() ? weight.data() : nullptr;
    const double divisor = check_class_targets(x, target, L, w, options.ignore_index, "nll_loss", "input");
    Tensor losses = empty(options.reduction == kNone ? without_class_dim(x.shape()) : Shape{L.positions()});
    nll_forward(losses.data(), x.data(), target.data_ptr<int64_t>(), w, L, options.ignore_index);
    Tensor out = reduce_loss(losses, options.reduction, divisor);
    if (auto* node = record<NllLossBackward>(out, {x}, {target, weight})) {
        node->L = L, node->reduction = options.reduction, node->divisor = divisor;
        node->ignore_index = options.ignore_index;
    }
    return out;
}

namespace detail {
namespace {

// ---- cross_entropy ----------------------------------------------------------------------------
// Per position, with -log p_c = (max - x_c) + log_sum (in double) and the smoothing eps:
//   class index t: loss = (1 - eps) w_t (-log p_t) + eps / C * sum_c w_c (-log p_c), 0 if ignored;
//   probabilities: loss = sum_c w_c q_c (-log p_c), q = (1 - eps) target + eps / C.
// w is 1 without a weight. The backward recomputes p from the saved max and log_sum.

// max, log_sum: [P] = each position's largest logit and log(sum_c exp(x_c - max)); x: [N, C, S]
void class_log_sum_exp(float* max, float* log_sum, const float* x, const ClassLayout& L, int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
        const float* xp = x + L.offset(p);
        float m = -INFINITY;
        for (int64_t c = 0; c < L.C; ++c) m = std::max(m, xp[c * L.S]);
        double s = 0.0;
        for (int64_t c = 0; c < L.C; ++c) s += std::exp(xp[c * L.S] - m);
        max[p] = m;
        log_sum[p] = static_cast<float>(std::log(s));
    }
}

// loss: [P] for class-index targets (see above)
void cross_entropy_index_forward(float* loss, const float* max, const float* log_sum, const float* x,
                                 const int64_t* target, const float* w, const ClassLayout& L, int64_t ignore_index,
                                 double eps, int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
        const int64_t t = target[p];
        if (t == ignore_index) {
            loss[p] = 0.0f;
            continue;
        }
        const float* xp = x + L.offset(p);
        const double m = max[p], ls = log_sum[p];
        double l = (1.0 - eps) * (w ? w[t] : 1.0) * ((m - xp[t * L.S]) + ls);
        if (eps != 0.0) {
            double smooth = 0.0;
            for (int64_t c = 0; c < L.C; ++c) smooth += (w ? w[c] : 1.0) * ((m - xp[c * L.S]) + ls);
            l += eps / static_cast<double>(L.C) * smooth;
        }
        loss[p] = static_cast<float>(l);
    }
}

// loss: [P] for class-probability targets q: [N, C, S] (see above)
void cross_entropy_prob_forward(float* loss, const float* max, const float* log_sum, const float* x,
                                const float* q, const float* w, const ClassLayout& L, double eps, int64_t b,
                                int64_t e) {
    const double uniform = eps / static_cast<double>(L.C);
    for (int64_t p = b; p < e; ++p) {
        const float *xp = x + L.offset(p), *qp = q + L.offset(p);
        const double m = max[p], ls = log_sum[p];
        double l = 0.0;
        for (int64_t c = 0; c < L.C; ++c) {
            const double qc = (1.0 - eps) * qp[c * L.S] + uniform;
            l += (w ? w[c] : 1.0) * qc * ((m - xp[c * L.S]) + ls);
        }
        loss[p] = static_cast<float>(l);
    }
}

// dx: as x (Store) = g_p [(1 - eps) w_t (p - onehot_t) + eps / C (w_all p - w)], 0 where t is
// ignored; w_all = sum_c w_c
template <class Store>
void cross_entropy_index_backward(float* dx, LossGrad g, const float* max, const float* log_sum, const float* x,
                                  const int64_t* target, const float* w, float w_all, const ClassLayout& L,
                                  int64_t ignore_index, float eps, int64_t b, int64_t e) {
    const float off = eps / static_cast<float>(L.C);
    for (int64_t p = b; p < e; ++p) {
        const int64_t o = L.offset(p), t = target[p];
        const float *xp = x + o;
        float* d = dx + o;
        if (t == ignore_index) {
            for (int64_t c = 0; c < L.C; ++c) Store::put(d[c * L.S], 0.0f);
            continue;
        }
        const float gp = g[p], wt = w ? w[t] : 1.0f;
        for (int64_t c = 0; c < L.C; ++c) {
            const float prob = std::exp((xp[c * L.S] - max[p]) - log_sum[p]);
            const float hard = (1.0f - eps) * wt * (prob - (c == t ? 1.0f : 0.0f));
            const float soft = off * (w_all * prob - (w ? w[c] : 1.0f));
            Store::put(d[c * L.S], gp * (hard + soft));
        }
    }
}

// dx: as x (Store) = g_p (p * sum_c w_c q_c - w q)
template <class Store>
void cross_entropy_prob_backward(float* dx, LossGrad g, const float* max, const float* log_sum, const float* x,
                                 const float* q, const float* w, const ClassLayout& L, float eps, int64_t b,
                                 int64_t e) {
    const float uniform = eps / static_cast<float>(L.C);
    for (int64_t p = b; p < e; ++p) {
        const int64_t o = L.offset(p);
        const float *xp = x + o, *qp = q + o;
        float* d = dx + o;
        float wq_sum = 0.0f;
        for (int64_t c = 0; c < L.C; ++c) wq_sum += (w ? w[c] : 1.0f) * ((1.0f - eps) * qp[c * L.S] + uniform);
        const float gp = g[p];
        for (int64_t c = 0; c < L.C; ++c) {
            const float prob = std::exp((xp[c * L.S] - max[p]) - log_sum[p]);
            const float wq = (w ? w[c] : 1.0f) * ((1.0f - eps) * qp[c * L.S] + uniform);
            Store::put(d[c * L.S], gp * (prob * wq_sum - wq));
        }
    }
}

// dq: as q (Store) = g_p (1 - eps) w_c (-log p_c), the gradient of a probability target
template <class Store>
void cross_entropy_target_backward(float* dq, LossGrad g, const float* max, const float* log_sum, const float* x,
                                   const float* w, const ClassLayout& L, float eps, int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
        const int64_t o = L.offset(p);
        const float* xp = x + o;
        float* d = dq + o;
        const float gp = g[p] * (1.0f - eps);
        for (int64_t c = 0; c < L.C; ++c) {
            Store::put(d[c * L.S], gp * (w ? w[c] : 1.0f) * ((max[p] - xp[c * L.S]) + log_sum[p]));
        }
    }
}

class CrossEntropyLossBackward final : public OpNode {
public:
    ClassLayout L;
    Reduction reduction = kMean;
    double divisor = 1.0;
    int64_t ignore_index = -100;
    float eps = 0.0f, w_all = 0.0f;
    bool probabilities = false;
    const char* name() const override { return "CrossEntropyLossBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &target = saved(1), &weight = saved(2), &max = saved(3), &log_sum = saved(4);
        const float* w = weight.defined() ? weight.data() : nullptr;
        const LossGrad g = loss_grad(dout, reduction, divisor);
        const auto each_chunk = [&](auto&& kernel) { parallel_for(L.positions(), position_grain(L), kernel); };
        if (const GradOut dx = grad_out(0)) {
            dx.write([&]<class Store>(float* d) {
                each_chunk([&](int64_t b, int64_t e) {
                    if (probabilities) {
                        cross_entropy_prob_backward<Store>(d, g, max.data(), log_sum.data(), x.data(), target.data(), w,
                                                           L, eps, b, e);
                    } else {
                        cross_entropy_index_backward<Store>(d, g, max.data(), log_sum.data(), x.data(),
                                                            target.data_ptr<int64_t>(), w, w_all, L, ignore_index, eps,
                                                            b, e);
                    }
                });
            });
        }
        if (const GradOut dq = probabilities ? grad_out(1) : GradOut{}) {
            dq.write([&]<class Store>(float* d) {
                each_chunk([&](int64_t b, int64_t e) {
                    cross_entropy_target_backward<Store>(d, g, max.data(), log_sum.data(), x.data(), w, L, eps, b, e);
                });
            });
        }
    }
};

}  // namespace
}  // namespace detail

Tensor cross_entropy(const Tensor& input, const Tensor& target_in, const CrossEntropyFuncOptions& options) {
    using namespace detail;
    const char* op = "cross_entropy";
    const ClassLayout L = class_layout(input, op, "logits");
    const double eps = options.label_smoothing;
    NORMNET_CHECK(eps >= 0.0 && eps <= 1.0, op, ": label_smoothing must be between 0.0 and 1.0, got ", eps);
    const Tensor x = input.contiguous(), target = target_in.contiguous();
    const Tensor weight = class_weight(options.weight, L.C, op);
    const float* w = weight.defined() ? weight.data() : nullptr;
    // As torch: a target of the logits' shape holds class probabilities, anything else class indices.
    const bool probabilities = target.shape() == x.shape();
    double divisor = static_cast<double>(L.positions());
    if (probabilities) {
        NORMNET_CHECK(target.dtype() == kFloat32, op, ": a target of the logits' shape ", x.shape(),
                      " holds class probabilities and must be float32, got ", target.dtype());
        NORMNET_CHECK(options.ignore_index < 0, op, ": ignore_index is not supported for class-probability targets");
    } else {
        divisor = check_class_targets(x, target, L, w, options.ignore_index, op, "logits");
    }
    const int64_t P = L.positions();
    Tensor max = empty({P}), log_sum = empty({P});
    Tensor losses = empty(options.reduction == kNone ? without_class_dim(x.shape()) : Shape{P});
    parallel_for(P, position_grain(L), [&](int64_t b, int64_t e) {
        class_log_sum_exp(max.data(), log_sum.data(), x.data(), L, b, e);
        if (probabilities) {
            cross_entropy_prob_forward(losses.data(), max.data(), log_sum.data(), x.data(), target.data(), w, L, eps, b,
                                       e);
        } else {
            cross_entropy_index_forward(losses.data(), max.data(), log_sum.data(), x.data(), target.data_ptr<int64_t>(),
                                        w, L, options.ignore_index, eps, b, e);
        }
    });
    Tensor out = reduce_loss(losses, options.reduction, divisor);
    auto* node = probabilities ? record<CrossEntropyLossBackward>(out, {x, target}, {x, target, weight, max, log_sum})
                               : record<CrossEntropyLossBackward>(out, {x}, {x, target, weight, max, log_sum});
    if (node) {
        node->L = L, node->reduction = options.reduction, node->divisor = divisor;
        node->ignore_index = options.ignore_index, node->probabilities = probabilities;
        node->eps = static_cast<float>(eps);
        double w_all = static_cast<double>(L.C);
        if (w) w_all = std::accumulate(w, w + L.C, 0.0);
        node->w_all = static_cast<float>(w_all);
    }
    return out;
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, float label_smoothing) {
    return cross_entropy(input, target, CrossEntropyFuncOptions{.label_smoothing = label_smoothing});
}

int64_t count_correct(const Tensor& logits_in, const Tensor& targets_in) {
    using namespace detail;
    const ClassLayout L = class_layout(logits_in, "count_correct", "logits");
    NORMNET_CHECK(logits_in.dim() == 2, "count_correct: logits must be [N, C], got ", logits_in.shape());
    const Tensor logits = logits_in.contiguous(), targets = targets_in.contiguous();
    check_class_targets(logits, targets, L, nullptr, std::numeric_limits<int64_t>::min(), "count_correct", "logits");
    const int64_t N = L.N, C = L.C;
    const int64_t* target = targets.data_ptr<int64_t>();
    int64_t correct = 0;
    for (int64_t n = 0; n < N && C > 0; ++n) {
        const float* row = logits.data() + n * C;
        correct += (std::max_element(row, row + C) - row) == target[n];
    }
    return correct;
}

}  // namespace normnet

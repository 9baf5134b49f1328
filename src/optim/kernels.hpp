// Internal: the kernels behind the optimizers' step(), declared for the optimizers and for the
// tests that compare each with its naive reference (tests/reference_kernels.hpp, a transcription
// of torch's op-by-op update).
#pragma once

#include <cstdint>
#include <utility>

#include "normnet/optim.hpp"

namespace normnet::detail {

/// The float32 scalars of one SGD step, as torch casts its Python floats.
struct SGDScalars {
    float neg_lr;               ///< -lr
    float weight_decay;         ///< 0: none
    float momentum;             ///< 0: no buffer
    float one_minus_dampening;  ///< 1 - dampening
    bool nesterov;
    bool first;  ///< the buffer is set to the (decayed) gradient instead of updated
};
/// The scalars of a step of SGD with options `o` and learning rate lr.
SGDScalars sgd_scalars(const SGDOptions& o, double lr, bool first);
/// One SGD update. param: [n] updated, buf: [n] updated (unused without momentum), grad: [n]
void sgd_update(float* param, float* buf, const float* grad, int64_t n, const SGDScalars& s);

/// The float32 scalars of one Adam/AdamW step (bias corrections computed in double).
struct AdamScalars {
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    float weight_decay;           ///< Adam's L2, added to the gradient; 0: none
    float decay;                  ///< AdamW's factor 1 - lr * weight_decay on the parameter; 1: none
    float bias_correction2_sqrt;  ///< sqrt(1 - beta2^t)
    float eps;
    float neg_step_size;  ///< -lr / (1 - beta1^t)
};
/// The scalars of Adam step `step` (1 for the first); pass weight decay as l2 (Adam) or decoupled (AdamW).
AdamScalars adam_scalars(double lr, std::pair<double, double> betas, double eps, double l2_weight_decay,
                         double decoupled_weight_decay, int64_t step);
/// One Adam/AdamW update. param, exp_avg, exp_avg_sq: [n] updated; grad: [n]
void adam_update(float* param, float* exp_avg, float* exp_avg_sq, const float* grad, int64_t n,
                 const AdamScalars& s);
/// adam_update, then grad set to zero in the same pass. grad: [n] read, then zeroed
void adam_update_and_zero_grad(float* param, float* exp_avg, float* exp_avg_sq, float* grad, int64_t n,
                               const AdamScalars& s);
/// One amsgrad update: as adam_update, normalising by max_exp_avg_sq = maximum(max_exp_avg_sq,
/// exp_avg_sq) (NaN-propagating, as torch.maximum). max_exp_avg_sq: [n] updated
void adam_amsgrad_update(float* param, float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq, const float* grad,
                         int64_t n, const AdamScalars& s);
/// adam_amsgrad_update, then grad set to zero in the same pass.
void adam_amsgrad_update_and_zero_grad(float* param, float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq,
                                       float* grad, int64_t n, const AdamScalars& s);

/// The float32 scalars of one RMSprop step.
struct RMSpropScalars {
    float alpha, one_minus_alpha;
    float eps;
    float weight_decay;  ///< 0: none
    float momentum;      ///< <= 0: no buffer (torch tests momentum > 0)
    float neg_lr;        ///< -lr
    bool centered;
};
/// The scalars of a step of RMSprop with options `o` (its lr included).
RMSpropScalars rmsprop_scalars(const RMSpropOptions& o);
/// One RMSprop update. param, square_avg: [n] updated; grad_avg: [n] updated when centered (else
/// unused); buf: [n] updated when momentum > 0 (else unused); grad: [n]
void rmsprop_update(float* param, float* square_avg, float* grad_avg, float* buf, const float* grad, int64_t n,
                    const RMSpropScalars& s);

/// The float32 scalars of one Adagrad step.
struct AdagradScalars {
    float weight_decay;  ///< 0: none
    float eps;
    float neg_clr;       ///< -lr / (1 + (step - 1) * lr_decay), computed in double
};
/// The scalars of Adagrad step `step` (1 for the first) with options `o`.
AdagradScalars adagrad_scalars(const AdagradOptions& o, int64_t step);
/// One Adagrad update. param, sum: [n] updated; grad: [n]
void adagrad_update(float* param, float* sum, const float* grad, int64_t n, const AdagradScalars& s);

}  // namespace normnet::detail

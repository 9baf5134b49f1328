// Naive references of normnet's optimised kernels, written op by op as PyTorch computes them;
// the tests compare each optimised kernel with its reference (bit for bit where PyTorch's
// kernels round the same way).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "optim/kernel_support.hpp"
#include "optim/kernels.hpp"

namespace normnet::detail {

// The same product as gemm() with three plain loops (double accumulation).
inline void gemm_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                       int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; ++k) {
                const float a = trans_a ? A[k * lda + i] : A[i * lda + k];
                const float b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
                acc += static_cast<double>(a) * b;
            }
            float& c = C[i * ldc + j];
            c = static_cast<float>(alpha * acc + (beta == 0.0f ? 0.0 : static_cast<double>(beta) * c));
        }
    }
}

// The sizes of a convolution for conv2d_naive: padding as top/left, output sizes given (so
// asymmetric "same" padding needs no special case).
struct ConvNaiveSizes {
    int64_t N, C, H, W, OC, KH, KW, sh, sw, ph, pw, dh, dw, groups, OH, OW;
};

// Calls term(out, in, weight) for every product of a convolution: output element `out`
// ([N, OC, OH, OW] index) gains input element `in` ([N, C, H, W]) times weight element `weight`
// ([OC, C/g, KH, KW]); taps in the zero padding are left out.
template <class Term>
void for_each_conv_term(const ConvNaiveSizes& s, Term&& term) {
    const int64_t Cg = s.C / s.groups, OCg = s.OC / s.groups;
    for (int64_t n = 0; n < s.N; ++n)
        for (int64_t oc = 0; oc < s.OC; ++oc)
            for (int64_t oh = 0; oh < s.OH; ++oh)
                for (int64_t ow = 0; ow < s.OW; ++ow)
                    for (int64_t c = 0; c < Cg; ++c)
                        for (int64_t kh = 0; kh < s.KH; ++kh)
                            for (int64_t kw = 0; kw < s.KW; ++kw) {
                                const int64_t ih = oh * s.sh - s.ph + kh * s.dh, iw = ow * s.sw - s.pw + kw * s.dw;
                                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                                const int64_t grp = oc / OCg;
                                term(((n * s.OC + oc) * s.OH + oh) * s.OW + ow,
                                     ((n * s.C + grp * Cg + c) * s.H + ih) * s.W + iw,
                                     ((oc * Cg + c) * s.KH + kh) * s.KW + kw);
                            }
}

// conv2d by direct loops, in double: out: [N, OC, OH, OW] = x: [N, C, H, W] (*) w: [OC, C/g, KH, KW]
// + b: [OC] (may be null); zero padding.
inline void conv2d_naive(double* out, const float* x, const float* w, const float* b, const ConvNaiveSizes& s) {
    const int64_t P = s.OH * s.OW;
    for (int64_t i = 0; i < s.N * s.OC * P; ++i) out[i] = b ? b[(i / P) % s.OC] : 0.0;
    for_each_conv_term(s, [&](int64_t o, int64_t i, int64_t k) { out[o] += static_cast<double>(x[i]) * w[k]; });
}

// The gradients of conv2d_naive given dy: [N, OC, OH, OW], by the same loops: dx: [N, C, H, W],
// dw: [OC, C/g, KH, KW], db: [OC], all in double.
inline void conv2d_naive_backward(double* dx, double* dw, double* db, const float* dy, const float* x, const float* w,
                                  const ConvNaiveSizes& s) {
    const int64_t P = s.OH * s.OW;
    for (int64_t i = 0; i < s.N * s.C * s.H * s.W; ++i) dx[i] = 0.0;
    for (int64_t i = 0; i < s.OC * (s.C / s.groups) * s.KH * s.KW; ++i) dw[i] = 0.0;
    for (int64_t i = 0; i < s.OC; ++i) db[i] = 0.0;
    for (int64_t i = 0; i < s.N * s.OC * P; ++i) db[(i / P) % s.OC] += dy[i];
    for_each_conv_term(s, [&](int64_t o, int64_t i, int64_t k) {
        dx[i] += static_cast<double>(dy[o]) * w[k];
        dw[k] += static_cast<double>(dy[o]) * x[i];
    });
}

// The same update written op by op as torch.optim.SGD's _single_tensor_sgd, for the tests.
// param: [n] updated, buf: [n], grad: [n]
inline void sgd_update_reference(float* param, float* buf, const float* grad, int64_t n, const SGDScalars& s) {
    for (int64_t i = 0; i < n; ++i) {
        float d = grad[i];
        if (s.weight_decay != 0.0f) d = madd(s.weight_decay, param[i], d);  // d_p = d_p.add(param, alpha=wd)
        if (s.momentum != 0.0f) {
            if (s.first) {
                buf[i] = d;  // buf = torch.clone(d_p)
            } else {
                buf[i] = buf[i] * s.momentum;                      // buf.mul_(momentum)
                buf[i] = madd(s.one_minus_dampening, d, buf[i]);  // .add_(d_p, alpha=1 - dampening)
            }
            d = s.nesterov ? madd(s.momentum, buf[i], d) : buf[i];  // d_p.add(buf, alpha=momentum)
        }
        param[i] = madd(s.neg_lr, d, param[i]);  // param.add_(d_p, alpha=-lr)
    }
}

// The same update written op by op as torch.optim's _single_tensor_adam / _single_tensor_adamw,
// for the tests. param: [n] updated, exp_avg: [n] updated, exp_avg_sq: [n] updated, grad: [n]
inline void adam_update_reference(float* param, float* exp_avg, float* exp_avg_sq, const float* grad, int64_t n,
                           const AdamScalars& s) {
    for (int64_t i = 0; i < n; ++i) {
        if (s.decay != 1.0f) param[i] = param[i] * s.decay;  // param.mul_(1 - lr * weight_decay)
        float g = grad[i];
        if (s.weight_decay != 0.0f) g = madd(s.weight_decay, param[i], g);  // grad.add(param, alpha=wd)
        exp_avg[i] = exp_avg[i] * s.beta1;                                   // exp_avg.mul_(beta1)
        exp_avg[i] = madd(s.one_minus_beta1, g, exp_avg[i]);                 // .add_(grad, alpha=1 - beta1)
        exp_avg_sq[i] = exp_avg_sq[i] * s.beta2;                             // exp_avg_sq.mul_(beta2)
        exp_avg_sq[i] = madd(s.one_minus_beta2 * g, g, exp_avg_sq[i]);       // .addcmul_(grad, grad, value=1 - beta2)
        float denom = std::sqrt(exp_avg_sq[i]);                              // exp_avg_sq.sqrt()
        denom = denom / s.bias_correction2_sqrt;                             // / bias_correction2_sqrt
        denom = denom + s.eps;                                               // .add_(eps)
        param[i] = param[i] + s.neg_step_size * exp_avg[i] / denom;          // param.addcdiv_(exp_avg, denom, value=-step_size)
    }
}

// adam_update_reference with amsgrad, as torch.optim's _single_tensor_adam(amsgrad=True).
// max_exp_avg_sq: [n] updated
inline void adam_amsgrad_update_reference(float* param, float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq,
                                          const float* grad, int64_t n, const AdamScalars& s) {
    for (int64_t i = 0; i < n; ++i) {
        if (s.decay != 1.0f) param[i] = param[i] * s.decay;
        float g = grad[i];
        if (s.weight_decay != 0.0f) g = madd(s.weight_decay, param[i], g);
        exp_avg[i] = madd(s.one_minus_beta1, g, exp_avg[i] * s.beta1);
        exp_avg_sq[i] = madd(s.one_minus_beta2 * g, g, exp_avg_sq[i] * s.beta2);
        const float a = max_exp_avg_sq[i], b = exp_avg_sq[i];                    // torch.maximum(max, exp_avg_sq)
        max_exp_avg_sq[i] = std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
        float denom = std::sqrt(max_exp_avg_sq[i]);                              // max_exp_avg_sq.sqrt()
        denom = denom / s.bias_correction2_sqrt;                                 // / bias_correction2_sqrt
        denom = denom + s.eps;                                                   // .add_(eps)
        param[i] = param[i] + s.neg_step_size * exp_avg[i] / denom;
    }
}

// The same update written op by op as torch.optim's _single_tensor_rmsprop, for the tests.
// param, square_avg: [n] updated; grad_avg, buf: [n] updated when used; grad: [n]
inline void rmsprop_update_reference(float* param, float* square_avg, float* grad_avg, float* buf, const float* grad,
                                     int64_t n, const RMSpropScalars& s) {
    for (int64_t i = 0; i < n; ++i) {
        float g = grad[i];
        if (s.weight_decay != 0.0f) g = madd(s.weight_decay, param[i], g);  // grad.add(param, alpha=wd)
        square_avg[i] = square_avg[i] * s.alpha;                              // square_avg.mul_(alpha)
        square_avg[i] = madd(s.one_minus_alpha * g, g, square_avg[i]);        // .addcmul_(grad, grad, value=1 - alpha)
        float avg;
        if (s.centered) {
            grad_avg[i] = grad_avg[i] * s.alpha;                              // grad_avg.mul_(alpha)
            grad_avg[i] = madd(s.one_minus_alpha, g, grad_avg[i]);            // .add_(grad, alpha=1 - alpha)
            avg = madd(-1.0f * grad_avg[i], grad_avg[i], square_avg[i]);      // square_avg.addcmul(ga, ga, value=-1)
            avg = std::sqrt(avg);                                             // .sqrt_()
        } else {
            avg = std::sqrt(square_avg[i]);                                   // square_avg.sqrt()
        }
        avg = avg + s.eps;                                                    // .add_(eps)
        if (s.momentum > 0.0f) {
            buf[i] = buf[i] * s.momentum;                                     // buf.mul_(momentum)
            buf[i] = buf[i] + 1.0f * g / avg;                                 // .addcdiv_(grad, avg)
            param[i] = madd(s.neg_lr, buf[i], param[i]);                      // param.add_(buf, alpha=-lr)
        } else {
            param[i] = param[i] + s.neg_lr * g / avg;                         // param.addcdiv_(grad, avg, value=-lr)
        }
    }
}

// The same update written op by op as torch.optim's _single_tensor_adagrad (dense), for the tests.
// param, sum: [n] updated; grad: [n]
inline void adagrad_update_reference(float* param, float* sum, const float* grad, int64_t n, const AdagradScalars& s) {
    for (int64_t i = 0; i < n; ++i) {
        float g = grad[i];
        if (s.weight_decay != 0.0f) g = madd(s.weight_decay, param[i], g);  // grad.add(param, alpha=wd)
        sum[i] = madd(1.0f * g, g, sum[i]);                                   // state_sum.addcmul_(grad, grad, value=1)
        const float std_dev = std::sqrt(sum[i]) + s.eps;                      // state_sum.sqrt().add_(eps)
        param[i] = param[i] + s.neg_clr * g / std_dev;                        // param.addcdiv_(grad, std, value=-clr)
    }
}

}  // namespace normnet::detail

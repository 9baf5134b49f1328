// Adam and AdamW, matching torch.optim.Adam / AdamW (1.13, amsgrad off) bit for bit: the same
// float32 operations in the same order, with the fused multiply-adds torch's CPU kernels compile
// to (add(other, alpha) and addcmul are a + alpha * b, contracted to one fma). Bias corrections and
// the step size are computed in double, as torch computes them in Python floats.
//
// The update is one pass over each parameter. It needs a square root per element, which GCC does
// not vectorise in a plain loop unless -fno-math-errno is given (sqrtf may set errno), so the pass
// is written with std::experimental::simd where the standard library has it.

// Every rounding happens where the source says, as in torch's separate kernels: the fmas are
// explicit (madd), and the compiler must not fuse anything else (GCC fuses a * b + c by default,
// e.g. AdamW's p * (1 - lr * wd) into the add that follows). Set before any include.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's _mm512_sqrt_ps (used by simd sqrt) trips a false -Wmaybe-uninitialized on its
// _mm512_undefined_ps() operand (GCC bug 105593, fixed in GCC 13). Set before any include.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <array>
#include <cmath>
#include <type_traits>

#if __has_include(<experimental/simd>) && defined(__GLIBCXX__)
#include <experimental/simd>
#define NORMNET_OPTIM_SIMD 1
#endif

#include "elementwise_step.hpp"
#include "kernel_support.hpp"
#include "kernels.hpp"

namespace normnet {
namespace detail {
namespace {

#ifdef NORMNET_OPTIM_SIMD
namespace stdx = std::experimental;
using Vec = stdx::native_simd<float>;
inline Vec madd(Vec a, Vec b, Vec c) {
#ifdef __FMA__
    return stdx::fma(a, b, c);
#else
    return a * b + c;
#endif
}
#endif

// One Adam update of p, m, v given g; T is float or a SIMD vector of floats (the same operations
// either way, so every element of a tensor is rounded alike).
template <bool kL2, bool kDecoupled, class T>
inline void adam_lanes(T& p, T& m, T& v, T g, const AdamScalars& s) {
    using std::sqrt;
    if constexpr (kDecoupled) p = p * T(s.decay);
    if constexpr (kL2) g = madd(T(s.weight_decay), p, g);
    m = madd(T(s.one_minus_beta1), g, m * T(s.beta1));
    v = madd(T(s.one_minus_beta2) * g, g, v * T(s.beta2));
    const T denom = sqrt(v) / T(s.bias_correction2_sqrt) + T(s.eps);
    p = p + (T(s.neg_step_size) * m) / denom;
}

}  // namespace

AdamScalars adam_scalars(double lr, std::pair<double, double> betas, double eps, double l2_weight_decay,
                         double decoupled_weight_decay, int64_t step) {
    const auto [beta1, beta2] = betas;
    const double t = static_cast<double>(step);
    const double bias_correction1 = 1.0 - std::pow(beta1, t);
    const double bias_correction2 = 1.0 - std::pow(beta2, t);
    const double step_size = lr / bias_correction1;
    AdamScalars s;
    s.beta1 = static_cast<float>(beta1);
    s.one_minus_beta1 = static_cast<float>(1.0 - beta1);
    s.beta2 = static_cast<float>(beta2);
    s.one_minus_beta2 = static_cast<float>(1.0 - beta2);
    s.weight_decay = static_cast<float>(l2_weight_decay);
    s.decay = static_cast<float>(1.0 - lr * decoupled_weight_decay);
    s.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
    s.eps = static_cast<float>(eps);
    s.neg_step_size = static_cast<float>(-step_size);
    return s;
}

namespace {
// param: [n] updated, exp_avg: [n] updated, exp_avg_sq: [n] updated, grad: [n] read, then set to
// zero when kZeroGrad (the store rides along the pass, which waits on sqrt and division anyway).
template <bool kZeroGrad>
void adam_update_pass(float* param, float* exp_avg, float* exp_avg_sq, std::conditional_t<kZeroGrad, float*, const float*> grad,
                      int64_t n, const AdamScalars& scalars) {
    const AdamScalars s = scalars;  // a local copy: the float stores below cannot alias it
    with_flags(
        [&]<bool kL2, bool kDecoupled>() {
#ifdef NORMNET_OPTIM_SIMD
            constexpr int64_t W = Vec::size();
            const auto aligned = stdx::element_aligned;
            int64_t i = 0;
            for (; i + W <= n; i += W) {
                Vec p(param + i, aligned), m(exp_avg + i, aligned), v(exp_avg_sq + i, aligned);
                adam_lanes<kL2, kDecoupled>(p, m, v, Vec(grad + i, aligned), s);
                if constexpr (kZeroGrad) Vec(0.0f).copy_to(grad + i, aligned);
                p.copy_to(param + i, aligned);
                m.copy_to(exp_avg + i, aligned);
                v.copy_to(exp_avg_sq + i, aligned);
            }
            if (i == n) return;
            // The last partial vector goes through zero-padded copies, so it gets the same
            // vector arithmetic as the rest (a scalar tail could round differently).
            const int64_t rest = n - i;
            std::array<float, W> tp{}, tm{}, tv{}, tg{};
            for (int64_t j = 0; j < rest; ++j) {
                tp[j] = param[i + j], tm[j] = exp_avg[i + j], tv[j] = exp_avg_sq[i + j], tg[j] = grad[i + j];
            }
            Vec p(tp.data(), aligned), m(tm.data(), aligned), v(tv.data(), aligned);
            adam_lanes<kL2, kDecoupled>(p, m, v, Vec(tg.data(), aligned), s);
            p.copy_to(tp.data(), aligned);
            m.copy_to(tm.data(), aligned);
            v.copy_to(tv.data(), aligned);
            for (int64_t j = 0; j < rest; ++j) {
                param[i + j] = tp[j], exp_avg[i + j] = tm[j], exp_avg_sq[i + j] = tv[j];
                if constexpr (kZeroGrad) grad[i + j] = 0.0f;
            }
#else
            for (int64_t i = 0; i < n; ++i) {
                float p = param[i], m = exp_avg[i], v = exp_avg_sq[i];
                adam_lanes<kL2, kDecoupled>(p, m, v, grad[i], s);
                param[i] = p, exp_avg[i] = m, exp_avg_sq[i] = v;
                if constexpr (kZeroGrad) grad[i] = 0.0f;
            }
#endif
        },
        s.weight_decay != 0.0f, s.decay != 1.0f);
}
}  // namespace

void adam_update(float* param, float* exp_avg, float* exp_avg_sq, const float* grad, int64_t n, const AdamScalars& s) {
    adam_update_pass<false>(param, exp_avg, exp_avg_sq, grad, n, s);
}

void adam_update_and_zero_grad(float* param, float* exp_avg, float* exp_avg_sq, float* grad, int64_t n,
                               const AdamScalars& s) {
    adam_update_pass<true>(param, exp_avg, exp_avg_sq, grad, n, s);
}

}  // namespace detail

namespace {

// PyTorch's rules for Adam and AdamW, plus rejecting NaN and infinity, which its `< 0` tests let through.
void check_adam_options(const char* name, double lr, std::pair<double, double> betas, double eps, double weight_decay) {
    NORMNET_CHECK(std::isfinite(lr) && lr >= 0.0, name, ": invalid learning rate (lr) ", lr, ": it must be finite and >= 0");
    NORMNET_CHECK(betas.first >= 0.0 && betas.first < 1.0, name, ": invalid betas.first (beta1) ", betas.first,
          ": it must be in [0, 1)");
    NORMNET_CHECK(betas.second >= 0.0 && betas.second < 1.0, name, ": invalid betas.second (beta2) ", betas.second,
          ": it must be in [0, 1)");
    NORMNET_CHECK(std::isfinite(eps) && eps >= 0.0, name, ": invalid eps ", eps, ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(weight_decay) && weight_decay >= 0.0, name, ": invalid weight_decay ", weight_decay,
          ": it must be finite and >= 0");
}

AdamOptions checked(const AdamOptions& o) {
    check_adam_options("Adam", o.lr, o.betas, o.eps, o.weight_decay);
    return o;
}

AdamWOptions checked(const AdamWOptions& o) {
    check_adam_options("AdamW", o.lr, o.betas, o.eps, o.weight_decay);
    return o;
}

// One step of Adam or AdamW over every parameter that has a gradient; grad_of(i) gives
// parameter i's gradient data or null; scalars_of(t) the step scalars at a parameter's step t;
// zero_grad zeroes each gradient after reading it. One parallel pass over all parameters' elements.
template <class GradOf, class ScalarsOf, class Advance>
void adam_step(const Optimizer& opt, std::vector<Tensor>& exp_avg, std::vector<Tensor>& exp_avg_sq, GradOf grad_of,
               ScalarsOf scalars_of, bool zero_grad, Advance advance) {
    const NamedTensors& params = opt.params();
    for (size_t i = 0; i < params.size(); ++i) {
        if (grad_of(i) == nullptr) continue;
        if (!exp_avg[i].defined()) {
            exp_avg[i] = zeros(params[i].second.shape());
            exp_avg_sq[i] = zeros(params[i].second.shape());
        }
        advance(i);
        params[i].second.bump_version();  // an in-place update, as torch's step counts it
    }
    detail::for_each_parameter_range(params, [&](size_t i, int64_t b, int64_t e) {
        float* grad = grad_of(i);
        if (grad == nullptr) return;
        const detail::AdamScalars s = scalars_of(opt.param_step(i));
        float* p = params[i].second.data() + b;
        float* m = exp_avg[i].data() + b;
        float* v = exp_avg_sq[i].data() + b;
        zero_grad ? detail::adam_update_and_zero_grad(p, m, v, grad + b, e - b, s)
                  : detail::adam_update(p, m, v, grad + b, e - b, s);
    });
}

}  // namespace

Adam::Adam(NamedTensors params, AdamOptions options) : Optimizer(std::move(params)), options_(checked(options)) {
    set_lr(options_.lr);
    count_param_steps();
    exp_avg_ = add_state("exp_avg");
    exp_avg_sq_ = add_state("exp_avg_sq");
}

Adam::Adam(const std::vector<Tensor>& params, AdamOptions options) : Optimizer(params), options_(checked(options)) {
    set_lr(options_.lr);
    count_param_steps();
    exp_avg_ = add_state("exp_avg");
    exp_avg_sq_ = add_state("exp_avg_sq");
}

void Adam::step() { update(false); }

void Adam::step_and_zero_grad() { update(true); }

void Adam::update(bool zero_grad) {
    advance_step();
    adam_step(
        *this, state(exp_avg_), state(exp_avg_sq_), [this](size_t i) { return grad_data(i); },
        [this](int64_t t) { return detail::adam_scalars(lr(), options_.betas, options_.eps, options_.weight_decay, 0.0, t); },
        zero_grad, [this](size_t i) { advance_param_step(i); });
}

AdamW::AdamW(NamedTensors params, AdamWOptions options) : Optimizer(std::move(params)), options_(checked(options)) {
    set_lr(options_.lr);
    count_param_steps();
    exp_avg_ = add_state("exp_avg");
    exp_avg_sq_ = add_state("exp_avg_sq");
}

AdamW::AdamW(const std::vector<Tensor>& params, AdamWOptions options)
    : Optimizer(params), options_(checked(options)) {
    set_lr(options_.lr);
    count_param_steps();
    exp_avg_ = add_state("exp_avg");
    exp_avg_sq_ = add_state("exp_avg_sq");
}

void AdamW::step() { update(false); }

void AdamW::step_and_zero_grad() { update(true); }

void AdamW::update(bool zero_grad) {
    advance_step();
    adam_step(
        *this, state(exp_avg_), state(exp_avg_sq_), [this](size_t i) { return grad_data(i); },
        [this](int64_t t) { return detail::adam_scalars(lr(), options_.betas, options_.eps, 0.0, options_.weight_decay, t); },
        zero_grad, [this](size_t i) { advance_param_step(i); });
}

}  // namespace normnet

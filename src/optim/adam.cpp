// Adam and AdamW (amsgrad included), matching torch.optim.Adam / AdamW (1.13) bit for bit: the same
// float32 operations in the same order, with the fused multiply-adds torch's CPU kernels compile
// to (add(other, alpha) and addcmul are a + alpha * b, contracted to one fma). Bias corrections and
// the step size are computed in double, as torch computes them in Python floats.
//
// The update is one pass over each parameter. It needs a square root per element, which GCC does
// not vectorise in a plain loop unless -fno-math-errno is given (sqrtf may set errno), so the pass
// is written with std::experimental::simd where the standard library has it.

// Every rounding happens where the source says (see the header). Included before anything else.
#include "exact_rounding.hpp"

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

// torch.maximum(a, b): NaN when either is NaN, else the larger (a when they are equal).
inline float nan_max(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : a < b ? b : a; }
#ifdef NORMNET_OPTIM_SIMD
inline Vec nan_max(Vec a, Vec b) {
    Vec r = a;
    stdx::where(a < b, r) = b;
    stdx::where(stdx::isnan(a) || stdx::isnan(b), r) = Vec(NAN);
    return r;
}
#endif

// One Adam update of p, m, v (and vmax with amsgrad) given g; T is float or a SIMD vector of
// floats (the same operations either way, so every element of a tensor is rounded alike).
template <bool kL2, bool kDecoupled, bool kAmsgrad, class T>
inline void adam_lanes(T& p, T& m, T& v, T& vmax, T g, const AdamScalars& s) {
    using std::sqrt;
    if constexpr (kDecoupled) p = p * T(s.decay);
    if constexpr (kL2) g = madd(T(s.weight_decay), p, g);
    m = madd(T(s.one_minus_beta1), g, m * T(s.beta1));
    v = madd(T(s.one_minus_beta2) * g, g, v * T(s.beta2));
    if constexpr (kAmsgrad) vmax = nan_max(vmax, v);
    const T denom = sqrt(kAmsgrad ? vmax : v) / T(s.bias_correction2_sqrt) + T(s.eps);
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
// param: [n] updated, exp_avg: [n] updated, exp_avg_sq: [n] updated, max_exp_avg_sq: [n] updated
// when not null (amsgrad), grad: [n] read, then set to zero when kZeroGrad (the store rides along
// the pass, which waits on sqrt and division anyway).
// flatten: with eight flag combinations GCC's inliner gave up on std::experimental::fma, leaving
// a call per vector that made the pass 1.5x slower; everything here must inline.
template <bool kZeroGrad>
[[gnu::flatten]] void adam_update_pass(float* param, float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq,
                      std::conditional_t<kZeroGrad, float*, const float*> grad, int64_t n, const AdamScalars& scalars) {
    const AdamScalars s = scalars;  // a local copy: the float stores below cannot alias it
    with_flags(
        [&]<bool kL2, bool kDecoupled, bool kAmsgrad>() {
#ifdef NORMNET_OPTIM_SIMD
            constexpr int64_t W = Vec::size();
            const auto aligned = stdx::element_aligned;
            int64_t i = 0;
            for (; i + W <= n; i += W) {
                Vec p(param + i, aligned), m(exp_avg + i, aligned), v(exp_avg_sq + i, aligned), vmax;
                if constexpr (kAmsgrad) vmax.copy_from(max_exp_avg_sq + i, aligned);
                adam_lanes<kL2, kDecoupled, kAmsgrad>(p, m, v, vmax, Vec(grad + i, aligned), s);
                if constexpr (kZeroGrad) Vec(0.0f).copy_to(grad + i, aligned);
                p.copy_to(param + i, aligned);
                m.copy_to(exp_avg + i, aligned);
                v.copy_to(exp_avg_sq + i, aligned);
                if constexpr (kAmsgrad) vmax.copy_to(max_exp_avg_sq + i, aligned);
            }
            if (i == n) return;
            // The last partial vector goes through zero-padded copies, so it gets the same
            // vector arithmetic as the rest (a scalar tail could round differently).
            const int64_t rest = n - i;
            std::array<float, W> tp{}, tm{}, tv{}, tx{}, tg{};
            for (int64_t j = 0; j < rest; ++j) {
                tp[j] = param[i + j], tm[j] = exp_avg[i + j], tv[j] = exp_avg_sq[i + j], tg[j] = grad[i + j];
                if constexpr (kAmsgrad) tx[j] = max_exp_avg_sq[i + j];
            }
            Vec p(tp.data(), aligned), m(tm.data(), aligned), v(tv.data(), aligned), vmax(tx.data(), aligned);
            adam_lanes<kL2, kDecoupled, kAmsgrad>(p, m, v, vmax, Vec(tg.data(), aligned), s);
            p.copy_to(tp.data(), aligned);
            m.copy_to(tm.data(), aligned);
            v.copy_to(tv.data(), aligned);
            vmax.copy_to(tx.data(), aligned);
            for (int64_t j = 0; j < rest; ++j) {
                param[i + j] = tp[j], exp_avg[i + j] = tm[j], exp_avg_sq[i + j] = tv[j];
                if constexpr (kAmsgrad) max_exp_avg_sq[i + j] = tx[j];
                if constexpr (kZeroGrad) grad[i + j] = 0.0f;
            }
#else
            for (int64_t i = 0; i < n; ++i) {
                float p = param[i], m = exp_avg[i], v = exp_avg_sq[i], vmax = kAmsgrad ? max_exp_avg_sq[i] : 0.0f;
                adam_lanes<kL2, kDecoupled, kAmsgrad>(p, m, v, vmax, grad[i], s);
                param[i] = p, exp_avg[i] = m, exp_avg_sq[i] = v;
                if constexpr (kAmsgrad) max_exp_avg_sq[i] = vmax;
                if constexpr (kZeroGrad) grad[i] = 0.0f;
            }
#endif
        },
        s.weight_decay != 0.0f, s.decay != 1.0f, max_exp_avg_sq != nullptr);
}
}  // namespace

void adam_update(float* param, float* exp_avg, float* exp_avg_sq, const float* grad, int64_t n, const AdamScalars& s) {
    adam_update_pass<false>(param, exp_avg, exp_avg_sq, nullptr, grad, n, s);
}

void adam_update_and_zero_grad(float* param, float* exp_avg, float* exp_avg_sq, float* grad, int64_t n,
                               const AdamScalars& s) {
    adam_update_pass<true>(param, exp_avg, exp_avg_sq, nullptr, grad, n, s);
}

void adam_amsgrad_update(float* param, float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq, const float* grad,
                         int64_t n, const AdamScalars& s) {
    adam_update_pass<false>(param, exp_avg, exp_avg_sq, max_exp_avg_sq, grad, n, s);
}

void adam_amsgrad_update_and_zero_grad(float* param, float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq,
                                       float* grad, int64_t n, const AdamScalars& s) {
    adam_update_pass<true>(param, exp_avg, exp_avg_sq, max_exp_avg_sq, grad, n, s);
}

}  // namespace detail

namespace {

// PyTorch's rules for Adam and AdamW, plus rejecting NaN and infinity, which its `< 0` tests let through.
void check_adam_options(const GroupName& who, const ParamGroupOptions& o) {
    const double lr = *o.lr, eps = *o.eps, weight_decay = *o.weight_decay;
    const std::pair<double, double> betas = *o.betas;
    NORMNET_CHECK(std::isfinite(lr) && lr >= 0.0, who, ": invalid learning rate (lr) ", lr, ": it must be finite and >= 0");
    NORMNET_CHECK(betas.first >= 0.0 && betas.first < 1.0, who, ": invalid betas.first (beta1) ", betas.first,
          ": it must be in [0, 1)");
    NORMNET_CHECK(betas.second >= 0.0 && betas.second < 1.0, who, ": invalid betas.second (beta2) ", betas.second,
          ": it must be in [0, 1)");
    NORMNET_CHECK(std::isfinite(eps) && eps >= 0.0, who, ": invalid eps ", eps, ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(weight_decay) && weight_decay >= 0.0, who, ": invalid weight_decay ", weight_decay,
          ": it must be finite and >= 0");
}

template <class Options>
ParamGroupOptions adam_defaults(const Options& o) {
    return {.lr = o.lr, .weight_decay = o.weight_decay, .betas = o.betas, .eps = o.eps, .amsgrad = o.amsgrad};
}

template <class Options>
Options adam_options(const ParamGroupOptions& g) {
    return {.lr = *g.lr, .betas = *g.betas, .eps = *g.eps, .weight_decay = *g.weight_decay, .amsgrad = *g.amsgrad};
}

bool needs_max(const ParamGroupOptions& o) { return *o.amsgrad; }

// What one Adam or AdamW step of a parameter needs from its group's options.
struct AdamHyper {
    double lr;
    std::pair<double, double> betas;
    double eps, l2_weight_decay, decoupled_weight_decay;
    bool amsgrad;
};

// One step of Adam or AdamW over every parameter that has a gradient; hyper(i) gives parameter
// i's options, zero_grad zeroes each gradient after reading it. The state is created (zeros) on a
// parameter's first step, max_exp_avg_sq when its group has amsgrad. One parallel pass over all
// parameters' elements.
template <class GradOf, class Hyper, class Advance>
void adam_step(const Optimizer& opt, std::vector<Tensor>& exp_avg, std::vector<Tensor>& exp_avg_sq,
               std::vector<Tensor>& max_exp_avg_sq, GradOf grad_of, Hyper hyper, bool zero_grad, Advance advance) {
    const NamedTensors& params = opt.params();
    for (size_t i = 0; i < params.size(); ++i) {
        if (grad_of(i) == nullptr) continue;
        const Shape& shape = params[i].second.shape();
        if (!exp_avg[i].defined()) {
            exp_avg[i] = zeros(shape);
            exp_avg_sq[i] = zeros(shape);
        }
        if (hyper(i).amsgrad && !max_exp_avg_sq[i].defined()) max_exp_avg_sq[i] = zeros(shape);
        advance(i);
        params[i].second.bump_version();  // an in-place update, as torch's step counts it
    }
    detail::for_each_parameter_range(params, [&](size_t i, int64_t b, int64_t e) {
        float* grad = grad_of(i);
        if (grad == nullptr) return;
        const AdamHyper h = hyper(i);
        const detail::AdamScalars s = detail::adam_scalars(h.lr, h.betas, h.eps, h.l2_weight_decay,
                                                           h.decoupled_weight_decay, opt.param_step(i));
        float* p = params[i].second.data() + b;
        float* m = exp_avg[i].data() + b;
        float* v = exp_avg_sq[i].data() + b;
        if (h.amsgrad) {
            float* vmax = max_exp_avg_sq[i].data() + b;
            zero_grad ? detail::adam_amsgrad_update_and_zero_grad(p, m, v, vmax, grad + b, e - b, s)
                      : detail::adam_amsgrad_update(p, m, v, vmax, grad + b, e - b, s);
        } else {
            zero_grad ? detail::adam_update_and_zero_grad(p, m, v, grad + b, e - b, s)
                      : detail::adam_update(p, m, v, grad + b, e - b, s);
        }
    }, opt.shard());
}

}  // namespace

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions options)
    : Optimizer(std::move(groups), adam_defaults(options)) {
    check_param_groups();
    count_param_steps();
    exp_avg_ = add_state("exp_avg");
    exp_avg_sq_ = add_state("exp_avg_sq");
    max_exp_avg_sq_ = add_state("max_exp_avg_sq", needs_max);
}

Adam::Adam(NamedTensors params, AdamOptions options)
    : Adam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adam::Adam(std::initializer_list<ParamGroup> groups, AdamOptions options)
    : Adam(std::vector<ParamGroup>(groups), options) {}

Adam::Adam(const std::vector<Tensor>& params, AdamOptions options)
    : Adam(std::vector<ParamGroup>{ParamGroup(params)}, options) {}

AdamOptions Adam::options(size_t group) const { return adam_options<AdamOptions>(param_group_options(group)); }

void Adam::check_options(const ParamGroupOptions& o, const GroupName& who) const { check_adam_options(who, o); }

void Adam::step() { update(false); }

void Adam::step_and_zero_grad() { update(true); }

void Adam::update(bool zero_grad) {
    advance_step();
    adam_step(
        *this, state(exp_avg_), state(exp_avg_sq_), state(max_exp_avg_sq_), [this](size_t i) { return grad_data(i); },
        [this](size_t i) {
            const AdamOptions o = options(param_group_of(i));
            return AdamHyper{o.lr, o.betas, o.eps, o.weight_decay, 0.0, o.amsgrad};
        },
        zero_grad, [this](size_t i) { advance_param_step(i); });
}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options)
    : Optimizer(std::move(groups), adam_defaults(options)) {
    check_param_groups();
    count_param_steps();
    exp_avg_ = add_state("exp_avg");
    exp_avg_sq_ = add_state("exp_avg_sq");
    max_exp_avg_sq_ = add_state("max_exp_avg_sq", needs_max);
}

AdamW::AdamW(NamedTensors params, AdamWOptions options)
    : AdamW(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

AdamW::AdamW(std::initializer_list<ParamGroup> groups, AdamWOptions options)
    : AdamW(std::vector<ParamGroup>(groups), options) {}

AdamW::AdamW(const std::vector<Tensor>& params, AdamWOptions options)
    : AdamW(std::vector<ParamGroup>{ParamGroup(params)}, options) {}

AdamWOptions AdamW::options(size_t group) const { return adam_options<AdamWOptions>(param_group_options(group)); }

void AdamW::check_options(const ParamGroupOptions& o, const GroupName& who) const { check_adam_options(who, o); }

void AdamW::step() { update(false); }

void AdamW::step_and_zero_grad() { update(true); }

void AdamW::update(bool zero_grad) {
    advance_step();
    adam_step(
        *this, state(exp_avg_), state(exp_avg_sq_), state(max_exp_avg_sq_), [this](size_t i) { return grad_data(i); },
        [this](size_t i) {
            const AdamWOptions o = options(param_group_of(i));
            return AdamHyper{o.lr, o.betas, o.eps, 0.0, o.weight_decay, o.amsgrad};
        },
        zero_grad, [this](size_t i) { advance_param_step(i); });
}

}  // namespace normnet

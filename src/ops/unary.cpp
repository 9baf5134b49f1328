// Unary math (neg exp expm1 log log1p sqrt rsqrt reciprocal abs square pow clamp sign erf):
// each op is a struct with its value and derivative, run by the shared unary machinery of
// unary.hpp; the public function is one line. Gradients are torch's formulas (derivatives.yaml),
// so they agree at the special points too (pow's exponent 0, abs and clamp at their kinks).
#include <cmath>
#include <optional>

#include "unary.hpp"

namespace normnet {
namespace detail {
namespace {

// y = -x; dx = -dy
struct NegOp {
    static constexpr const char* kBackwardName = "NegBackward0";
    static constexpr Uses kUses = Uses::none;
    float value(float x) const { return -x; }
    float grad(float, float, float dy) const { return -dy; }
};

// y = e^x; dx = dy * y
struct ExpOp {
    static constexpr const char* kBackwardName = "ExpBackward0";
    static constexpr Uses kUses = Uses::output;
    float value(float x) const { return vmath::exp(x); }
    float grad(float, float y, float dy) const { return dy * y; }
};

// y = e^x - 1; dx = dy * (y + 1)
struct Expm1Op {
    static constexpr const char* kBackwardName = "Expm1Backward0";
    static constexpr Uses kUses = Uses::output;
    float value(float x) const { return vmath::expm1(x); }
    float grad(float, float y, float dy) const { return dy * (y + 1.0f); }
};

// y = log x; dx = dy / x
struct LogOp {
    static constexpr const char* kBackwardName = "LogBackward0";
    static constexpr Uses kUses = Uses::input;
    float value(float x) const { return vmath::log(x); }
    float grad(float x, float, float dy) const { return dy / x; }
};

// y = log(1 + x); dx = dy / (x + 1)
struct Log1pOp {
    static constexpr const char* kBackwardName = "Log1PBackward0";
    static constexpr Uses kUses = Uses::input;
    float value(float x) const { return vmath::log1p(x); }
    float grad(float x, float, float dy) const { return dy / (x + 1.0f); }
};

// y = sqrt x; dx = dy / (2 y)
struct SqrtOp {
    static constexpr const char* kBackwardName = "SqrtBackward0";
    static constexpr Uses kUses = Uses::output;
    float value(float x) const { return std::sqrt(x); }
    float grad(float, float y, float dy) const { return dy / (2.0f * y); }
};

// y = 1 / sqrt x; dx = -dy / 2 * y^3
struct RsqrtOp {
    static constexpr const char* kBackwardName = "RsqrtBackward0";
    static constexpr Uses kUses = Uses::output;
    float value(float x) const { return 1.0f / std::sqrt(x); }
    float grad(float, float y, float dy) const { return (-0.5f * dy) * (y * y * y); }
};

// y = 1 / x; dx = -dy * y^2
struct ReciprocalOp {
    static constexpr const char* kBackwardName = "ReciprocalBackward0";
    static constexpr Uses kUses = Uses::output;
    float value(float x) const { return 1.0f / x; }
    float grad(float, float y, float dy) const { return -dy * (y * y); }
};

// -1, 0 or 1 (as torch, 0 for NaN)
inline float sign_of(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); }

// y = |x|; dx = dy * sign(x) (0 at 0)
struct AbsOp {
    static constexpr const char* kBackwardName = "AbsBackward0";
    static constexpr Uses kUses = Uses::input;
    float value(float x) const { return std::fabs(x); }
    float grad(float x, float, float dy) const { return dy * sign_of(x); }
};

// y = sign(x); dx = 0
struct SignOp {
    static constexpr const char* kBackwardName = "SignBackward0";
    static constexpr Uses kUses = Uses::none;
    float value(float x) const { return sign_of(x); }
    float grad(float, float, float) const { return 0.0f; }
};

// y = erf(x); dx = dy * 2 / sqrt(pi) * e^(-x^2)
struct ErfOp {
    static constexpr const char* kBackwardName = "ErfBackward0";
    static constexpr Uses kUses = Uses::input;
    float value(float x) const { return vmath::erf(x); }
    float grad(float x, float, float dy) const { return dy * (1.12837916709551257f * vmath::exp(-(x * x))); }
};

// y = min(max(x, lo), hi), NaN passing through; dx = dy where lo <= x <= hi, else 0. An absent
// bound is an infinite one.
struct ClampOp {
    static constexpr const char* kBackwardName = "ClampBackward1";
    static constexpr Uses kUses = Uses::input;
    float lo = -vmath::kInf, hi = vmath::kInf;
    float value(float x) const {
        const float y = x < lo ? lo : x;
        return y > hi ? hi : y;
    }
    float grad(float x, float, float dy) const { return x >= lo && x <= hi ? dy : 0.0f; }
};

// ---- pow(x, exponent) --------------------------------------------------------------------
// As torch, the exponents 2, 3, 0.5, -0.5, -1 and -2 are computed by multiplications and square
// roots (which vectorise); the others by std::pow. dx = dy * (e * x^(e - 1)), and 0 for e = 0.

enum class PowKind : uint8_t { square, cube, sqrt, rsqrt, reciprocal, inverse_square, general };

template <PowKind K>
struct PowOp {
    static constexpr const char* kBackwardName = "PowBackward0";
    static constexpr Uses kUses = Uses::input;
    float e = 1.0f;
    float value(float x) const {
        if constexpr (K == PowKind::square) return x * x;
        if constexpr (K == PowKind::cube) return x * x * x;
        if constexpr (K == PowKind::sqrt) return std::sqrt(x);
        if constexpr (K == PowKind::rsqrt) return 1.0f / std::sqrt(x);
        if constexpr (K == PowKind::reciprocal) return 1.0f / x;
        if constexpr (K == PowKind::inverse_square) return 1.0f / (x * x);
        if constexpr (K == PowKind::general) return std::pow(x, e);
    }
    float grad(float x, float, float dy) const {
        if constexpr (K == PowKind::square) return dy * (2.0f * x);
        if constexpr (K == PowKind::cube) return dy * (3.0f * (x * x));
        if constexpr (K == PowKind::sqrt) return dy * (0.5f * (1.0f / std::sqrt(x)));
        if constexpr (K == PowKind::rsqrt) return dy * (-0.5f * std::pow(x, -1.5f));
        if constexpr (K == PowKind::reciprocal) return dy * (-1.0f / (x * x));
        if constexpr (K == PowKind::inverse_square) return dy * (-2.0f / (x * x * x));
        if constexpr (K == PowKind::general) return e == 0.0f ? 0.0f : dy * (e * std::pow(x, e - 1.0f));
    }
};

}  // namespace
}  // namespace detail

Tensor neg(const Tensor& x) { return detail::unary_op(x, "neg", detail::NegOp{}); }
Tensor exp(const Tensor& x) { return detail::unary_op(x, "exp", detail::ExpOp{}); }
Tensor expm1(const Tensor& x) { return detail::unary_op(x, "expm1", detail::Expm1Op{}); }
Tensor log(const Tensor& x) { return detail::unary_op(x, "log", detail::LogOp{}); }
Tensor log1p(const Tensor& x) { return detail::unary_op(x, "log1p", detail::Log1pOp{}); }
Tensor sqrt(const Tensor& x) { return detail::unary_op(x, "sqrt", detail::SqrtOp{}); }
Tensor rsqrt(const Tensor& x) { return detail::unary_op(x, "rsqrt", detail::RsqrtOp{}); }
Tensor reciprocal(const Tensor& x) { return detail::unary_op(x, "reciprocal", detail::ReciprocalOp{}); }
Tensor abs(const Tensor& x) { return detail::unary_op(x, "abs", detail::AbsOp{}); }
Tensor sign(const Tensor& x) { return detail::unary_op(x, "sign", detail::SignOp{}); }
Tensor erf(const Tensor& x) { return detail::unary_op(x, "erf", detail::ErfOp{}); }
Tensor square(const Tensor& x) { return detail::unary_op(x, "square", detail::PowOp<detail::PowKind::square>{}); }

Tensor pow(const Tensor& x, float exponent) {
    using detail::PowKind, detail::PowOp, detail::unary_op;
    if (exponent == 2.0f) return unary_op(x, "pow", PowOp<PowKind::square>{});
    if (exponent == 3.0f) return unary_op(x, "pow", PowOp<PowKind::cube>{});
    if (exponent == 0.5f) return unary_op(x, "pow", PowOp<PowKind::sqrt>{});
    if (exponent == -0.5f) return unary_op(x, "pow", PowOp<PowKind::rsqrt>{});
    if (exponent == -1.0f) return unary_op(x, "pow", PowOp<PowKind::reciprocal>{});
    if (exponent == -2.0f) return unary_op(x, "pow", PowOp<PowKind::inverse_square>{});
    return unary_op(x, "pow", PowOp<PowKind::general>{exponent});
}

Tensor clamp(const Tensor& x, std::optional<float> min, std::optional<float> max) {
    NORMNET_CHECK(min || max, "clamp: at least one of 'min' or 'max' must not be None");
    // A NaN bound makes every element NaN, with a zero gradient (no x lies within it), as torch.
    if ((min && std::isnan(*min)) || (max && std::isnan(*max))) return add(mul(x, 0.0f), NAN);
    detail::ClampOp op;
    if (min) op.lo = *min;
    if (max) op.hi = *max;
    return detail::unary_op(x, "clamp", op);
}
Tensor clamp_min(const Tensor& x, float min) { return clamp(x, min, std::nullopt); }
Tensor clamp_max(const Tensor& x, float max) { return clamp(x, std::nullopt, max); }

Tensor Tensor::neg() const { return normnet::neg(*this); }
Tensor Tensor::exp() const { return normnet::exp(*this); }
Tensor Tensor::expm1() const { return normnet::expm1(*this); }
Tensor Tensor::log() const { return normnet::log(*this); }
Tensor Tensor::log1p() const { return normnet::log1p(*this); }
Tensor Tensor::sqrt() const { return normnet::sqrt(*this); }
Tensor Tensor::rsqrt() const { return normnet::rsqrt(*this); }
Tensor Tensor::reciprocal() const { return normnet::reciprocal(*this); }
Tensor Tensor::abs() const { return normnet::abs(*this); }
Tensor Tensor::sign() const { return normnet::sign(*this); }
Tensor Tensor::erf() const { return normnet::erf(*this); }
Tensor Tensor::square() const { return normnet::square(*this); }
Tensor Tensor::pow(float exponent) const { return normnet::pow(*this, exponent); }
Tensor Tensor::clamp(std::optional<float> min, std::optional<float> max) const {
    return normnet::clamp(*this, min, max);
}
Tensor Tensor::clamp_min(float min) const { return normnet::clamp_min(*this, min); }
Tensor Tensor::clamp_max(float max) const { return normnet::clamp_max(*this, max); }

}  // namespace normnet

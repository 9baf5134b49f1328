// Comparisons and selection: eq ne lt le gt ge (bool masks, broadcasting, any dtype), isnan
// isinf isfinite, logical_not/and/or/xor, the logical reductions all and any, where(cond, a, b)
// (differentiable in a and b) and masked_fill. Masks are kBool tensors: they select in where, convert with .to(kFloat32), and
// count with sum/mean.
#include <cmath>

#include "loop.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"
#include "reduce.hpp"

namespace normnet {
namespace detail {
namespace {

// ---- Elementwise predicates -----------------------------------------------------------------

// out: bool [shape] = f(a, b) for a run; s: strides of (out, a, b)
template <class T, class F>
void predicate_run(const std::tuple<bool*, const T*, const T*>& p, const std::array<int64_t, 3>& s, int64_t n, F f) {
    const auto [o, a, b] = p;
    if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
        for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
    } else if (s[0] == 1 && s[1] == 1 && s[2] == 0) {
        const T bv = *b;
        for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv);
    } else {
        for (int64_t i = 0; i < n; ++i) o[i * s[0]] = f(a[i * s[1]], b[i * s[2]]);
    }
}

// f(a, b) elementwise over the broadcast shape, both operands of element type T.
template <class T, class F>
Tensor predicate(const Tensor& a, const Tensor& b, const char* op, F f) {
    const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
    Tensor out = empty(shape, kBool);
    const StridedLoop<3> loop(shape, {contiguous_strides(shape), broadcast_strides(a, shape), broadcast_strides(b, shape)});
    loop.run(std::tuple<bool*, const T*, const T*>{out.data_ptr<bool>(), a.data_ptr<T>(), b.data_ptr<T>()},
             [f](const auto& p, const auto& s, int64_t n) { predicate_run<T>(p, s, n, f); });
    return out;
}

// A comparison of two tensors: in their dtype when they share it, else both as float32 (as
// torch promotes int64 and bool against float).
template <class F>
Tensor compare(const Tensor& a, const Tensor& b, const char* op, F f) {
    if (a.dtype() != b.dtype()) return compare(a.to(kFloat32), b.to(kFloat32), op, f);
    return visit_dtype(a.dtype(), [&](auto v) { return predicate<decltype(v)>(a, b, op, f); });
}

// A comparison with a number: float32 tensors compare with it rounded to float (as torch),
// int64 and bool ones in double, so 2.5 stays 2.5.
template <class F>
Tensor compare(const Tensor& a, double b, const char* op, F f) {
    if (a.dtype() == kFloat32) return predicate<float>(a, full({}, b), op, f);
    const Tensor a64 = a.dtype() == kInt64 ? a : a.to(kInt64);
    if (b == std::floor(b) && std::abs(b) < 9.0e15) return predicate<int64_t>(a64, full({}, b, kInt64), op, f);
    // A fractional number: compare as double, element by element (rare, so not vectorised).
    const Tensor ad = a64.contiguous();
    Tensor out = empty(a.shape(), kBool);
    const int64_t* x = ad.data_ptr<int64_t>();
    bool* o = out.data_ptr<bool>();
    for (int64_t i = 0; i < a.numel(); ++i) o[i] = f(static_cast<double>(x[i]), b);
    return out;
}

struct Eq {
    template <class T>
    bool operator()(T a, T b) const { return a == b; }
};
struct Ne {
    template <class T>
    bool operator()(T a, T b) const { return a != b; }
};
struct Lt {
    template <class T>
    bool operator()(T a, T b) const { return a < b; }
};
struct Le {
    template <class T>
    bool operator()(T a, T b) const { return a <= b; }
};
struct Gt {
    template <class T>
    bool operator()(T a, T b) const { return a > b; }
};
struct Ge {
    template <class T>
    bool operator()(T a, T b) const { return a >= b; }
};
struct And {
    bool operator()(bool a, bool b) const { return a && b; }
};
struct Or {
    bool operator()(bool a, bool b) const { return a || b; }
};
struct Xor {
    bool operator()(bool a, bool b) const { return a != b; }
};

// A logical op: operands are true where nonzero (as torch), compared as bool.
template <class F>
Tensor logical(const Tensor& a, const Tensor& b, const char* op, F f) {
    return predicate<bool>(a.to(kBool), b.to(kBool), op, f);
}

// out: bool [x's shape] = f(x) for a float32 x
template <class F>
Tensor float_test(const Tensor& x_in, bool other_dtypes, F f) {
    if (x_in.dtype() != kFloat32) return full(x_in.shape(), other_dtypes ? 1.0 : 0.0, kBool);
    const Tensor x = x_in.contiguous();
    Tensor out = empty(x.shape(), kBool);
    const float* xp = x.data();
    bool* o = out.data_ptr<bool>();
    parallel_for(x.numel(), kElementGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = f(xp[i]);
    });
    return out;
}

void check_bool(const Tensor& t, const char* op) {
    NORMNET_CHECK(t.dtype() == kBool, op, ": only bool tensors (masks) are supported, got ", t.dtype());
}

}  // namespace
}  // namespace detail

Tensor eq(const Tensor& a, const Tensor& b) { return detail::compare(a, b, "eq", detail::Eq{}); }

bool equal(const Tensor& a, const Tensor& b) {
    if (!(a.shape() == b.shape())) return false;
    NoGradGuard no_grad;
    return logical_not(eq(a, b)).sum().item<int64_t>() == 0;
}
Tensor ne(const Tensor& a, const Tensor& b) { return detail::compare(a, b, "ne", detail::Ne{}); }
Tensor lt(const Tensor& a, const Tensor& b) { return detail::compare(a, b, "lt", detail::Lt{}); }
Tensor le(const Tensor& a, const Tensor& b) { return detail::compare(a, b, "le", detail::Le{}); }
Tensor gt(const Tensor& a, const Tensor& b) { return detail::compare(a, b, "gt", detail::Gt{}); }
Tensor ge(const Tensor& a, const Tensor& b) { return detail::compare(a, b, "ge", detail::Ge{}); }
Tensor eq(const Tensor& a, double b) { return detail::compare(a, b, "eq", detail::Eq{}); }
Tensor ne(const Tensor& a, double b) { return detail::compare(a, b, "ne", detail::Ne{}); }
Tensor lt(const Tensor& a, double b) { return detail::compare(a, b, "lt", detail::Lt{}); }
Tensor le(const Tensor& a, double b) { return detail::compare(a, b, "le", detail::Le{}); }
Tensor gt(const Tensor& a, double b) { return detail::compare(a, b, "gt", detail::Gt{}); }
Tensor ge(const Tensor& a, double b) { return detail::compare(a, b, "ge", detail::Ge{}); }

Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, double b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, double b) { return ne(a, b); }
Tensor operator<(const Tensor& a, double b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, double b) { return le(a, b); }
Tensor operator>(const Tensor& a, double b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, double b) { return ge(a, b); }
Tensor operator==(double a, const Tensor& b) { return eq(b, a); }
Tensor operator!=(double a, const Tensor& b) { return ne(b, a); }
Tensor operator<(double a, const Tensor& b) { return gt(b, a); }
Tensor operator<=(double a, const Tensor& b) { return ge(b, a); }
Tensor operator>(double a, const Tensor& b) { return lt(b, a); }
Tensor operator>=(double a, const Tensor& b) { return le(b, a); }

Tensor isnan(const Tensor& x) {
    return detail::float_test(x, false, [](float v) { return v != v; });
}
Tensor isinf(const Tensor& x) {
    return detail::float_test(x, false, [](float v) { return std::fabs(v) == INFINITY; });
}
Tensor isfinite(const Tensor& x) {
    return detail::float_test(x, true, [](float v) { return std::fabs(v) < INFINITY; });
}

Tensor logical_not(const Tensor& x) { return eq(x.to(kBool), 0.0); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return detail::logical(a, b, "logical_and", detail::And{}); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return detail::logical(a, b, "logical_or", detail::Or{}); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return detail::logical(a, b, "logical_xor", detail::Xor{}); }
Tensor operator~(const Tensor& a) {
    detail::check_bool(a, "operator~");
    return logical_not(a);
}
Tensor operator&(const Tensor& a, const Tensor& b) {
    detail::check_bool(a, "operator&"), detail::check_bool(b, "operator&");
    return logical_and(a, b);
}
Tensor operator|(const Tensor& a, const Tensor& b) {
    detail::check_bool(a, "operator|"), detail::check_bool(b, "operator|");
    return logical_or(a, b);
}
Tensor operator^(const Tensor& a, const Tensor& b) {
    detail::check_bool(a, "operator^"), detail::check_bool(b, "operator^");
    return logical_xor(a, b);
}

// ---- where(cond, a, b) ------------------------------------------------------------------------

namespace detail {
namespace {

// out = cond ? a : b for a run; s: strides of (out, cond, a, b)
template <class T>
void where_run(const std::tuple<T*, const bool*, const T*, const T*>& p, const std::array<int64_t, 4>& s, int64_t n) {
    const auto [o, c, a, b] = p;
    if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 1) {
        for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? a[i] : b[i];
    } else {
        for (int64_t i = 0; i < n; ++i) o[i * s[0]] = c[i * s[1]] ? a[i * s[2]] : b[i * s[3]];
    }
}

// dx (Store) = cond == kTaken ? dy : 0 for a run; s: strides of (dx, dy, cond)
template <class Store, bool kTaken>
void where_backward_run(const std::tuple<float*, const float*, const bool*>& p, const std::array<int64_t, 3>& s,
                        int64_t n) {
    const auto [dx, dy, c] = p;
    if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
        for (int64_t i = 0; i < n; ++i) Store::put(dx[i], c[i] == kTaken ? dy[i] : 0.0f);
    } else {
        for (int64_t i = 0; i < n; ++i) Store::put(dx[i * s[0]], c[i * s[2]] == kTaken ? dy[i * s[1]] : 0.0f);
    }
}

class WhereBackward final : public OpNode {
public:
    Shape a_shape, b_shape;
    const char* name() const override { return "WhereBackward0"; }
    void backward(const Tensor& dy) override {
        input_grad<true>(0, dy, a_shape);
        input_grad<false>(1, dy, b_shape);
    }

private:
    // a's gradient is dy where cond holds (b's where it does not), summed to the input's shape.
    template <bool kTaken>
    void input_grad(int i, const Tensor& dy, const Shape& shape) {
        const GradOut dx = grad_out(i);
        if (!dx) return;
        const Tensor& cond = saved(0);
        const Shape& out = out_shape_;
        const auto write = [&]<class Store>(float* d) {
            const StridedLoop<3> loop(out, {contiguous_strides(out), contiguous_strides(out), broadcast_strides(cond, out)});
            loop.run(std::tuple<float*, const float*, const bool*>{d, dy.data(), cond.data_ptr<bool>()},
                     where_backward_run<Store, kTaken>);
        };
        if (shape == out) {
            dx.write(write);
        } else {
            Tensor full = empty(out);
            write.template operator()<Overwrite>(full.data());
            sum_to(dx, full, shape);
        }
    }
};

}  // namespace
}  // namespace detail

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
    NORMNET_CHECK(condition.dtype() == kBool, "where: expected condition to be a boolean tensor, but got a tensor with "
                  "dtype ", condition.dtype());
    NORMNET_CHECK(a.dtype() == b.dtype(), "where: expected a and b to have the same dtype, but got ", a.dtype(),
                  " and ", b.dtype());
    const Shape shape = detail::broadcast_shapes(detail::broadcast_shapes(condition.shape(), a.shape(), "where"),
                                                 b.shape(), "where");
    Tensor out = empty(shape, a.dtype());
    const detail::StridedLoop<4> loop(shape, {detail::contiguous_strides(shape), detail::broadcast_strides(condition, shape),
                                              detail::broadcast_strides(a, shape), detail::broadcast_strides(b, shape)});
    detail::visit_dtype(a.dtype(), [&](auto v) {
        using T = decltype(v);
        loop.run(std::tuple<T*, const bool*, const T*, const T*>{out.data_ptr<T>(), condition.data_ptr<bool>(),
                                                                 a.data_ptr<T>(), b.data_ptr<T>()},
                 detail::where_run<T>);
    });
    if (auto* node = detail::record<detail::WhereBackward>(out, {a, b}, {condition})) {
        node->a_shape = a.shape(), node->b_shape = b.shape();
    }
    return out;
}
Tensor where(const Tensor& condition, const Tensor& a, double b) { return where(condition, a, full({}, b, a.dtype())); }
Tensor where(const Tensor& condition, double a, const Tensor& b) { return where(condition, full({}, a, b.dtype()), b); }

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
    NORMNET_CHECK(mask.dtype() == kBool, "masked_fill: expected a bool mask, got ", mask.dtype());
    // x and mask broadcast together, as torch's out-of-place masked_fill (masked_fill_ keeps x's shape).
    detail::broadcast_shapes(x.shape(), mask.shape(), "masked_fill");  // a mismatch names this op
    return where(mask, full({}, value, x.dtype()), x);
}

// ---- masked_fill_ (in place) ---------------------------------------------------------------------

namespace detail {
namespace {

// self's old gradient is dy where the mask is false (the filled elements no longer depend on it)
class MaskedFillBackward final : public OpNode {
public:
    const char* name() const override { return "MaskedFillBackward0"; }
    void backward(const Tensor& dy) override {
        const GradOut dx = grad_out(0);
        if (!dx) return;
        const Tensor& mask = saved(0);
        const Shape& out = out_shape_;
        dx.write([&]<class Store>(float* d) {
            const StridedLoop<3> loop(out, {contiguous_strides(out), contiguous_strides(out), broadcast_strides(mask, out)});
            loop.run(std::tuple<float*, const float*, const bool*>{d, dy.data(), mask.data_ptr<bool>()},
                     where_backward_run<Store, false>);
        });
    }
};

}  // namespace
}  // namespace detail

Tensor& Tensor::masked_fill_(const Tensor& mask, double value) {
    NORMNET_CHECK(mask.dtype() == kBool, "masked_fill_: expected a bool mask, got ", mask.dtype());
    NORMNET_CHECK(detail::broadcast_shapes(shape(), mask.shape(), "masked_fill_") == shape(), "masked_fill_: a mask of "
                  "shape ", mask.shape(), " cannot be broadcast to the input's shape ", shape());
    detail::check_inplace(*this, "masked_fill_");
    // The mask is saved: a copy when it shares self's storage (it is about to be written).
    const Tensor m = mask.shares_storage(*this) ? mask.clone() : mask;
    const Tensor fill = full({}, value, dtype());
    const detail::StridedLoop<4> loop(shape(), {strides(), detail::broadcast_strides(m, shape()), strides(),
                                                detail::broadcast_strides(fill, shape())});
    detail::visit_dtype(dtype(), [&](auto v) {
        using T = decltype(v);
        loop.run(std::tuple<T*, const bool*, const T*, const T*>{data_ptr<T>(), m.data_ptr<bool>(), data_ptr<T>(),
                                                                 fill.data_ptr<T>()},
                 [](const auto& p, const auto& s, int64_t n) {
                     const auto [o, c, a, b] = p;
                     for (int64_t i = 0; i < n; ++i) o[i * s[0]] = c[i * s[1]] ? b[0] : a[i * s[2]];
                 });
    });
    detail::record_inplace<detail::MaskedFillBackward>(*this, {}, {m});
    return *this;
}

// ---- all, any: whether every or some element is nonzero (NaN counts as nonzero) ----------------

namespace detail {
namespace {

// out: bool [outer, inner] = all (kAll) or any of x: [outer, R, inner] != 0 along R
template <bool kAll, class T>
void logical_reduce(bool* out, const T* x, int64_t outer, int64_t R, int64_t inner) {
    parallel_for(outer * inner, item_grain(R), [&](int64_t b, int64_t e) {
        for (int64_t q = b; q < e; ++q) {
            const T* p = x + (q / inner) * R * inner + q % inner;
            bool v = kAll;
            for (int64_t r = 0; r < R && v == kAll; ++r) v = (p[r * inner] != T(0)) == kAll ? kAll : !kAll;
            out[q] = v;
        }
    });
}

template <bool kAll>
Tensor logical_over(const Tensor& x, uint32_t mask, bool keepdim) {
    const Grouped g = group_dims(x, mask, keepdim);
    Tensor out = empty(g.out_shape, kBool);
    visit_dtype(g.x.dtype(), [&](auto type) {
        using T = decltype(type);
        logical_reduce<kAll>(out.data_ptr<bool>(), g.x.data_ptr<T>(), g.outer, g.R, g.inner);
    });
    return out;
}

}  // namespace
}  // namespace detail

Tensor all(const Tensor& x) { return detail::logical_over<true>(x, detail::dim_mask({}, x.dim(), "all"), false); }
Tensor all(const Tensor& x, int64_t dim, bool keepdim) {
    return detail::logical_over<true>(x, detail::one_dim_mask(dim, x.dim(), "all"), keepdim);
}
Tensor any(const Tensor& x) { return detail::logical_over<false>(x, detail::dim_mask({}, x.dim(), "any"), false); }
Tensor any(const Tensor& x, int64_t dim, bool keepdim) {
    return detail::logical_over<false>(x, detail::one_dim_mask(dim, x.dim(), "any"), keepdim);
}
Tensor Tensor::all() const { return normnet::all(*this); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return normnet::all(*this, dim, keepdim); }
Tensor Tensor::any() const { return normnet::any(*this); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return normnet::any(*this, dim, keepdim); }

Tensor Tensor::eq(const Tensor& other) const { return normnet::eq(*this, other); }
Tensor Tensor::ne(const Tensor& other) const { return normnet::ne(*this, other); }
Tensor Tensor::lt(const Tensor& other) const { return normnet::lt(*this, other); }
Tensor Tensor::le(const Tensor& other) const { return normnet::le(*this, other); }
Tensor Tensor::gt(const Tensor& other) const { return normnet::gt(*this, other); }
Tensor Tensor::ge(const Tensor& other) const { return normnet::ge(*this, other); }
Tensor Tensor::eq(double other) const { return normnet::eq(*this, other); }
Tensor Tensor::ne(double other) const { return normnet::ne(*this, other); }
Tensor Tensor::lt(double other) const { return normnet::lt(*this, other); }
Tensor Tensor::le(double other) const { return normnet::le(*this, other); }
Tensor Tensor::gt(double other) const { return normnet::gt(*this, other); }
Tensor Tensor::ge(double other) const { return normnet::ge(*this, other); }
Tensor Tensor::isnan() const { return normnet::isnan(*this); }
Tensor Tensor::isinf() const { return normnet::isinf(*this); }
Tensor Tensor::isfinite() const { return normnet::isfinite(*this); }
Tensor Tensor::logical_not() const { return normnet::logical_not(*this); }
Tensor Tensor::logical_and(const Tensor& other) const { return normnet::logical_and(*this, other); }
Tensor Tensor::logical_or(const Tensor& other) const { return normnet::logical_or(*this, other); }
Tensor Tensor::logical_xor(const Tensor& other) const { return normnet::logical_xor(*this, other); }
Tensor Tensor::where(const Tensor& condition, const Tensor& other) const { return normnet::where(condition, *this, other); }
Tensor Tensor::masked_fill(const Tensor& mask, double value) const { return normnet::masked_fill(*this, mask, value); }

}  // namespace normnet

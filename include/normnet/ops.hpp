// Every differentiable function of normnet, declared once: the functional API (as
// torch::nn::functional), grouped by the family file of src/ops/ that defines it with its backward.
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/tensor.hpp"

namespace normnet {

/// A list of dimensions, e.g. {0, 2} (negative values count from the end).
using Dims = Shape;

// ---- linear.cpp: matrix products through OpenBLAS ----------------------------------------------
/// The matrix product by PyTorch's rules (torch.matmul): 1-D @ 1-D is a dot product -> [];
/// [M, K] @ [K] -> [M]; [K] @ [K, N] -> [N]; [M, K] @ [K, N] -> [M, N]; with more dims, the
/// leading ones are batch dims that broadcast ([B, M, K] @ [K, N], [K] @ [B, K, N], [B, 1, M, K]
/// @ [C, K, N], ...). Transposed views are read in place (no copy).
NORMNET_API Tensor matmul(const Tensor& a, const Tensor& b);
/// a [M, K] @ b [K, N] -> [M, N], both 2-D (torch.mm).
NORMNET_API Tensor mm(const Tensor& a, const Tensor& b);
/// a [B, M, K] @ b [B, K, N] -> [B, M, N], both 3-D with the same batch (torch.bmm).
NORMNET_API Tensor bmm(const Tensor& a, const Tensor& b);
/// x [*, in] @ weight[out, in]^T + bias[out] -> [*, out]; weight is stored as in PyTorch.
NORMNET_API Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// ---- feed_forward.cpp: the Transformer's feed-forward network as one op ---------------------
/// linear(act(linear(x, weight1, bias1)), weight2, bias2) with act "relu" or "gelu" (x [*, D],
/// weight1 [F, D], weight2 [D, F]): the value of the three ops, computed by blocks of rows so
/// that act's output and its gradient are never whole [*, F] tensors. Backward keeps only the
/// hidden pre-activation [*, F], or with recompute_hidden nothing but x (the hidden rows are
/// recomputed, bit for bit, block by block: one more x W1^T product for an [*, F] tensor less).
/// TransformerEncoderLayer runs its feed-forward sublayer through it when its dropout is off.
NORMNET_API Tensor feed_forward(const Tensor& x, const Tensor& weight1, const Tensor& bias1, const Tensor& weight2,
                                const Tensor& bias2, std::string_view activation = "relu", bool recompute_hidden = false);

// ---- elementwise.cpp: binary ops broadcast by PyTorch's rules ----------------------------------
/// a + alpha * b, elementwise, broadcasting ([2, 3] + [3], [4, 1] + [1, 5], ...), as torch::add.
NORMNET_API Tensor add(const Tensor& a, const Tensor& b, float alpha = 1.0f);
/// a - alpha * b, elementwise, broadcasting.
NORMNET_API Tensor sub(const Tensor& a, const Tensor& b, float alpha = 1.0f);
/// a * b, elementwise, broadcasting.
NORMNET_API Tensor mul(const Tensor& a, const Tensor& b);
/// a / b (true division), elementwise, broadcasting.
NORMNET_API Tensor div(const Tensor& a, const Tensor& b);
/// a^b, elementwise, broadcasting (std::pow's special cases; differentiable in both).
NORMNET_API Tensor pow(const Tensor& a, const Tensor& b);
/// The larger of a and b, elementwise, broadcasting; NaN where either is NaN. The gradient goes
/// to the larger input, split evenly on ties (as torch).
NORMNET_API Tensor maximum(const Tensor& a, const Tensor& b);
/// The smaller of a and b, elementwise, broadcasting; NaN where either is NaN.
NORMNET_API Tensor minimum(const Tensor& a, const Tensor& b);
/// a + alpha * b for every element.
NORMNET_API Tensor add(const Tensor& a, float b, float alpha = 1.0f);
/// a - alpha * b for every element.
NORMNET_API Tensor sub(const Tensor& a, float b, float alpha = 1.0f);
/// b - a for every element (torch::rsub).
NORMNET_API Tensor rsub(const Tensor& a, float b);
/// a * b for every element.
NORMNET_API Tensor mul(const Tensor& a, float b);
/// a / b for every element.
NORMNET_API Tensor div(const Tensor& a, float b);
/// a / b for every element of b (libtorch's 2 / x).
NORMNET_API Tensor div(float a, const Tensor& b);
/// a^b for every element of b.
NORMNET_API Tensor pow(float a, const Tensor& b);
/// The remainder of a / b with the divisor's sign (Python's %, torch.remainder): a - floor(a / b) * b;
/// and with the dividend's (C's fmod, torch.fmod): a - trunc(a / b) * b. Broadcasting;
/// differentiable in both (d/db = -floor(a / b), resp. -trunc(a / b), as torch).
NORMNET_API Tensor remainder(const Tensor& a, const Tensor& b);
NORMNET_API Tensor fmod(const Tensor& a, const Tensor& b);
/// With a number: a float number gives a float32 result (an integer tensor is converted).
NORMNET_API Tensor remainder(const Tensor& a, double b);
NORMNET_API Tensor fmod(const Tensor& a, double b);


/// Operators, as on torch::Tensor: + - * / between tensors (broadcasting) and with a number on
/// either side, and unary minus. (x += y and the other compound assignments are Tensor members.)
NORMNET_API Tensor operator+(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator-(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator*(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator/(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator+(const Tensor& a, float b);
NORMNET_API Tensor operator-(const Tensor& a, float b);
NORMNET_API Tensor operator*(const Tensor& a, float b);
NORMNET_API Tensor operator/(const Tensor& a, float b);
NORMNET_API Tensor operator+(float a, const Tensor& b);
NORMNET_API Tensor operator-(float a, const Tensor& b);
NORMNET_API Tensor operator*(float a, const Tensor& b);
NORMNET_API Tensor operator/(float a, const Tensor& b);
NORMNET_API Tensor operator-(const Tensor& a);

// Integer tensors (int64, int32; integer.cpp): + - * remainder fmod maximum minimum of two integer
// tensors stay integer (int32 only with int32), wrapping around on overflow as torch; / is true
// division (float32); an integer with a float32 tensor is converted to float32, as torch promotes.
// A float number with an integer tensor gives float32 (labels * 0.5); an integer number keeps the
// integer dtype (labels + 1), through these overloads.
namespace detail {
inline Tensor integer_number(int64_t v) {
    const int64_t one[1] = {v};
    return from_vector(std::span<const int64_t>(one), Shape{});
}
template <class I>
concept IntegerNumber = std::integral<I> && !std::same_as<I, bool>;
}  // namespace detail
template <detail::IntegerNumber I>
Tensor operator+(const Tensor& a, I b) {
    return a.is_floating_point() ? a + static_cast<float>(b) : a + detail::integer_number(static_cast<int64_t>(b));
}
template <detail::IntegerNumber I>
Tensor operator+(I a, const Tensor& b) {
    return b + a;
}
template <detail::IntegerNumber I>
Tensor operator-(const Tensor& a, I b) {
    return a.is_floating_point() ? a - static_cast<float>(b) : a - detail::integer_number(static_cast<int64_t>(b));
}
template <detail::IntegerNumber I>
Tensor operator-(I a, const Tensor& b) {
    return b.is_floating_point() ? static_cast<float>(a) - b : detail::integer_number(static_cast<int64_t>(a)) - b;
}
template <detail::IntegerNumber I>
Tensor operator*(const Tensor& a, I b) {
    return a.is_floating_point() ? a * static_cast<float>(b) : a * detail::integer_number(static_cast<int64_t>(b));
}
template <detail::IntegerNumber I>
Tensor operator*(I a, const Tensor& b) {
    return b * a;
}
template <detail::IntegerNumber I>
Tensor remainder(const Tensor& a, I b) {
    return a.is_floating_point() ? remainder(a, static_cast<double>(b)) : remainder(a, detail::integer_number(static_cast<int64_t>(b)));
}
template <detail::IntegerNumber I>
Tensor fmod(const Tensor& a, I b) {
    return a.is_floating_point() ? fmod(a, static_cast<double>(b)) : fmod(a, detail::integer_number(static_cast<int64_t>(b)));
}

// ---- unary.cpp: unary math -----------------------------------------------------------------------
// exp, log, log1p, expm1, erf and the activations below use normnet's vectorised float functions
// (src/ops/vmath.hpp: maximum errors from 1 ulp (exp) to 8 (gelu), measured by a test), not libm.
/// -x.
NORMNET_API Tensor neg(const Tensor& x);
/// e^x.
NORMNET_API Tensor exp(const Tensor& x);
/// e^x - 1, accurate near 0.
NORMNET_API Tensor expm1(const Tensor& x);
/// Natural logarithm (-inf at 0, NaN below).
NORMNET_API Tensor log(const Tensor& x);
/// log(1 + x), accurate near 0.
NORMNET_API Tensor log1p(const Tensor& x);
/// Square root.
NORMNET_API Tensor sqrt(const Tensor& x);
/// 1 / sqrt(x).
NORMNET_API Tensor rsqrt(const Tensor& x);
/// 1 / x.
NORMNET_API Tensor reciprocal(const Tensor& x);
/// |x|; its gradient is 0 at 0, as torch's.
NORMNET_API Tensor abs(const Tensor& x);
/// x * x (torch.square: its node is PowBackward0).
NORMNET_API Tensor square(const Tensor& x);
/// x^exponent; 2, 3, 0.5, -0.5, -1 and -2 by multiplications and square roots (as torch), others
/// by std::pow. The gradient at exponent 0 is 0.
NORMNET_API Tensor pow(const Tensor& x, float exponent);
/// min(max(x, min), max) with either bound optional (at least one given), NaN passing through
/// (a NaN bound gives NaN everywhere, as torch); the gradient flows where min <= x <= max.
NORMNET_API Tensor clamp(const Tensor& x, std::optional<float> min, std::optional<float> max = std::nullopt);
/// clamp(x, min, none) and clamp(x, none, max).
NORMNET_API Tensor clamp_min(const Tensor& x, float min);
NORMNET_API Tensor clamp_max(const Tensor& x, float max);
/// -1, 0 or 1 by the sign of x (0 for NaN, as torch); its gradient is 0.
NORMNET_API Tensor sign(const Tensor& x);
/// The error function.
NORMNET_API Tensor erf(const Tensor& x);

// ---- activation.cpp ---------------------------------------------------------------------------
/// max(x, 0) elementwise, as torch.relu: NaN and -0.0 pass through.
NORMNET_API Tensor relu(const Tensor& x);
/// x for x > 0, negative_slope * x otherwise.
NORMNET_API Tensor leaky_relu(const Tensor& x, float negative_slope = 0.01f);
/// x for x > 0, alpha * (e^x - 1) otherwise.
NORMNET_API Tensor elu(const Tensor& x, float alpha = 1.0f);
/// x * Phi(x), Phi the standard normal CDF (approximate "none"), or its tanh approximation
/// x / 2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (approximate "tanh"), as torch.nn.functional.gelu.
NORMNET_API Tensor gelu(const Tensor& x, std::string_view approximate = "none");
/// x * sigmoid(x) (SiLU, also called swish).
NORMNET_API Tensor silu(const Tensor& x);
/// Hyperbolic tangent.
NORMNET_API Tensor tanh(const Tensor& x);
/// 1 / (1 + e^-x).
NORMNET_API Tensor sigmoid(const Tensor& x);
/// log(1 + e^(beta x)) / beta, and x itself where beta x > threshold (as torch).
NORMNET_API Tensor softplus(const Tensor& x, float beta = 1.0f, float threshold = 20.0f);
/// e^x / sum(e^x) over dimension dim (negative counts from the end), computed stably.
NORMNET_API Tensor softmax(const Tensor& x, int dim = -1);
/// log(softmax(x)) over dimension dim, computed stably: accurate for logits of 1e4.
NORMNET_API Tensor log_softmax(const Tensor& x, int dim = -1);
/// min(max(x, min_val), max_val), NaN passing; the gradient flows strictly between the bounds.
NORMNET_API Tensor hardtanh(const Tensor& x, float min_val = -1.0f, float max_val = 1.0f);
/// hardtanh(x, 0, 6).
NORMNET_API Tensor relu6(const Tensor& x);
/// scale * (x for x > 0, alpha (e^x - 1) otherwise) with SELU's alpha 1.6732632 and scale 1.0507010.
NORMNET_API Tensor selu(const Tensor& x);
/// x * tanh(softplus(x)).
NORMNET_API Tensor mish(const Tensor& x);
/// x * relu6(x + 3) / 6.
NORMNET_API Tensor hardswish(const Tensor& x);
/// x for x > 0, weight * x otherwise, weight holding one slope per channel (dim 1 of x) or one
/// for all (a [1] or 0-d tensor); differentiable in both (torch.nn.functional.prelu).
NORMNET_API Tensor prelu(const Tensor& x, const Tensor& weight);

// ---- compare.cpp: comparisons and selection ------------------------------------------------------
// Comparisons give kBool masks. Two tensors broadcast and compare in their dtype, or both as
// float32 when their dtypes differ; a number compares with a float32 tensor as a float, with an
// int64 or bool tensor exactly. Masks select in where/masked_fill, convert with .to(kFloat32).
/// a == b, a != b, a < b, a <= b, a > b, a >= b elementwise.
NORMNET_API Tensor eq(const Tensor& a, const Tensor& b);
NORMNET_API Tensor ne(const Tensor& a, const Tensor& b);
NORMNET_API Tensor lt(const Tensor& a, const Tensor& b);
NORMNET_API Tensor le(const Tensor& a, const Tensor& b);
NORMNET_API Tensor gt(const Tensor& a, const Tensor& b);
NORMNET_API Tensor ge(const Tensor& a, const Tensor& b);
NORMNET_API Tensor eq(const Tensor& a, double b);
NORMNET_API Tensor ne(const Tensor& a, double b);
NORMNET_API Tensor lt(const Tensor& a, double b);
NORMNET_API Tensor le(const Tensor& a, double b);
NORMNET_API Tensor gt(const Tensor& a, double b);
NORMNET_API Tensor ge(const Tensor& a, double b);
/// The comparisons as operators returning masks, as libtorch's.
NORMNET_API Tensor operator==(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator!=(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator<(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator<=(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator>(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator>=(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator==(const Tensor& a, double b);
NORMNET_API Tensor operator!=(const Tensor& a, double b);
NORMNET_API Tensor operator<(const Tensor& a, double b);
NORMNET_API Tensor operator<=(const Tensor& a, double b);
NORMNET_API Tensor operator>(const Tensor& a, double b);
NORMNET_API Tensor operator>=(const Tensor& a, double b);
NORMNET_API Tensor operator==(double a, const Tensor& b);
NORMNET_API Tensor operator!=(double a, const Tensor& b);
NORMNET_API Tensor operator<(double a, const Tensor& b);
NORMNET_API Tensor operator<=(double a, const Tensor& b);
NORMNET_API Tensor operator>(double a, const Tensor& b);
NORMNET_API Tensor operator>=(double a, const Tensor& b);
/// True when a and b have the same shape and equal elements (torch.equal; NaN is unequal to
/// itself; dtypes compared as eq compares them).
NORMNET_API bool equal(const Tensor& a, const Tensor& b);
/// Masks of NaN, of +-inf, and of finite elements (integer tensors: never NaN or inf).
NORMNET_API Tensor isnan(const Tensor& x);
NORMNET_API Tensor isinf(const Tensor& x);
NORMNET_API Tensor isfinite(const Tensor& x);
/// Logical ops on any dtype (nonzero is true), broadcasting; bool results.
NORMNET_API Tensor logical_not(const Tensor& x);
NORMNET_API Tensor logical_and(const Tensor& a, const Tensor& b);
NORMNET_API Tensor logical_or(const Tensor& a, const Tensor& b);
NORMNET_API Tensor logical_xor(const Tensor& a, const Tensor& b);
/// ~mask, mask & mask, mask | mask, mask ^ mask, for bool tensors only.
NORMNET_API Tensor operator~(const Tensor& a);
NORMNET_API Tensor operator&(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator|(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator^(const Tensor& a, const Tensor& b);
/// condition ? a : b elementwise, the three broadcast together; condition is a bool tensor, a and
/// b share a dtype. Differentiable in a and b.
NORMNET_API Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
NORMNET_API Tensor where(const Tensor& condition, const Tensor& a, double b);
NORMNET_API Tensor where(const Tensor& condition, double a, const Tensor& b);
/// x with value where mask (bool) is true, x and mask broadcast together (as torch); differentiable in x.
NORMNET_API Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// ---- reduce.cpp, minmax.cpp, sort.cpp: reductions ------------------------------------------------
// dims: the dimensions to reduce (negative count from the end); empty means all of them. keepdim
// keeps them as size 1.
/// Sum of all elements -> []. float32 stays float32; int64 and bool add up to int64 (as torch).
NORMNET_API Tensor sum(const Tensor& x);
/// Mean of all elements -> [] (nan for an empty tensor, as torch). int64 and bool inputs give a
/// float32 mean (torch refuses them; normnet takes them so a mask's mean is its fraction of trues).
NORMNET_API Tensor mean(const Tensor& x);
/// Sum over the dimensions `dims` (all when empty), keeping them as size 1 when keepdim.
NORMNET_API Tensor sum(const Tensor& x, const Dims& dims, bool keepdim = false);
/// Mean over the dimensions `dims` (all when empty), keeping them as size 1 when keepdim.
NORMNET_API Tensor mean(const Tensor& x, const Dims& dims, bool keepdim = false);
/// Variance Σ(x - mean)² / max(0, N - correction) over dims (N elements each), as torch 2's
/// var(x, dim, correction=1, keepdim); computed in double, two passes.
NORMNET_API Tensor var(const Tensor& x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false);
/// sqrt(var(x, dims, correction, keepdim)).
NORMNET_API Tensor std(const Tensor& x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false);
/// torch's var(x, unbiased) and var(x, dims, unbiased, keepdim): unbiased true is correction 1,
/// false is 0. (A template on exactly bool, so var(x, dims, 2) still means correction 2.)
template <std::same_as<bool> B>
Tensor var(const Tensor& x, B unbiased) {
    return var(x, {}, unbiased ? 1.0 : 0.0);
}
template <std::same_as<bool> B>
Tensor var(const Tensor& x, const Dims& dims, B unbiased, bool keepdim = false) {
    return var(x, dims, unbiased ? 1.0 : 0.0, keepdim);
}
template <std::same_as<bool> B>
Tensor std(const Tensor& x, B unbiased) {
    return std(x, {}, unbiased ? 1.0 : 0.0);
}
template <std::same_as<bool> B>
Tensor std(const Tensor& x, const Dims& dims, B unbiased, bool keepdim = false) {
    return std(x, dims, unbiased ? 1.0 : 0.0, keepdim);
}
/// log Σ exp(x) over dims, stable (the largest element is taken out first); -inf for no elements.
NORMNET_API Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim = false);
/// The vector p-norm over dims (all when empty): (Σ |x|^p)^(1/p); p = 2 (default), 1, any p,
/// inf (max |x|), -inf (min |x|), 0 (the count of nonzeros), as torch.norm / linalg.vector_norm.
/// A negative p over an empty dim throws, as linalg.vector_norm (torch 1.13's norm gives 0).
NORMNET_API Tensor norm(const Tensor& x, double p = 2.0, const Dims& dims = {}, bool keepdim = false);
/// norm(x, "fro", dims, keepdim): the Frobenius norm (p = 2) over at most two dims (all when empty).
NORMNET_API Tensor norm(const Tensor& x, std::string_view p, const Dims& dims = {}, bool keepdim = false);
/// Running sums along dim (in double for float32, as torch); int64 and bool give int64.
NORMNET_API Tensor cumsum(const Tensor& x, int64_t dim);

// ---- prod.cpp: products -------------------------------------------------------------------------
/// Product of all elements -> [] (1 for none); float32 stays float32 (accumulated in double),
/// int64 and bool multiply up to int64. The gradient is the product of the other elements
/// (zeros included, without dividing by the input).
NORMNET_API Tensor prod(const Tensor& x);
/// Product along dim (torch.prod(x, dim, keepdim)).
NORMNET_API Tensor prod(const Tensor& x, int64_t dim, bool keepdim = false);
/// Running products along dim (in double for float32); int64 and bool give int64.
NORMNET_API Tensor cumprod(const Tensor& x, int64_t dim);

// ---- sort.cpp: sorting (topk is above) ---------------------------------------------------------
/// (values, int64 indices) of x sorted along dim, ascending (NaN last) or descending (NaN first),
/// as torch.sort; stable (ties keep their order) whether asked or not.
NORMNET_API std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
/// The indices of sort(x, dim, descending).
NORMNET_API Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);

// ---- compare.cpp: logical reductions -----------------------------------------------------------
/// Whether every element is nonzero (NaN is) -> bool [], as torch.all; any dtype.
NORMNET_API Tensor all(const Tensor& x);
/// Whether every element along dim is nonzero -> bool.
NORMNET_API Tensor all(const Tensor& x, int64_t dim, bool keepdim = false);
/// Whether some element is nonzero -> bool [], as torch.any.
NORMNET_API Tensor any(const Tensor& x);
/// Whether some element along dim is nonzero -> bool.
NORMNET_API Tensor any(const Tensor& x, int64_t dim, bool keepdim = false);
/// Largest element over dims (all when empty); gradient shared evenly by tied elements. The
/// max/min family takes float32, int64 and bool tensors (argmax and argmin: not bool), as torch.
NORMNET_API Tensor amax(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
/// Smallest element over dims (all when empty); gradient shared evenly by tied elements.
NORMNET_API Tensor amin(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
/// Largest element of x -> [] (torch.max(x)); NaN if any element is NaN.
NORMNET_API Tensor max(const Tensor& x);
/// Smallest element of x -> [].
NORMNET_API Tensor min(const Tensor& x);
/// (values, int64 indices) of the largest elements along dim, as torch.max(x, dim):
/// `auto [values, indices] = max(x, 1);`. Ties: the first index; the gradient goes to it.
NORMNET_API std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
/// (values, int64 indices) of the smallest elements along dim.
NORMNET_API std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
/// int64 index of the largest element along dim, or in the flattened tensor without one (then
/// keepdim gives all dims size 1, as torch).
NORMNET_API Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
/// int64 index of the smallest element along dim, or in the flattened tensor without one.
NORMNET_API Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
/// (values, int64 indices) of the k largest (largest = false: smallest) elements along dim, in
/// order (always sorted; NaN counts as largest; ties: the lower index first). A 0-d x gives itself
/// and index 0 for k 0 or 1, as torch.
NORMNET_API std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                            bool sorted = true);

// ---- shape.cpp: views and copies of a tensor's layout ------------------------------------------
/// The tensors given to cat and stack: a braced list {a, b, c}, a std::vector<Tensor> or a span
/// (as libtorch's TensorList). It refers to them only during the call.
class TensorList {
public:
    TensorList(std::initializer_list<Tensor> list) : span_(list.begin(), list.size()) {}  // NOLINT: implicit
    TensorList(const std::vector<Tensor>& tensors) : span_(tensors) {}                   // NOLINT: implicit
    TensorList(std::span<const Tensor> tensors) : span_(tensors) {}                     // NOLINT: implicit
    size_t size() const { return span_.size(); }
    bool empty() const { return span_.empty(); }
    const Tensor& operator[](size_t i) const { return span_[i]; }
    const Tensor* begin() const { return span_.data(); }
    const Tensor* end() const { return span_.data() + span_.size(); }
    std::span<const Tensor> span() const { return span_; }

private:
    std::span<const Tensor> span_;
};
/// The tensors joined along dim (same dtype; equal sizes except along dim; 1-D empty tensors are
/// skipped, as torch's legacy rule).
NORMNET_API Tensor cat(TensorList tensors, int64_t dim = 0);
/// The tensors (all the same shape) joined along a new dimension dim.
NORMNET_API Tensor stack(TensorList tensors, int64_t dim = 0);
/// The functional forms of the Tensor methods of the same names.
NORMNET_API Tensor reshape(const Tensor& x, const Shape& shape);
NORMNET_API Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
NORMNET_API Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes);
NORMNET_API Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
NORMNET_API Tensor permute(const Tensor& x, const Dims& dims);
NORMNET_API Tensor unsqueeze(const Tensor& x, int64_t dim);
NORMNET_API Tensor squeeze(const Tensor& x);
NORMNET_API Tensor squeeze(const Tensor& x, int64_t dim);
NORMNET_API Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
NORMNET_API Tensor select(const Tensor& x, int64_t dim, int64_t index);
NORMNET_API std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
NORMNET_API std::vector<Tensor> split_with_sizes(const Tensor& x, const std::vector<int64_t>& split_sizes,
                                                 int64_t dim = 0);
NORMNET_API std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
NORMNET_API std::vector<Tensor> unbind(const Tensor& x, int64_t dim = 0);
/// The lower (tril) or upper (triu) triangle of the last two dims, the rest zeroed: element (i, j)
/// is kept where j - i <= diagonal (tril) or j - i >= diagonal (triu). Any dtype (a composition
/// through where).
NORMNET_API Tensor tril(const Tensor& x, int64_t diagonal = 0);
NORMNET_API Tensor triu(const Tensor& x, int64_t diagonal = 0);

// ---- pad.cpp: copies that pick each element by an index map per dimension --------------------
/// A copy with the elements of each of dims in reverse order (torch.flip; float32).
NORMNET_API Tensor flip(const Tensor& x, const Dims& dims);
/// Options of pad (torch::nn::functional::PadFuncOptions).
struct PadFuncOptions {
    using Self = PadFuncOptions;
    NORMNET_ARG(std::vector<int64_t>, pad){};        // (left, right) of the last dim, then of the one before, ...
    NORMNET_ARG(std::string, mode) = "constant";  // "constant", "reflect" or "replicate" ("circular" is not implemented)
    NORMNET_ARG(double, value) = 0.0;             // the constant mode's fill
};
/// x padded as torch.nn.functional.pad: padding holds (left, right) sizes for the last dim, then
/// the one before it, ...; negative sizes crop. "constant" fills with value (any rank);
/// "reflect" mirrors without repeating the edge and "replicate" repeats it, over the last 1-3
/// dims of an input with one or two leading (batch, channel) dims, as torch.
NORMNET_API Tensor pad(const Tensor& x, const std::vector<int64_t>& padding, std::string_view mode = "constant",
                       double value = 0.0);
NORMNET_API Tensor pad(const Tensor& x, const PadFuncOptions& options);

// ---- einsum.cpp: Einstein summation, composed of sum, permute, reshape and matmul ------------
/// torch.einsum: the operands' dims named by letters (one "..." per operand for the unnamed
/// ones), summed over the letters the output ("->" ...; without it, the letters used once, in
/// alphabetical order) leaves out, e.g. "ij,jk->ik", "bij,bjk->bik", "bhqd,bhkd->bhqk", "i,i->",
/// "i,j->ij", "ij->ji", "...ij->...ji", "ij,j". Operands are contracted left to right through
/// batched matmuls. A subscript repeated within one operand (a diagonal, "ii->i") is refused.
NORMNET_API Tensor einsum(std::string_view equation, TensorList operands);

// ---- index.cpp: indexing by int64 index tensors -----------------------------------------------
/// The entries index[i] (a 1-D int64 tensor) of dimension dim, copied.
NORMNET_API Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/// Values of x along dim at the positions index gives (int64, as many dims as x, sizes no larger
/// except along dim): out[i][j] = x[index[i][j]][j] for dim 0; out has index's shape.
NORMNET_API Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/// A copy of x with src added at the positions index gives along dim: out[index[i][j]][j] +=
/// src[i][j] for dim 0. Differentiable in x and src (src's gradient is 0 beyond index's shape).
NORMNET_API Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/// Rows of weight [num_embeddings, embedding_dim] at int64 indices of any shape -> [*indices, dim]
/// (torch::nn::functional::embedding); the row padding_idx gets no gradient.
NORMNET_API Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt);
/// int64 indices -> int64 [*indices, num_classes] with a 1 at each index; num_classes -1: max + 1.
NORMNET_API Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);

// ---- loss.cpp, loss_elementwise.cpp: losses with PyTorch's options ---------------------------
// (log_softmax is in activation.cpp's section.)

/// How a loss reduces its per-element values (torch::kNone, torch::kMean, torch::kSum).
enum class Reduction : uint8_t { none, mean, sum };
inline constexpr Reduction kNone = Reduction::none;
inline constexpr Reduction kMean = Reduction::mean;
inline constexpr Reduction kSum = Reduction::sum;

/// Options of nll_loss and NLLLoss (torch::nn::NLLLossOptions), in libtorch's order, e.g.
/// nll_loss(logp, target, {.ignore_index = 0, .reduction = kSum}).
struct NLLLossOptions {
    using Self = NLLLossOptions;
    NORMNET_ARG(Tensor, weight) = {};           // per-class weights [C], or undefined (all 1); not differentiated
    NORMNET_ARG(int64_t, ignore_index) = -100;  // targets equal to it add nothing and do not count in the mean
    NORMNET_ARG(Reduction, reduction) = kMean;  // mean: sum of weighted losses / sum of the weights of the targets
};
using NLLLossFuncOptions = NLLLossOptions;

/// Options of cross_entropy and CrossEntropyLoss (torch::nn::CrossEntropyLossOptions).
struct CrossEntropyLossOptions {
    using Self = CrossEntropyLossOptions;
    NORMNET_ARG(Tensor, weight) = {};            // per-class weights [C], or undefined; not differentiated
    NORMNET_ARG(int64_t, ignore_index) = -100;   // class-index targets only
    NORMNET_ARG(Reduction, reduction) = kMean;
    NORMNET_ARG(double, label_smoothing) = 0.0;  // in [0, 1]: the target is mixed with the uniform distribution
};
using CrossEntropyFuncOptions = CrossEntropyLossOptions;

/// Options of binary_cross_entropy and BCELoss (torch::nn::BCELossOptions).
struct BCELossOptions {
    using Self = BCELossOptions;
    NORMNET_ARG(Tensor, weight) = {};  // broadcast to the input's shape; not differentiated
    NORMNET_ARG(Reduction, reduction) = kMean;
};
using BinaryCrossEntropyFuncOptions = BCELossOptions;

/// Options of binary_cross_entropy_with_logits and BCEWithLogitsLoss (torch::nn::BCEWithLogitsLossOptions).
struct BCEWithLogitsLossOptions {
    using Self = BCEWithLogitsLossOptions;
    NORMNET_ARG(Tensor, weight) = {};  // broadcast to the input's shape; not differentiated
    NORMNET_ARG(Reduction, reduction) = kMean;
    NORMNET_ARG(Tensor, pos_weight) = {};  // weight of the positive term, broadcast to the input ([C] for [N, C]); not differentiated
};
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;

/// Options of l1_loss and L1Loss; of mse_loss and MSELoss.
struct L1LossOptions {
    using Self = L1LossOptions;
    NORMNET_ARG(Reduction, reduction) = kMean;
};
using L1LossFuncOptions = L1LossOptions;
struct MSELossOptions {
    using Self = MSELossOptions;
    NORMNET_ARG(Reduction, reduction) = kMean;
};
using MSELossFuncOptions = MSELossOptions;

/// Options of smooth_l1_loss and SmoothL1Loss: quadratic below beta (>= 0; 0 is l1_loss).
struct SmoothL1LossOptions {
    using Self = SmoothL1LossOptions;
    NORMNET_ARG(Reduction, reduction) = kMean;
    NORMNET_ARG(double, beta) = 1.0;
};
using SmoothL1LossFuncOptions = SmoothL1LossOptions;

/// Options of huber_loss and HuberLoss: quadratic below delta (> 0), linear with slope delta above.
struct HuberLossOptions {
    using Self = HuberLossOptions;
    NORMNET_ARG(Reduction, reduction) = kMean;
    NORMNET_ARG(double, delta) = 1.0;
};
using HuberLossFuncOptions = HuberLossOptions;

/// The batch-mean reduction of kl_div: the sum divided by the batch size (input's dim 0).
struct BatchMean {};
inline constexpr BatchMean kBatchMean{};
/// kl_div's reduction: one of the Reductions, or kBatchMean.
struct KLDivReduction {
    Reduction reduction = kMean;
    bool batchmean = false;
    constexpr KLDivReduction(Reduction r) : reduction(r) {}                   // NOLINT: implicit on purpose
    constexpr KLDivReduction(BatchMean) : reduction(kSum), batchmean(true) {}  // NOLINT
};
/// Options of kl_div and KLDivLoss (torch::nn::KLDivLossOptions).
struct KLDivLossOptions {
    using Self = KLDivLossOptions;
    NORMNET_ARG(KLDivReduction, reduction) = kMean;  // kMean averages over every element (torch's default); kBatchMean
                                       // is the divergence per sample
    NORMNET_ARG(bool, log_target) = false;           // the target is given as log-probabilities
};
using KLDivFuncOptions = KLDivLossOptions;

/// The negative log-likelihood of class indices: input of log-probabilities [N, C], [N, C, d1, ...]
/// or [C]; target int64 [N], [N, d1, ...] or [] with values in [0, C) or ignore_index.
/// loss = -weight[t] * input[t]; mean divides by the summed weights of the counted targets (nan
/// when there are none, as torch).
NORMNET_API Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options = {});
/// log_softmax over the class dimension (1, or 0 for an unbatched [C] input) and nll_loss, fused:
/// one pass forward saving each position's max and log-sum-exp, softmax - target backward.
/// target is either class indices (int64, shaped as for nll_loss) or class probabilities
/// (float32, the input's shape; differentiable). Label smoothing, weights and reductions as
/// torch 1.13; accurate to float32 rounding for logits of +-1e4.
NORMNET_API Tensor cross_entropy(const Tensor& input, const Tensor& target,
                                 const CrossEntropyFuncOptions& options = {});
/// cross_entropy(input, target, {.label_smoothing = label_smoothing}).
NORMNET_API Tensor cross_entropy(const Tensor& input, const Tensor& target, float label_smoothing);
/// How many rows of logits [N, C] have their largest value at the target class (ties: first);
/// targets an int64 tensor [N].
NORMNET_API int64_t count_correct(const Tensor& logits, const Tensor& targets);

// The elementwise losses take input and target of the same shape (torch broadcasts them with a
// warning that the result is likely wrong; normnet refuses) and are differentiable in both.
/// -weight * (target * log(input) + (1 - target) * log(1 - input)), each log clamped at -100 as
/// torch; input in [0, 1].
NORMNET_API Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyFuncOptions& options = {});
/// binary_cross_entropy(sigmoid(input), target) with pos_weight on the positive term, computed
/// stably: (1 - target) * input + (1 + (pos_weight - 1) * target) * softplus(-input).
NORMNET_API Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                                    const BinaryCrossEntropyWithLogitsFuncOptions& options = {});
/// |input - target|.
NORMNET_API Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options = {});
/// (input - target)^2; empty tensors give nan under the mean, as torch.
NORMNET_API Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options = {});
/// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, for d = input - target.
NORMNET_API Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                                  const SmoothL1LossFuncOptions& options = {});
/// 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), for d = input - target.
NORMNET_API Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options = {});
/// The Kullback-Leibler divergence of input (log-probabilities) from target, elementwise
/// target * (log(target) - input), 0 where target is 0 (or, with log_target, e^target (target -
/// input)); input and target broadcast (as torch's kl_div, unlike the losses above). A composition.
NORMNET_API Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options = {});

// ---- dropout.cpp ------------------------------------------------------------------------------
/// In training, zeroes each element with probability p and scales the others by 1 / (1 - p), as
/// torch.nn.functional.dropout; the mask comes from `gen` and is the same for the same seed
/// whatever the thread count. Returns x itself when not training, when p is 0 or x is empty.
NORMNET_API Tensor dropout(const Tensor& x, double p = 0.5, bool training = true,
                           Generator& gen = default_generator());
/// Dropout of whole channels: in training, each (sample, channel) slice x[n, c] is zeroed with
/// probability p and the others scaled by 1 / (1 - p) (torch.feature_dropout; x has >= 2 dims).
NORMNET_API Tensor feature_dropout(const Tensor& x, double p = 0.5, bool training = true,
                                   Generator& gen = default_generator());
/// feature_dropout of [N, C, L], or of an unbatched [C, L] (torch.nn.functional.dropout1d).
NORMNET_API Tensor dropout1d(const Tensor& x, double p = 0.5, bool training = true,
                             Generator& gen = default_generator());
/// feature_dropout of [N, C, H, W] (torch.nn.functional.dropout2d; as torch 1.13's Python, an
/// input of other rank is read as [N, C, ...] too, a 3-D one as [N, C, L]).
NORMNET_API Tensor dropout2d(const Tensor& x, double p = 0.5, bool training = true,
                             Generator& gen = default_generator());
/// feature_dropout of [N, C, D, H, W], or of an unbatched [C, D, H, W] (torch.nn.functional.dropout3d).
NORMNET_API Tensor dropout3d(const Tensor& x, double p = 0.5, bool training = true,
                             Generator& gen = default_generator());

// ---- random.cpp ----------------------------------------------------------------------------
/// 1 with probability p (each element of `probabilities`, in [0, 1]), else 0: float32 of its shape,
/// as torch.bernoulli; not differentiable. From `gen`, the same on any thread count.
NORMNET_API Tensor bernoulli(const Tensor& probabilities, Generator& gen = default_generator());
/// The same with one probability p for every element, shaped as x (torch.bernoulli(x, p)).
NORMNET_API Tensor bernoulli(const Tensor& x, double p, Generator& gen = default_generator());

// ---- norm.cpp ---------------------------------------------------------------------------------
/// Layer normalisation over the trailing dimensions given by normalized_shape: per sample,
/// mean and biased variance, (x - mean) / sqrt(var + eps) * weight + bias. weight and bias
/// (shape normalized_shape) may be undefined.
NORMNET_API Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                              const Tensor& bias = {}, double eps = 1e-5);
/// Batch normalisation of x [N, C, *] per channel C. In training it uses the batch's mean and
/// biased variance and, when running_mean/var are given, updates them in place: running =
/// (1 - momentum) * running + momentum * batch, with the unbiased variance for running_var;
/// momentum empty means a cumulative average over `num_batches_tracked` batches (PyTorch's
/// momentum=None), which the caller increments first. In evaluation (training false) it uses
/// running_mean and running_var, which must then be given (as torch).
NORMNET_API Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                              const Tensor& weight, const Tensor& bias, bool training,
                              std::optional<double> momentum = 0.1, double eps = 1e-5,
                              int64_t num_batches_tracked = 0);
/// relu(max_pool2d(batch_norm(x, ...), 2)) for x [N, C, H, W] in training (a CNN block's norm ->
/// MaxPool2d(2) -> ReLU) as one op: when 2x2 windows tile the planes (H, W even, W >= 8) the
/// normalised values are pooled as they are made and never stored, and the backward reads the
/// pooled gradient; otherwise (and in evaluation) the three ops in turn. Same arguments and
/// running-statistics update as batch_norm.
NORMNET_API Tensor batch_norm_max_pool2d_relu(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                                              const Tensor& weight, const Tensor& bias, bool training,
                                              std::optional<double> momentum = 0.1, double eps = 1e-5,
                                              int64_t num_batches_tracked = 0);
/// Root-mean-square normalisation over the trailing normalized_shape dimensions:
/// x / sqrt(mean(x^2) + eps) * weight; eps empty means float32's machine epsilon (as PyTorch).
NORMNET_API Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                            std::optional<double> eps = std::nullopt);
/// Group normalisation of x [N, C, *] (Wu and He, 2018): the C channels of each sample fall
/// into num_groups groups of C / num_groups consecutive channels, each normalised over its
/// channels and trailing dimensions with its own mean and biased variance, then scaled and
/// shifted per channel by weight [C] and bias [C] (either may be undefined). num_groups 1 is
/// LayerNorm over [C, *] with a per-channel affine, num_groups C is InstanceNorm.
NORMNET_API Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                              double eps = 1e-5);
/// relu(max_pool2d(group_norm(x, ...), 2)) for x [N, C, H, W] as one op, as
/// batch_norm_max_pool2d_relu (num_groups C: instance_norm without running statistics).
NORMNET_API Tensor group_norm_max_pool2d_relu(const Tensor& x, int64_t num_groups, const Tensor& weight = {},
                                              const Tensor& bias = {}, double eps = 1e-5);
/// Instance normalisation of x [N, C, *] (as torch.nn.functional.instance_norm): with
/// use_input_stats, each (sample, channel) is normalised over its trailing dimensions (group_norm
/// with C groups) and, when running_mean/var are given, they are updated in place with the
/// batch's average of the instances' mean and unbiased variance; without, the running
/// statistics are used (which must then be given). weight, bias [C] may be undefined.
NORMNET_API Tensor instance_norm(const Tensor& x, const Tensor& running_mean = {}, const Tensor& running_var = {},
                                 const Tensor& weight = {}, const Tensor& bias = {}, bool use_input_stats = true,
                                 double momentum = 0.1, double eps = 1e-5);

// ---- conv.cpp: 2-D convolution through OpenBLAS (im2col lowering) -----------------------------
/// A (height, width) pair of sizes, as torch's ExpandingArray<2>: one value for both (2) or a
/// pair ({3, 2}). Default-constructed means "not given" (pooling's stride is then its kernel size).
struct Size2 {
    int64_t h = 0, w = 0;
    bool given = false;   // false for Size2{}
    bool single = false;  // given as one value: printed as 2, not (2, 2), as PyTorch keeps what it was given
    constexpr Size2() = default;
    template <std::integral T>
    constexpr Size2(T v) : h(static_cast<int64_t>(v)), w(static_cast<int64_t>(v)), given(true), single(true) {}  // NOLINT
    /// {h, w}, or {v} for both; throws normnet::Error for another count.
    NORMNET_API Size2(std::initializer_list<int64_t> v);  // NOLINT: implicit, as IntArrayRef
};

/// conv2d's padding: sizes (as Size2: 1, {1, 2}) or "same" / "valid", as torch.
struct Conv2dPadding {
    enum class Mode : uint8_t { sizes, same, valid };
    Mode mode = Mode::sizes;
    Size2 size = 0;
    template <std::integral T>
    constexpr Conv2dPadding(T v) : size(v) {}  // NOLINT: implicit on purpose
    Conv2dPadding(std::initializer_list<int64_t> v) : size(v) {}  // NOLINT
    Conv2dPadding(Size2 s) : size(s) {}                            // NOLINT
    /// "same" (output as large as the input; stride 1 only) or "valid" (no padding).
    NORMNET_API Conv2dPadding(std::string_view mode);              // NOLINT
    Conv2dPadding(const char* mode) : Conv2dPadding(std::string_view(mode)) {}        // NOLINT
    Conv2dPadding(const std::string& mode) : Conv2dPadding(std::string_view(mode)) {}  // NOLINT
};

/// 2-D cross-correlation of input [N, C, H, W] (or unbatched [C, H, W]) with weight
/// [OC, C / groups, KH, KW], plus bias [OC] (may be undefined): output [N, OC, OH, OW] with
/// OH = (H + 2 * pad - dilation * (KH - 1) - 1) / stride + 1 (likewise OW), zero padding. As
/// torch::conv2d, including padding "same" (torch's split: the odd one at the bottom/right).
NORMNET_API Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, Size2 stride = 1,
                          Conv2dPadding padding = 0, Size2 dilation = 1, int64_t groups = 1);
/// conv1d's padding: a size or "same" / "valid", as torch.
struct Conv1dPadding {
    Conv2dPadding::Mode mode = Conv2dPadding::Mode::sizes;
    int64_t size = 0;
    template <std::integral T>
    constexpr Conv1dPadding(T v) : size(static_cast<int64_t>(v)) {}  // NOLINT: implicit on purpose
    NORMNET_API Conv1dPadding(std::string_view mode);                // NOLINT
    Conv1dPadding(const char* mode) : Conv1dPadding(std::string_view(mode)) {}        // NOLINT
    Conv1dPadding(const std::string& mode) : Conv1dPadding(std::string_view(mode)) {}  // NOLINT
};
/// 1-D cross-correlation of input [N, C, L] (or unbatched [C, L]) with weight [OC, C / groups, K],
/// plus bias [OC]: output [N, OC, OL], as torch::conv1d. Runs as conv2d on [N, C, 1, L] (the same
/// lowering and products; nothing is copied for the extra dim).
NORMNET_API Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, int64_t stride = 1,
                          Conv1dPadding padding = 0, int64_t dilation = 1, int64_t groups = 1);
/// The transposed 2-D convolution (torch::conv_transpose2d, the gradient of conv2d with respect to
/// its input): input [N, C, H, W] (or [C, H, W]), weight [C, OC / groups, KH, KW], bias [OC]:
/// output [N, OC, OH, OW], OH = (H - 1) * stride - 2 * padding + dilation * (KH - 1) +
/// output_padding + 1 (likewise OW). output_padding must be smaller than the stride or the dilation.
NORMNET_API Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                                    Size2 stride = 1, Size2 padding = 0, Size2 output_padding = 0,
                                    int64_t groups = 1, Size2 dilation = 1);

// ---- pooling.cpp: max, average and adaptive average pooling over [N, C, H, W] -----------------
/// Maximum over each window of input [N, C, H, W] (or [C, H, W]); stride not given means
/// stride = kernel_size; padding (at most half the kernel) counts as -inf; ceil_mode rounds the
/// output size up (a last window must start inside the input or its left padding), as torch.
/// NaN propagates. The gradient goes to the first maximum of each window in row-major order.
NORMNET_API Tensor max_pool2d(const Tensor& input, Size2 kernel_size, Size2 stride = {}, Size2 padding = 0,
                              Size2 dilation = 1, bool ceil_mode = false);
/// max_pool2d and the int64 index of each maximum within its input plane (h * W + w), as torch.
NORMNET_API std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Size2 kernel_size,
                                                               Size2 stride = {}, Size2 padding = 0,
                                                               Size2 dilation = 1, bool ceil_mode = false);
/// Mean over each window of input [N, C, H, W] (or [C, H, W]), as torch: count_include_pad
/// divides by the window's size including padding (but never beyond the padded input), else by
/// its elements inside the input; divisor_override, when given (nonzero), divides by it instead.
NORMNET_API Tensor avg_pool2d(const Tensor& input, Size2 kernel_size, Size2 stride = {}, Size2 padding = 0,
                              bool ceil_mode = false, bool count_include_pad = true,
                              std::optional<int64_t> divisor_override = std::nullopt);
/// Mean over output_size (OH, OW) windows covering input [N, C, H, W] (or [C, H, W]): window i
/// spans [floor(i * H / OH), ceil((i + 1) * H / OH)), as torch.
NORMNET_API Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size);
/// Maximum over output_size (OH, OW) adaptive windows (those of adaptive_avg_pool2d) of input
/// [N, C, H, W] (or [C, H, W]); NaN propagates; the gradient goes to each window's maximum (the
/// first in row-major order, the last NaN).
NORMNET_API Tensor adaptive_max_pool2d(const Tensor& input, Size2 output_size);
/// adaptive_max_pool2d and the int64 index of each maximum within its input plane (h * W + w).
NORMNET_API std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, Size2 output_size);
// The 1-D pools run as their 2-D forms on [N, C, 1, L] views (exact: a window of height 1).
/// max_pool2d over the last dim of [N, C, L] (or [C, L]), as torch::max_pool1d.
NORMNET_API Tensor max_pool1d(const Tensor& input, int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
                              int64_t padding = 0, int64_t dilation = 1, bool ceil_mode = false);
/// max_pool1d and the int64 index of each maximum along L.
NORMNET_API std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, int64_t kernel_size,
                                                               std::optional<int64_t> stride = std::nullopt,
                                                               int64_t padding = 0, int64_t dilation = 1,
                                                               bool ceil_mode = false);
/// avg_pool2d over the last dim of [N, C, L] (or [C, L]), as torch::avg_pool1d.
NORMNET_API Tensor avg_pool1d(const Tensor& input, int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
                              int64_t padding = 0, bool ceil_mode = false, bool count_include_pad = true);
/// adaptive_avg_pool2d over the last dim of [N, C, L] (or [C, L]).
NORMNET_API Tensor adaptive_avg_pool1d(const Tensor& input, int64_t output_size);
/// adaptive_max_pool2d over the last dim of [N, C, L] (or [C, L]).
NORMNET_API Tensor adaptive_max_pool1d(const Tensor& input, int64_t output_size);

// ---- upsample.cpp: interpolate ------------------------------------------------------------------
/// Options of interpolate (torch::nn::functional::InterpolateFuncOptions): the output's spatial
/// size or the factor to scale it by (exactly one; one value stands for every spatial dim).
struct InterpolateFuncOptions {
    using Self = InterpolateFuncOptions;
    NORMNET_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
    NORMNET_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
    NORMNET_ARG(std::string, mode) = "nearest";  // "nearest" (3-5-D input), "linear" (3-D), "bilinear" (4-D)
    NORMNET_ARG(std::optional<bool>, align_corners) = std::nullopt;  // linear modes only; unset is false
    /// With a scale_factor: true interpolates by the output size computed from it (in / out),
    /// unset or false by the factor itself (torch's default).
    NORMNET_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
};
/// The spatial dims of input [N, C, *] resized as torch.nn.functional.interpolate: nearest
/// neighbour (torch's legacy "nearest": source floor(o * in / out)), linear or bilinear, with or
/// without align_corners; differentiable.
NORMNET_API Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options);

// ---- rnn.cpp: recurrent layers, fused over the whole sequence ---------------------------------
/// One LSTM layer (torch.nn.LSTM's cell, gates i, f, g, o) over a batch-first sequence input
/// [N, T, I]: w_ih [4H, I], w_hh [4H, H], biases [4H] (either may be undefined), initial states
/// h0, c0 [N, H] (undefined: zeros). Returns the hidden states [N, T, H]. With `lengths` (int64
/// [N], each in [1, T]) sample n runs lengths[n] steps: later steps output zeros, keep its state
/// and take no gradient. When c_n is given it receives the final cell states [N, H] (each
/// sample's after its last step; differentiable, as the output; the final hidden states are
/// last_step(output, lengths)).
NORMNET_API Tensor lstm_layer(const Tensor& input, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                              const Tensor& w_hh, const Tensor& b_ih = {}, const Tensor& b_hh = {},
                              const Tensor& lengths = {}, Tensor* c_n = nullptr);
/// One layer of Ba, Kiros and Hinton's LayerNorm LSTM (2016, eq. 20-22) over a batch-first
/// sequence, as lstm_layer: gates = layer_norm(x W_ih^T; ln_ih_weight, ln_ih_bias) +
/// layer_norm(h W_hh^T; ln_hh_weight) over the 4H gates (i, f, g, o), c' = f c + i g,
/// h' = o tanh(layer_norm(c'; ln_c_weight, ln_c_bias)). Weights [4H] ([H] for ln_c); the biases
/// may be undefined. c_n as lstm_layer's.
NORMNET_API Tensor layer_norm_lstm_layer(const Tensor& input, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                                         const Tensor& w_hh, const Tensor& ln_ih_weight, const Tensor& ln_ih_bias,
                                         const Tensor& ln_hh_weight, const Tensor& ln_c_weight,
                                         const Tensor& ln_c_bias, double eps = 1e-5, const Tensor& lengths = {},
                                         Tensor* c_n = nullptr);
/// One GRU layer (torch.nn.GRU's cell, gates r, z, n) over a batch-first sequence, as lstm_layer:
/// w_ih [3H, I], w_hh [3H, H], biases [3H], h0 [N, H].
NORMNET_API Tensor gru_layer(const Tensor& input, const Tensor& h0, const Tensor& w_ih, const Tensor& w_hh,
                             const Tensor& b_ih = {}, const Tensor& b_hh = {}, const Tensor& lengths = {});
/// output [N, T, H] at each sample's last step (lengths[n] - 1, or T - 1 without lengths) -> [N, H].
NORMNET_API Tensor last_step(const Tensor& output, const Tensor& lengths = {});

// ---- attention.cpp ----------------------------------------------------------------------------
/// softmax(query @ key^T * scale + mask) @ value over the last two dimensions (torch's
/// F.scaled_dot_product_attention): query [*, L, E], key [*, S, E], value [*, S, Ev] -> [*, L, Ev].
/// attn_mask broadcasts to [*, L, S]: bool (true = may attend) or float (added to the scores).
/// is_causal masks j > i. scale defaults to 1 / sqrt(E). dropout_p drops attention weights
/// (scaled by 1 / (1 - p)) with random numbers from `generator`.
NORMNET_API Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                                const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                                bool is_causal = false, std::optional<double> scale = std::nullopt,
                                                Generator& generator = default_generator());

}  // namespace normnet

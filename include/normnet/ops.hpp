// Every differentiable function of normnet, declared once: the functional API (as
// torch::nn::functional), grouped by the family file of src/ops/ that defines it with its backward.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "normnet/export.hpp"
#include "normnet/tensor.hpp"

namespace normnet {

/// A list of dimensions, e.g. {0, 2} (negative values count from the end).
using Dims = Shape;

// ---- linear.cpp: matrix products through OpenBLAS ----------------------------------------------
/// a [N, K] @ b [K, M] -> [N, M].
NORMNET_API Tensor matmul(const Tensor& a, const Tensor& b);
/// x [*, in] @ weight[out, in]^T + bias[out] -> [*, out]; weight is stored as in PyTorch.
NORMNET_API Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

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
/// min(max(x, min), max) with either bound optional (at least one given), NaN passing through;
/// the gradient flows where min <= x <= max.
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
/// x with value where mask (bool, broadcast to x's shape) is true; differentiable in x.
NORMNET_API Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// ---- reduce.cpp -------------------------------------------------------------------------------
/// Sum of all elements -> [].
NORMNET_API Tensor sum(const Tensor& x);
/// Mean of all elements -> [] (nan for an empty tensor, as torch).
NORMNET_API Tensor mean(const Tensor& x);
/// Sum over the dimensions `dims` (all when empty), keeping them as size 1 when keepdim.
NORMNET_API Tensor sum(const Tensor& x, const Dims& dims, bool keepdim = false);
/// Mean over the dimensions `dims` (all when empty), keeping them as size 1 when keepdim.
NORMNET_API Tensor mean(const Tensor& x, const Dims& dims, bool keepdim = false);

// ---- loss.cpp ---------------------------------------------------------------------------------
/// Mean over the batch of -log softmax(logits)[target]; logits [N, C], targets an int64 tensor
/// [N] of class indices in [0, C). Fused: one pass forward, softmax - one_hot backward. Accurate
/// to float32 rounding of the result for logits of +-1e4. An empty batch gives nan, as torch.
NORMNET_API Tensor cross_entropy(const Tensor& logits, const Tensor& targets, float label_smoothing = 0.0f);
/// Mean of (input - target)^2 over all elements (same shapes); gradient flows to input and
/// target. Empty tensors give nan, as torch.
NORMNET_API Tensor mse_loss(const Tensor& input, const Tensor& target);
/// How many rows of logits [N, C] have their largest value at the target class (ties: first);
/// targets an int64 tensor [N].
NORMNET_API int64_t count_correct(const Tensor& logits, const Tensor& targets);

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
/// Root-mean-square normalisation over the trailing normalized_shape dimensions:
/// x / sqrt(mean(x^2) + eps) * weight; eps empty means float32's machine epsilon (as PyTorch).
NORMNET_API Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                            std::optional<double> eps = std::nullopt);

}  // namespace normnet

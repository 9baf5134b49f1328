// Every differentiable function of normnet, declared once: the functional API (as
// torch::nn::functional), grouped by the family file of src/ops/ that defines it with its backward.
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

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
/// a + b, elementwise, broadcasting ([2, 3] + [3], [4, 1] + [1, 5], ...).
NORMNET_API Tensor add(const Tensor& a, const Tensor& b);
/// a - b, elementwise, broadcasting.
NORMNET_API Tensor sub(const Tensor& a, const Tensor& b);
/// a * b, elementwise, broadcasting.
NORMNET_API Tensor mul(const Tensor& a, const Tensor& b);
/// a + b for every element.
NORMNET_API Tensor add(const Tensor& a, float b);
/// a * b for every element.
NORMNET_API Tensor mul(const Tensor& a, float b);

/// Operators: add, sub and mul (and their scalar forms) as infix, as on torch::Tensor.
NORMNET_API Tensor operator+(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator-(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator*(const Tensor& a, const Tensor& b);
NORMNET_API Tensor operator+(const Tensor& a, float b);
NORMNET_API Tensor operator-(const Tensor& a, float b);
NORMNET_API Tensor operator*(const Tensor& a, float b);
NORMNET_API Tensor operator*(float a, const Tensor& b);
NORMNET_API Tensor operator-(const Tensor& a);

// ---- activation.cpp ---------------------------------------------------------------------------
/// max(x, 0) elementwise, as torch.relu: NaN and -0.0 pass through.
NORMNET_API Tensor relu(const Tensor& x);

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
/// log(softmax(x)) over the last dimension, computed stably.
NORMNET_API Tensor log_softmax(const Tensor& x, int dim = -1);
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
/// Group normalisation of x [N, C, *] (Wu and He, 2018): the C channels of each sample fall
/// into num_groups groups of C / num_groups consecutive channels, each normalised over its
/// channels and trailing dimensions with its own mean and biased variance, then scaled and
/// shifted per channel by weight [C] and bias [C] (either may be undefined). num_groups 1 is
/// LayerNorm over [C, *] with a per-channel affine, num_groups C is InstanceNorm.
NORMNET_API Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                              double eps = 1e-5);
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

}  // namespace normnet

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

// ---- loss.cpp, loss_elementwise.cpp: losses with PyTorch's options ---------------------------
/// log(softmax(x)) over the last dimension, computed stably.
NORMNET_API Tensor log_softmax(const Tensor& x, int dim = -1);

/// How a loss reduces its per-element values (torch::kNone, torch::kMean, torch::kSum).
enum class Reduction : uint8_t { none, mean, sum };
inline constexpr Reduction kNone = Reduction::none;
inline constexpr Reduction kMean = Reduction::mean;
inline constexpr Reduction kSum = Reduction::sum;

/// Options of nll_loss and NLLLoss (torch::nn::NLLLossOptions), in libtorch's order, e.g.
/// nll_loss(logp, target, {.ignore_index = 0, .reduction = kSum}).
struct NLLLossOptions {
    Tensor weight = {};           // per-class weights [C], or undefined (all 1); not differentiated
    int64_t ignore_index = -100;  // targets equal to it add nothing and do not count in the mean
    Reduction reduction = kMean;  // mean: sum of weighted losses / sum of the weights of the targets
};
using NLLLossFuncOptions = NLLLossOptions;

/// Options of cross_entropy and CrossEntropyLoss (torch::nn::CrossEntropyLossOptions).
struct CrossEntropyLossOptions {
    Tensor weight = {};            // per-class weights [C], or undefined; not differentiated
    int64_t ignore_index = -100;   // class-index targets only
    Reduction reduction = kMean;
    double label_smoothing = 0.0;  // in [0, 1]: the target is mixed with the uniform distribution
};
using CrossEntropyFuncOptions = CrossEntropyLossOptions;

/// Options of binary_cross_entropy and BCELoss (torch::nn::BCELossOptions).
struct BCELossOptions {
    Tensor weight = {};  // broadcast to the input's shape; not differentiated
    Reduction reduction = kMean;
};
using BinaryCrossEntropyFuncOptions = BCELossOptions;

/// Options of binary_cross_entropy_with_logits and BCEWithLogitsLoss (torch::nn::BCEWithLogitsLossOptions).
struct BCEWithLogitsLossOptions {
    Tensor weight = {};  // broadcast to the input's shape; not differentiated
    Reduction reduction = kMean;
    Tensor pos_weight = {};  // weight of the positive term, broadcast to the input ([C] for [N, C]); not differentiated
};
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;

/// Options of l1_loss and L1Loss; of mse_loss and MSELoss.
struct L1LossOptions {
    Reduction reduction = kMean;
};
using L1LossFuncOptions = L1LossOptions;
struct MSELossOptions {
    Reduction reduction = kMean;
};
using MSELossFuncOptions = MSELossOptions;

/// Options of smooth_l1_loss and SmoothL1Loss: quadratic below beta (>= 0; 0 is l1_loss).
struct SmoothL1LossOptions {
    Reduction reduction = kMean;
    double beta = 1.0;
};
using SmoothL1LossFuncOptions = SmoothL1LossOptions;

/// Options of huber_loss and HuberLoss: quadratic below delta (> 0), linear with slope delta above.
struct HuberLossOptions {
    Reduction reduction = kMean;
    double delta = 1.0;
};
using HuberLossFuncOptions = HuberLossOptions;

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

// ---- dropout.cpp ------------------------------------------------------------------------------
/// In training, zeroes each element with probability p and scales the others by 1 / (1 - p), as
/// torch.nn.functional.dropout; the mask comes from `gen` and is the same for the same seed
/// whatever the thread count. Returns x itself when not training, when p is 0 or x is empty.
NORMNET_API Tensor dropout(const Tensor& x, double p = 0.5, bool training = true,
                           Generator& gen = default_generator());

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

// ---- rnn.cpp: recurrent layers, fused over the whole sequence ---------------------------------
/// One LSTM layer (torch.nn.LSTM's cell, gates i, f, g, o) over a batch-first sequence input
/// [N, T, I]: w_ih [4H, I], w_hh [4H, H], biases [4H] (either may be undefined), initial states
/// h0, c0 [N, H] (undefined: zeros). Returns the hidden states [N, T, H]. With `lengths` (int64
/// [N], each in [1, T]) sample n runs lengths[n] steps: later steps output zeros, keep its state
/// and take no gradient. When c_n is given it receives the final cell states [N, H] (not
/// differentiable; the final hidden states are last_step(output, lengths), which is).
NORMNET_API Tensor lstm_layer(const Tensor& input, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                              const Tensor& w_hh, const Tensor& b_ih = {}, const Tensor& b_hh = {},
                              const Tensor& lengths = {}, Tensor* c_n = nullptr);
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
/// (scaled by 1 / (1 - p)) with `generator` (the default generator when null).
NORMNET_API Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                                const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                                bool is_causal = false, std::optional<double> scale = std::nullopt,
                                                Generator* generator = nullptr);

}  // namespace normnet

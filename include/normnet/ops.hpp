// Every differentiable function of normnet, declared once: the functional API (as
// torch::nn::functional), grouped by the family file of src/ops/ that defines it with its backward.
#pragma once

#include <cstdint>
#include <optional>

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

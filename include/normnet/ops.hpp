// Every differentiable function of normnet, declared once: the functional API (as
// torch::nn::functional). Each is defined with its backward in one family file of src/ops/.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "normnet/tensor.hpp"

namespace normnet {

// ---- linear.cpp: matrix products through OpenBLAS ----------------------------------------------
/// a [N, K] @ b [K, M] -> [N, M].
Tensor matmul(const Tensor& a, const Tensor& b);
/// x [*, in] @ weight[out, in]^T + bias[out] -> [*, out]; weight is stored as in PyTorch.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// ---- elementwise.cpp --------------------------------------------------------------------------
// Binary ops take equal shapes, or one operand whose shape is the other's trailing dimensions
// (a bias row [H] against [N, H]), or a one-element tensor.
Tensor add(const Tensor& a, const Tensor& b);
/// a - b, elementwise.
Tensor sub(const Tensor& a, const Tensor& b);
/// a * b, elementwise.
Tensor mul(const Tensor& a, const Tensor& b);
/// a + b for every element.
Tensor add(const Tensor& a, float b);
/// a * b for every element.
Tensor mul(const Tensor& a, float b);
/// max(x, 0), elementwise.
Tensor relu(const Tensor& x);
/// Sum of all elements -> [].
Tensor sum(const Tensor& x);
/// Mean of all elements -> [].
Tensor mean(const Tensor& x);

/// Operators: add, sub and mul (and their scalar forms) as infix, as on torch::Tensor.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, float b);
Tensor operator-(const Tensor& a, float b);
Tensor operator*(const Tensor& a, float b);
Tensor operator*(float a, const Tensor& b);
Tensor operator-(const Tensor& a);

// ---- loss.cpp ---------------------------------------------------------------------------------
/// log(softmax(x)) over the last dimension, computed stably.
Tensor log_softmax(const Tensor& x, int dim = -1);
/// Mean over the batch of -log softmax(logits)[target]; logits [N, C], targets N class indices
/// in [0, C). Fused: one pass forward, softmax - one_hot backward. Stable for logits of +-1e4.
Tensor cross_entropy(const Tensor& logits, std::span<const int64_t> targets, float label_smoothing = 0.0f);
/// Mean of (input - target)^2 over all elements; gradient flows to input and target.
Tensor mse_loss(const Tensor& input, const Tensor& target);
/// How many rows of logits [N, C] have their largest value at the target class (ties: first).
int64_t count_correct(const Tensor& logits, std::span<const int64_t> targets);

// ---- norm.cpp ---------------------------------------------------------------------------------
/// Layer normalisation over the trailing dimensions given by normalized_shape: per sample,
/// mean and biased variance, (x - mean) / sqrt(var + eps) * weight + bias. weight and bias
/// (shape normalized_shape) may be undefined.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
/// Batch normalisation of x [N, C] or [N, C, L] per channel C. In training (or without running
/// statistics) it uses the batch's mean and biased variance and, when running_mean/var are
/// given, updates them in place: running = (1 - momentum) * running + momentum * batch, with
/// the unbiased variance for running_var; momentum empty means a cumulative average over
/// `num_batches_tracked` batches (PyTorch's momentum=None), which the caller increments first.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, std::optional<double> momentum = 0.1, double eps = 1e-5,
                  int64_t num_batches_tracked = 0);
/// Root-mean-square normalisation over the trailing normalized_shape dimensions:
/// x / sqrt(mean(x^2) + eps) * weight; eps empty means float32's machine epsilon (as PyTorch).
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt);

}  // namespace normnet

// Normalisations with their backwards: layer_norm, batch_norm, rms_norm. Each forward saves the
// per-group mean and rstd = 1 / sqrt(var + eps); each backward works group by group, computing
// the input, weight and bias gradients of a group while it is in cache. Statistics accumulate in double
// over two passes (never E[x^2] - E[x]^2), so inputs with a large common offset stay exact.
// Row reductions are vectorised with `omp simd` (-fopenmp-simd: no OpenMP runtime): the lanes'
// partial sums change the summation order, never the thread-count independence.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../parallel.hpp"
#include "normnet/autograd.hpp"
#include "normnet/ops.hpp"

namespace normnet {
namespace detail {

// out: [N, H], mean: [N], rstd: [N], inp: [N, H], weight: [H], bias: [H] (weight, bias may be null)
void layer_norm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                        const float* bias, int64_t N, int64_t H, double eps) {
    for (int64_t n = 0; n < N; ++n) {
        const float* x = inp + n * H;
        float* y = out + n * H;
        double sum = 0.0;
#pragma omp simd reduction(+ : sum)
        for (int64_t i = 0; i < H; ++i) sum += x[i];
        const double m = sum / static_cast<double>(H);
        double sq = 0.0;
#pragma omp simd reduction(+ : sq)
        for (int64_t i = 0; i < H; ++i) {
            const double d = x[i] - m;
            sq += d * d;
        }
        const double s = 1.0 / std::sqrt(sq / static_cast<double>(H) + eps);
#pragma omp simd
        for (int64_t i = 0; i < H; ++i) {
            const float xhat = static_cast<float>((x[i] - m) * s);
            y[i] = (weight ? xhat * weight[i] : xhat) + (bias ? bias[i] : 0.0f);
        }
        mean[n] = static_cast<float>(m);
        rstd[n] = static_cast<float>(s);
    }
}

// dinp: [N, H] += (or = when overwrite_dinp), dweight: [H] +=, dbias: [H] += (each may be null);
// dout: [N, H], inp: [N, H], mean: [N], rstd: [N], weight: [H] (may be null)
void layer_norm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                         const float* mean, const float* rstd, const float* weight, int64_t N, int64_t H,
                         bool overwrite_dinp) {
    for (int64_t n = 0; n < N; ++n) {
        const float* dy = dout + n * H;
        const float* x = inp + n * H;
        const float m = mean[n], s = rstd[n];
        // The two row means that couple every dx of the row to every dy.
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
        for (int64_t i = 0; i < H; ++i) {
            const float xhat = (x[i] - m) * s;
            const float dnorm = weight ? dy[i] * weight[i] : dy[i];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * xhat;
        }
        dnorm_mean /= static_cast<float>(H);
        dnorm_norm_mean /= static_cast<float>(H);
        // One loop per output, each without branches, so that each vectorises (a single loop
        // with the null checks inside stayed scalar: 4% of a batch-128 epoch in perf).
        if (dbias) {
            for (int64_t i = 0; i < H; ++i) dbias[i] += dy[i];
        }
        if (dweight) {
            for (int64_t i = 0; i < H; ++i) dweight[i] += dy[i] * ((x[i] - m) * s);
        }
        if (dinp) {
            float* dx = dinp + n * H;
            const auto dx_at = [=](int64_t i, float dnorm) {
                return (dnorm - dnorm_mean - ((x[i] - m) * s) * dnorm_norm_mean) * s;
            };
            if (weight && overwrite_dinp) {
                for (int64_t i = 0; i < H; ++i) dx[i] = dx_at(i, dy[i] * weight[i]);
            } else if (weight) {
                for (int64_t i = 0; i < H; ++i) dx[i] += dx_at(i, dy[i] * weight[i]);
            } else if (overwrite_dinp) {
                for (int64_t i = 0; i < H; ++i) dx[i] = dx_at(i, dy[i]);
            } else {
                for (int64_t i = 0; i < H; ++i) dx[i] += dx_at(i, dy[i]);
            }
        }
    }
}

// out: [N, H], rstd: [N], inp: [N, H], weight: [H] (may be null)
void rms_norm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N, int64_t H,
                      double eps) {
    for (int64_t n = 0; n < N; ++n) {
        const float* x = inp + n * H;
        float* y = out + n * H;
        double sq = 0.0;
#pragma omp simd reduction(+ : sq)
        for (int64_t i = 0; i < H; ++i) sq += static_cast<double>(x[i]) * x[i];
        const double s = 1.0 / std::sqrt(sq / static_cast<double>(H) + eps);
        for (int64_t i = 0; i < H; ++i) {
            const float xhat = static_cast<float>(x[i] * s);
            y[i] = weight ? xhat * weight[i] : xhat;
        }
        rstd[n] = static_cast<float>(s);
    }
}

// dinp: [N, H] +=, dweight: [H] += (either may be null); dout, inp: [N, H]; rstd: [N]; weight: [H] or null
void rms_norm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* rstd,
                       const float* weight, int64_t N, int64_t H) {
    for (int64_t n = 0; n < N; ++n) {
        const float* dy = dout + n * H;
        const float* x = inp + n * H;
        const float s = rstd[n];
        float dnorm_norm_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_norm_mean)
        for (int64_t i = 0; i < H; ++i) dnorm_norm_mean += (weight ? dy[i] * weight[i] : dy[i]) * x[i] * s;
        dnorm_norm_mean /= static_cast<float>(H);
        // Branch-free loops, one per output, so each vectorises (as in layer_norm_backward).
        if (dweight) {
            for (int64_t i = 0; i < H; ++i) dweight[i] += dy[i] * (x[i] * s);
        }
        if (dinp) {
            float* dx = dinp + n * H;
            if (weight) {
                for (int64_t i = 0; i < H; ++i) dx[i] += (dy[i] * weight[i] - (x[i] * s) * dnorm_norm_mean) * s;
            } else {
                for (int64_t i = 0; i < H; ++i) dx[i] += (dy[i] - (x[i] * s) * dnorm_norm_mean) * s;
            }
        }
    }
}

// Per-channel statistics of inp: [N, C, L] (L = 1 for [N, C] input): mean: [C] and the biased
// variance var: [C], accumulated in double. These kernels work on channels [c0, c1) only, so
// threads can take disjoint channel ranges.
// kFlat: L == 1 ([N, C] input), known at compile time so the loops over channels vectorise.
template <bool kFlat>
void channel_stats_impl(double* mean, double* var, const float* inp, int64_t N, int64_t C, int64_t L_in, int64_t c0,
                        int64_t c1) {
    const int64_t L = kFlat ? 1 : L_in;
    const double count = static_cast<double>(N * L);
    for (int64_t c = c0; c < c1; ++c) mean[c] = var[c] = 0.0;
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = c0; c < c1; ++c) {
            const float* x = inp + (n * C + c) * L;
            for (int64_t l = 0; l < L; ++l) mean[c] += x[l];
        }
    }
    for (int64_t c = c0; c < c1; ++c) mean[c] /= count;
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = c0; c < c1; ++c) {
            const float* x = inp + (n * C + c) * L;
            for (int64_t l = 0; l < L; ++l) {
                const double d = x[l] - mean[c];
                var[c] += d * d;
            }
        }
    }
    for (int64_t c = c0; c < c1; ++c) var[c] /= count;
}

void channel_stats(double* mean, double* var, const float* inp, int64_t N, int64_t C, int64_t L, int64_t c0,
                   int64_t c1) {
    if (L == 1) {
        channel_stats_impl<true>(mean, var, inp, N, C, L, c0, c1);
    } else {
        channel_stats_impl<false>(mean, var, inp, N, C, L, c0, c1);
    }
}

// out: [N, C, L] = (inp - mean[c]) * rstd[c] * weight[c] + bias[c]; mean, rstd: [C] in double
// (as layer_norm's: a batch mean rounded to float32 before the subtraction would cost ~1e-3 on
// inputs with a large common offset); weight, bias: [C], may be null
template <bool kFlat>
void batch_norm_apply_impl(float* out, const float* inp, const double* mean, const double* rstd, const float* weight,
                           const float* bias, int64_t N, int64_t C, int64_t L_in, int64_t c0, int64_t c1) {
    const int64_t L = kFlat ? 1 : L_in;
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = c0; c < c1; ++c) {
            const double m = mean[c], s = rstd[c];
            const float w = weight ? weight[c] : 1.0f;
            const float shift = bias ? bias[c] : 0.0f;
            const float* x = inp + (n * C + c) * L;
            float* y = out + (n * C + c) * L;
            for (int64_t l = 0; l < L; ++l) y[l] = static_cast<float>((x[l] - m) * s) * w + shift;
        }
    }
}

void batch_norm_apply(float* out, const float* inp, const double* mean, const double* rstd, const float* weight,
                      const float* bias, int64_t N, int64_t C, int64_t L, int64_t c0, int64_t c1) {
    if (L == 1) {
        batch_norm_apply_impl<true>(out, inp, mean, rstd, weight, bias, N, C, L, c0, c1);
    } else {
        batch_norm_apply_impl<false>(out, inp, mean, rstd, weight, bias, N, C, L, c0, c1);
    }
}

// dinp: [N, C, L] += (= when overwrite_dinp), dweight: [C] +=, dbias: [C] += (each may be null); dout, inp: [N, C, L];
// mean, rstd: [C]. With batch statistics every dx of a channel depends on all its dy (the
// statistics are functions of the batch); with running statistics they are constants.
// `sums` is scratch of at least 2 * C floats.
template <bool kFlat>
void batch_norm_backward_impl(float* dinp, float* dweight, float* dbias, float* sums, const float* dout,
                              const float* inp, const float* mean, const float* rstd, const float* weight,
                              bool batch_stats, int64_t N, int64_t C, int64_t L_in, int64_t c0, int64_t c1,
                              bool overwrite_dinp) {
    const int64_t L = kFlat ? 1 : L_in;
    float* dy_sum = sums;          // per channel: sum of dy
    float* dy_xhat_sum = sums + C;  // per channel: sum of dy * xhat
    for (int64_t c = c0; c < c1; ++c) dy_sum[c] = dy_xhat_sum[c] = 0.0f;
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = c0; c < c1; ++c) {
            const float* dy = dout + (n * C + c) * L;
            const float* x = inp + (n * C + c) * L;
            for (int64_t l = 0; l < L; ++l) {
                dy_sum[c] += dy[l];
                dy_xhat_sum[c] += dy[l] * (x[l] - mean[c]) * rstd[c];
            }
        }
    }
    for (int64_t c = c0; c < c1; ++c) {
        if (dbias) dbias[c] += dy_sum[c];
        if (dweight) dweight[c] += dy_xhat_sum[c];
    }
    if (!dinp) return;
    const float inv_count = 1.0f / static_cast<float>(N * L);
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = c0; c < c1; ++c) {
            const float w = weight ? weight[c] : 1.0f;
            const float* dy = dout + (n * C + c) * L;
            const float* x = inp + (n * C + c) * L;
            float* dx = dinp + (n * C + c) * L;
            const float dnorm_mean = batch_stats ? dy_sum[c] * w * inv_count : 0.0f;
            const float dnorm_norm_mean = batch_stats ? dy_xhat_sum[c] * w * inv_count : 0.0f;
            for (int64_t l = 0; l < L; ++l) {
                const float g = batch_stats ? (dy[l] * w - dnorm_mean - (x[l] - mean[c]) * rstd[c] * dnorm_norm_mean) * rstd[c]
                                            : dy[l] * w * rstd[c];
                dx[l] = overwrite_dinp ? g : dx[l] + g;
            }
        }
    }
}

void batch_norm_backward(float* dinp, float* dweight, float* dbias, float* sums, const float* dout,
                         const float* inp, const float* mean, const float* rstd, const float* weight,
                         bool batch_stats, int64_t N, int64_t C, int64_t L, int64_t c0, int64_t c1,
                         bool overwrite_dinp) {
    if (L == 1) {
        batch_norm_backward_impl<true>(dinp, dweight, dbias, sums, dout, inp, mean, rstd, weight, batch_stats, N, C, L,
                                       c0, c1, overwrite_dinp);
    } else {
        batch_norm_backward_impl<false>(dinp, dweight, dbias, sums, dout, inp, mean, rstd, weight, batch_stats, N, C,
                                        L, c0, c1, overwrite_dinp);
    }
}

}  // namespace detail

namespace {

float* data_or_null(const Tensor& t) { return t.defined() ? t.data() : nullptr; }

// Items (rows, channels) per chunk of a parallel loop: about 16k values, so a chunk outweighs
// the cost of handing it to another thread, and at least `minimum` items.
int64_t grain(int64_t values_per_item, int64_t minimum) {
    return std::max<int64_t>(minimum, (int64_t{1} << 14) / std::max<int64_t>(values_per_item, 1));
}
// Rows of width H, for the row-wise layer_norm and rms_norm.
int64_t row_grain(int64_t H) { return grain(H, 16); }
// Channels of per_channel values each, for batch_norm, whose kernels split the channels.
int64_t channel_grain(int64_t per_channel) { return grain(per_channel, 8); }

// Runs a per-row backward kernel over row chunks in parallel. Each chunk adds its dweight and
// dbias contributions into its own zeroed slot of `partials` ([chunks, 2, H]), summed at the end,
// so no two threads write the same sums. kernel(chunk_dweight, chunk_dbias, first_row, rows).
template <class Kernel>
void parallel_rows_with_sums(int64_t N, int64_t H, const Tensor& dweight, const Tensor& dbias, Kernel kernel) {
    const int threads = detail::pool_threads();
    if (threads == 1 || N <= row_grain(H)) {
        kernel(data_or_null(dweight), data_or_null(dbias), int64_t{0}, N);
        return;
    }
    const bool sums = dweight.defined() || dbias.defined();
    const Tensor partials = sums ? zeros({threads, 2, H}) : Tensor();
    detail::parallel_for_chunks(N, row_grain(H), [&](int chunk, int64_t b, int64_t e) {
        float* slot = sums ? partials.data() + chunk * 2 * H : nullptr;
        kernel(dweight.defined() ? slot : nullptr, dbias.defined() ? slot + H : nullptr, b, e - b);
    });
    for (int c = 0; sums && c < threads; ++c) {
        const float* slot = partials.data() + c * 2 * H;
        if (float* dw = data_or_null(dweight)) {
            for (int64_t i = 0; i < H; ++i) dw[i] += slot[i];
        }
        if (float* db = data_or_null(dbias)) {
            for (int64_t i = 0; i < H; ++i) db[i] += slot[H + i];
        }
    }
}

// Checks that x ends with normalized_shape and that weight/bias have that shape; returns H.
int64_t check_normalized_shape(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                               const Tensor& bias) {
    check(!normalized_shape.empty(), "normalized_shape must have at least one dimension");
    const int k = normalized_shape.size();
    bool ok = x.dim() >= k;
    for (int i = 0; ok && i < k; ++i) ok = x.shape()[x.dim() - k + i] == normalized_shape[i];
    if (!ok) {
        const std::string ns = normalized_shape.str();
        fail("Given normalized_shape=", ns, ", expected input with shape [*, ", ns.substr(1, ns.size() - 2),
             "], but got input of size", x.shape().str());
    }
    for (const Tensor* p : {&weight, &bias}) {
        if (p->defined()) {
            check(p->shape() == normalized_shape, "Expected ", p == &weight ? "weight" : "bias",
                  " to be of same shape as normalized_shape, but got ", p == &weight ? "weight" : "bias",
                  " of shape ", p->shape(), " and normalized_shape = ", normalized_shape);
        }
    }
    return normalized_shape.numel();
}

struct LayerNormBackward final : Node {
    Tensor x, weight, mean, rstd;
    int64_t N = 0, H = 0;
    const char* name() const override { return "NativeLayerNormBackward0"; }
    void backward(const Tensor& dout) override {
        bool fresh = false;
        const Tensor dx = grad_input_for_overwrite(0, fresh);
        parallel_rows_with_sums(N, H, grad_input(1), grad_input(2), [&](float* dw, float* db, int64_t row, int64_t rows) {
            detail::layer_norm_backward(dx.defined() ? dx.data() + row * H : nullptr, dw, db, dout.data() + row * H,
                                        x.data() + row * H, mean.data() + row, rstd.data() + row, data_or_null(weight),
                                        rows, H, fresh);
        });
    }
    void release_saved() override { x = weight = mean = rstd = Tensor(); }
};

struct RmsNormBackward final : Node {
    Tensor x, weight, rstd;
    int64_t N = 0, H = 0;
    const char* name() const override { return "RmsNormBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor dx = grad_input(0);
        parallel_rows_with_sums(N, H, grad_input(1), Tensor(), [&](float* dw, float*, int64_t row, int64_t rows) {
            detail::rms_norm_backward(dx.defined() ? dx.data() + row * H : nullptr, dw, dout.data() + row * H,
                                      x.data() + row * H, rstd.data() + row, data_or_null(weight), rows, H);
        });
    }
    void release_saved() override { x = weight = rstd = Tensor(); }
};

struct BatchNormBackward final : Node {
    Tensor x, weight, mean, rstd, sums;
    bool batch_stats = true;
    int64_t N = 0, C = 0, L = 0;
    const char* name() const override { return "NativeBatchNormBackward0"; }
    void backward(const Tensor& dout) override {
        bool fresh = false;
        const Tensor dx = grad_input_for_overwrite(0, fresh), dw = grad_input(1), db = grad_input(2);
        detail::parallel_for(C, channel_grain(N * L), [&](int64_t c0, int64_t c1) {
            detail::batch_norm_backward(data_or_null(dx), data_or_null(dw), data_or_null(db), sums.data(), dout.data(),
                                        x.data(), mean.data(), rstd.data(), data_or_null(weight), batch_stats, N, C, L,
                                        c0, c1, fresh);
        });
    }
    void release_saved() override { x = weight = mean = rstd = sums = Tensor(); }
};

Tensor contiguous_or_empty(const Tensor& t) { return t.defined() ? t.contiguous() : Tensor(); }

}  // namespace

Tensor layer_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight_in, const Tensor& bias_in,
                  double eps) {
    const int64_t H = check_normalized_shape(x_in, normalized_shape, weight_in, bias_in);
    const Tensor x = x_in.contiguous(), weight = contiguous_or_empty(weight_in), bias = contiguous_or_empty(bias_in);
    const int64_t N = H == 0 ? 0 : x.numel() / H;
    Tensor out = empty(x.shape()), mean = empty({N}), rstd = empty({N});
    detail::parallel_for(N, row_grain(H), [&](int64_t b, int64_t e) {
        detail::layer_norm_forward(out.data() + b * H, mean.data() + b, rstd.data() + b, x.data() + b * H,
                                   data_or_null(weight), data_or_null(bias), e - b, H, eps);
    });
    if (autograd::any_requires_grad({&x, &weight, &bias})) {
        auto node = autograd::make_node<LayerNormBackward>({&x, &weight, &bias});
        node->x = x.detach();
        node->weight = weight.defined() ? weight.detach() : Tensor();
        node->mean = mean;
        node->rstd = rstd;
        node->N = N, node->H = H;
        autograd::set_history(out, node);
    }
    return out;
}

Tensor rms_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight_in,
                std::optional<double> eps) {
    const int64_t H = check_normalized_shape(x_in, normalized_shape, weight_in, Tensor());
    const Tensor x = x_in.contiguous(), weight = contiguous_or_empty(weight_in);
    const int64_t N = H == 0 ? 0 : x.numel() / H;
    Tensor out = empty(x.shape()), rstd = empty({N});
    const double e = eps.value_or(std::numeric_limits<float>::epsilon());
    detail::parallel_for(N, row_grain(H), [&](int64_t b, int64_t end) {
        detail::rms_norm_forward(out.data() + b * H, rstd.data() + b, x.data() + b * H, data_or_null(weight), end - b,
                                 H, e);
    });
    if (autograd::any_requires_grad({&x, &weight})) {
        auto node = autograd::make_node<RmsNormBackward>({&x, &weight});
        node->x = x.detach();
        node->weight = weight.defined() ? weight.detach() : Tensor();
        node->rstd = rstd;
        node->N = N, node->H = H;
        autograd::set_history(out, node);
    }
    return out;
}

Tensor batch_norm(const Tensor& x_in, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight_in,
                  const Tensor& bias_in, bool training, std::optional<double> momentum, double eps,
                  int64_t num_batches_tracked) {
    check(x_in.dim() == 2 || x_in.dim() == 3, "batch_norm: expected 2D or 3D input (got ", x_in.dim(),
          "D input of shape ", x_in.shape(), ")");
    const int64_t N = x_in.size(0), C = x_in.size(1), L = x_in.dim() == 3 ? x_in.size(2) : 1;
    for (const Tensor* p : {&running_mean, &running_var, &weight_in, &bias_in}) {
        if (p->defined()) {
            check(p->dim() == 1 && p->size(0) == C, "batch_norm: a parameter or buffer of shape ", p->shape(),
                  " does not match ", C, " channels of input ", x_in.shape());
        }
    }
    check(running_mean.defined() == running_var.defined(), "batch_norm: give both running_mean and running_var or neither");
    const bool batch_stats = training || !running_mean.defined();
    if (batch_stats) {
        check(N * L > 1, "Expected more than 1 value per channel when training, got input size ", x_in.shape());
    }
    const Tensor x = x_in.contiguous(), weight = contiguous_or_empty(weight_in), bias = contiguous_or_empty(bias_in);
    // Per channel, in double: mean_d, and var_d (the biased variance, then rstd once it is used).
    thread_local std::vector<double> stats;
    stats.resize(static_cast<size_t>(2 * C));
    double* mean_d = stats.data();
    double* var_d = stats.data() + C;
    if (batch_stats) {
        detail::parallel_for(C, channel_grain(N * L), [&](int64_t c0, int64_t c1) {
            detail::channel_stats(mean_d, var_d, x.data(), N, C, L, c0, c1);
        });
        if (training && running_mean.defined()) {
            // PyTorch's momentum=None is a cumulative average over the batches seen so far.
            const double m = momentum ? *momentum : 1.0 / static_cast<double>(std::max<int64_t>(num_batches_tracked, 1));
            const double unbias = static_cast<double>(N * L) / static_cast<double>(N * L - 1);
            float* rm = running_mean.data();
            float* rv = running_var.data();
            for (int64_t c = 0; c < C; ++c) {
                rm[c] = static_cast<float>((1.0 - m) * rm[c] + m * mean_d[c]);
                rv[c] = static_cast<float>((1.0 - m) * rv[c] + m * var_d[c] * unbias);
            }
        }
    } else {
        for (int64_t c = 0; c < C; ++c) {
            mean_d[c] = running_mean.data()[c];
            var_d[c] = running_var.data()[c];
        }
    }
    double* rstd_d = var_d;
    for (int64_t c = 0; c < C; ++c) rstd_d[c] = 1.0 / std::sqrt(var_d[c] + eps);
    Tensor mean = empty({C}), rstd = empty({C});
    for (int64_t c = 0; c < C; ++c) {
        mean.data()[c] = static_cast<float>(mean_d[c]);
        rstd.data()[c] = static_cast<float>(rstd_d[c]);
    }
    Tensor out = empty(x.shape());
    detail::parallel_for(C, channel_grain(N * L), [&](int64_t c0, int64_t c1) {
        detail::batch_norm_apply(out.data(), x.data(), mean_d, rstd_d, data_or_null(weight), data_or_null(bias), N, C, L,
                                 c0, c1);
    });
    if (autograd::any_requires_grad({&x, &weight, &bias})) {
        auto node = autograd::make_node<BatchNormBackward>({&x, &weight, &bias});
        node->x = x.detach();
        node->weight = weight.defined() ? weight.detach() : Tensor();
        node->mean = mean;
        node->rstd = rstd;
        node->sums = empty({2 * C});
        node->batch_stats = batch_stats;
        node->N = N, node->C = C, node->L = L;
        autograd::set_history(out, node);
    }
    return out;
}

}  // namespace normnet

// Normalisations with their backwards: layer_norm, rms_norm, batch_norm, group_norm (and
// instance_norm on top of it), and batch_norm and group_norm fused with the max_pool2d(2) and
// relu that follow them in a CNN block (*_max_pool2d_relu). Each forward computes
// its statistics in double over two passes (never E[x^2] - E[x]^2) and saves, per group, the
// mean (as a float pair hi + lo, so x - mean stays exact for inputs with a large common offset)
// and rstd = 1 / sqrt(var + eps); each backward recomputes xhat from exactly those values and
// works group by group, computing the input gradient and the group's parameter sums while the
// group is in cache. Row reductions are vectorised with `omp simd` (-fopenmp-simd: no OpenMP
// runtime): the lanes' partial sums change the summation order, never the thread-count
// independence. Parallel loops split rows or channels around the kernels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "../parallel.hpp"
#include "loop.hpp"
#include "normnet/dist.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"
#include "pool2x2.hpp"

namespace normnet {
namespace detail {
namespace {

float* data_or_null(const Tensor& t) { return t.defined() ? t.data() : nullptr; }

int64_t row_grain(int64_t H) { return item_grain(H, 16); }

// Splits a double mean into two floats whose sum is it to about 2^-48 relative.
void split_mean(double m, float& hi, float& lo) {
    hi = static_cast<float>(m);
    lo = static_cast<float>(m - hi);
}

// mean, m2 = the mean of x: [n] and the sum of squared deviations from it, in double over two
// passes (the lanes' partial sums vectorise the loops).
inline void mean_and_m2(const float* __restrict x, int64_t n, double& mean, double& m2) {
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) sum += x[i];
    const double m = n > 0 ? sum / static_cast<double>(n) : 0.0;
    double sq = 0.0;
#pragma omp simd reduction(+ : sq)
    for (int64_t i = 0; i < n; ++i) {
        const double d = x[i] - m;
        sq += d * d;
    }
    mean = m, m2 = sq;
}

// Runs kernel(first_row, rows, slot) over row chunks of [N, H] in parallel, where each chunk adds
// its rows' parameter sums (`sums` vectors of H) into its own zeroed slot; returns the slots
// summed ([sums, H]), or an undefined tensor when sums == 0. No two threads write the same sum.
// `rows_per_chunk`: the fewest rows worth a thread (group_norm's rows of groups are larger
// than their H parameters).
template <class Kernel>
Tensor rows_with_partial_sums(int64_t N, int64_t H, int sums, Kernel kernel, int64_t rows_per_chunk = -1) {
    if (rows_per_chunk < 0) rows_per_chunk = row_grain(H);
    const int chunks = pool_threads() == 1 || N <= rows_per_chunk ? 1 : pool_threads();
    const Tensor partials = sums > 0 ? zeros({chunks, sums, H}) : Tensor();
    float* base = data_or_null(partials);
    if (chunks == 1) {
        kernel(int64_t{0}, N, base);
        return partials.defined() ? partials.view({sums, H}) : Tensor();
    }
    parallel_for_chunks(N, rows_per_chunk, [&](int chunk, int64_t b, int64_t e) {
        kernel(b, e - b, base ? base + chunk * sums * H : nullptr);
    });
    if (!partials.defined()) return Tensor();
    for (int c = 1; c < chunks; ++c) {
        const float* slot = base + c * sums * H;
        for (int64_t i = 0; i < sums * H; ++i) base[i] += slot[i];
    }
    return partials.narrow(0, 0, 1).view({sums, H});
}

// ---- layer_norm -------------------------------------------------------------------------------

// out: [N, H], mean, mean_lo, rstd: [N]; inp: [N, H]; weight, bias: [H] (either may be null)
void layer_norm_forward(float* __restrict out, float* __restrict mean, float* __restrict mean_lo,
                        float* __restrict rstd, const float* __restrict inp, const float* __restrict weight,
                        const float* __restrict bias, int64_t N, int64_t H, double eps) {
    for (int64_t n = 0; n < N; ++n) {
        const float* x = inp + n * H;
        float* y = out + n * H;
        double m, sq;
        mean_and_m2(x, H, m, sq);
        const double s = 1.0 / std::sqrt(sq / static_cast<double>(H) + eps);
#pragma omp simd
        for (int64_t i = 0; i < H; ++i) {
            const float xhat = static_cast<float>((x[i] - m) * s);
            y[i] = (weight ? xhat * weight[i] : xhat) + (bias ? bias[i] : 0.0f);
        }
        split_mean(m, mean[n], mean_lo[n]);
        rstd[n] = static_cast<float>(s);
    }
}

// dinp: [N, H] (Store; may be null); dweight, dbias: [H] += (may be null);
// dout, inp: [N, H]; mean, mean_lo, rstd: [N]; weight: [H] (may be null)
template <class Store>
void layer_norm_backward(float* __restrict dinp, float* __restrict dweight, float* __restrict dbias,
                         const float* __restrict dout, const float* __restrict inp, const float* __restrict mean,
                         const float* __restrict mean_lo, const float* __restrict rstd,
                         const float* __restrict weight, int64_t N, int64_t H) {
    for (int64_t n = 0; n < N; ++n) {
        const float* dy = dout + n * H;
        const float* x = inp + n * H;
        const float m = mean[n], ml = mean_lo[n], s = rstd[n];
        // One loop per output, each without branches, so that each vectorises (a single loop
        // with the null checks inside stayed scalar: 4% of a batch-128 epoch in perf).
        if (dbias) {
            for (int64_t i = 0; i < H; ++i) dbias[i] += dy[i];
        }
        if (dweight) {
            for (int64_t i = 0; i < H; ++i) dweight[i] += dy[i] * (((x[i] - m) - ml) * s);
        }
        if (!dinp) continue;
        // The two row means that couple every dx of the row to every dy.
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
        for (int64_t i = 0; i < H; ++i) {
            const float xhat = ((x[i] - m) - ml) * s;
            const float dnorm = weight ? dy[i] * weight[i] : dy[i];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * xhat;
        }
        dnorm_mean /= static_cast<float>(H);
        dnorm_norm_mean /= static_cast<float>(H);
        float* dx = dinp + n * H;
        if (weight) {
            for (int64_t i = 0; i < H; ++i) {
                Store::put(dx[i], (dy[i] * weight[i] - dnorm_mean - (((x[i] - m) - ml) * s) * dnorm_norm_mean) * s);
            }
        } else {
            for (int64_t i = 0; i < H; ++i) {
                Store::put(dx[i], (dy[i] - dnorm_mean - (((x[i] - m) - ml) * s) * dnorm_norm_mean) * s);
            }
        }
    }
}

class NativeLayerNormBackward final : public OpNode {
public:
    int64_t N = 0, H = 0;
    double eps = 0.0;
    const char* name() const override { return "NativeLayerNormBackward0"; }
    // Its input is saved anyway (and the bias, for this), so a consumer of the output (Linear
    // after LayerNorm) need not keep it: the forward kernel runs again, statistics and all (they
    // go to scratch), so the output is the forward's bit for bit (the normalisation is in
    // double; the float statistics saved for backward would not reproduce it).
    bool recomputes_output() const override { return true; }
    void recompute_output(float* out) const override {
        const Tensor &x = saved(0), &weight = saved(1), &bias = saved(5);
        const Tensor stats = empty({3, N});
        float* s = stats.data();
        parallel_for(N, row_grain(H), [&](int64_t b, int64_t e) {
            layer_norm_forward(out + b * H, s + b, s + N + b, s + 2 * N + b, x.data() + b * H, data_or_null(weight),
                               data_or_null(bias), e - b, H, eps);
        });
    }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &weight = saved(1), &mean = saved(2), &mean_lo = saved(3), &rstd = saved(4);
        const GradOut dx = grad_out(0), dw = grad_out(1), db = grad_out(2);
        const int sums = (dw ? 1 : 0) + (db ? 1 : 0);
        const auto rows = [&]<class Store>(float* d) {
            return rows_with_partial_sums(N, H, sums, [&](int64_t row, int64_t rows, float* slot) {
                layer_norm_backward<Store>(d ? d + row * H : nullptr, dw ? slot : nullptr,
                                           db ? slot + (dw ? H : 0) : nullptr, dout.data() + row * H,
                                           x.data() + row * H, mean.data() + row, mean_lo.data() + row,
                                           rstd.data() + row, data_or_null(weight), rows, H);
            });
        };
        const Tensor param_sums = dx.fresh ? rows.template operator()<Overwrite>(dx.data)
                                           : rows.template operator()<Accumulate>(dx.data);
        if (dw) dw.store(param_sums.data(), H);
        if (db) db.store(param_sums.data() + (dw ? H : 0), H);
    }
};

// Checks that x ends with normalized_shape and that weight/bias have that shape; returns H.
int64_t check_normalized_shape(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                               const Tensor& bias, const char* op) {
    NORMNET_CHECK(!normalized_shape.empty(), op, ": normalized_shape must have at least one dimension");
    for (const Tensor* t : {&x, &weight, &bias}) {
        NORMNET_CHECK(!t->defined() || t->dtype() == kFloat32, op, ": expected float32 tensors, got ", t->dtype());
    }
    const int k = normalized_shape.size();
    bool ok = x.dim() >= k;
    for (int i = 0; ok && i < k; ++i) ok = x.shape()[x.dim() - k + i] == normalized_shape[i];
    if (!ok) {
        const std::string ns = normalized_shape.str();
        fail("Given normalized_shape=", ns, ", expected input with shape [*, ", ns.substr(1, ns.size() - 2),
             "], but got input of size", x.shape().str());
    }
    for (const Tensor* p : {&weight, &bias}) {
        const char* what = p == &weight ? "weight" : "bias";
        NORMNET_CHECK(!p->defined() || p->shape() == normalized_shape, "Expected ", what,
                      " to be of same shape as normalized_shape, but got ", what, " of shape ", p->shape(),
                      " and normalized_shape = ", normalized_shape);
    }
    return normalized_shape.numel();
}

Tensor contiguous_or_empty(const Tensor& t) { return t.defined() ? t.contiguous() : Tensor(); }

// Values per (sample, channel) of an [N, C, *] input: the product of the trailing sizes.
int64_t spatial_size(const Tensor& x) {
    int64_t L = 1;
    for (int d = 2; d < x.dim(); ++d) L *= x.size(d);
    return L;
}

// Rows of a [*, normalized_shape] input: the product of the leading sizes.
int64_t leading_rows(const Tensor& x, int normalized_dims) {
    int64_t N = 1;
    for (int d = 0; d < x.dim() - normalized_dims; ++d) N *= x.size(d);
    return N;
}

}  // namespace
}  // namespace detail

Tensor layer_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight_in, const Tensor& bias_in,
                  double eps) {
    const int64_t H = detail::check_normalized_shape(x_in, normalized_shape, weight_in, bias_in, "layer_norm");
    const Tensor x = x_in.contiguous(), weight = detail::contiguous_or_empty(weight_in),
                 bias = detail::contiguous_or_empty(bias_in);
    const int64_t N = detail::leading_rows(x, normalized_shape.size());
    Tensor out = empty(x.shape()), mean = empty({N}), mean_lo = empty({N}), rstd = empty({N});
    detail::parallel_for(N, detail::row_grain(H), [&](int64_t b, int64_t e) {
        detail::layer_norm_forward(out.data() + b * H, mean.data() + b, mean_lo.data() + b, rstd.data() + b,
                                   x.data() + b * H, detail::data_or_null(weight), detail::data_or_null(bias), e - b, H,
                                   eps);
    });
    if (auto* node = detail::record<detail::NativeLayerNormBackward>(out, {x, weight, bias},
                                                                      {x, weight, mean, mean_lo, rstd, bias})) {
        node->N = N, node->H = H, node->eps = eps;
    }
    return out;
}

namespace detail {
namespace {

// ---- rms_norm ---------------------------------------------------------------------------------

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

// dinp: [N, H] (Store; may be null), dweight: [H] += (may be null); dout, inp: [N, H]; rstd: [N];
// weight: [H] or null
template <class Store>
void rms_norm_backward(float* __restrict dinp, float* __restrict dweight, const float* __restrict dout,
                       const float* __restrict inp, const float* __restrict rstd, const float* __restrict weight,
                       int64_t N, int64_t H) {
    for (int64_t n = 0; n < N; ++n) {
        const float* dy = dout + n * H;
        const float* x = inp + n * H;
        const float s = rstd[n];
        // Branch-free loops, one per output, so each vectorises (as in layer_norm_backward).
        if (dweight) {
            for (int64_t i = 0; i < H; ++i) dweight[i] += dy[i] * (x[i] * s);
        }
        if (!dinp) continue;
        float dnorm_norm_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_norm_mean)
        for (int64_t i = 0; i < H; ++i) dnorm_norm_mean += (weight ? dy[i] * weight[i] : dy[i]) * x[i] * s;
        dnorm_norm_mean /= static_cast<float>(H);
        float* dx = dinp + n * H;
        if (weight) {
            for (int64_t i = 0; i < H; ++i) Store::put(dx[i], (dy[i] * weight[i] - (x[i] * s) * dnorm_norm_mean) * s);
        } else {
            for (int64_t i = 0; i < H; ++i) Store::put(dx[i], (dy[i] - (x[i] * s) * dnorm_norm_mean) * s);
        }
    }
}

class RmsNormBackward final : public OpNode {
public:
    int64_t N = 0, H = 0;
    const char* name() const override { return "RmsNormBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &weight = saved(1), &rstd = saved(2);
        const GradOut dx = grad_out(0), dw = grad_out(1);
        const auto rows = [&]<class Store>(float* d) {
            return rows_with_partial_sums(N, H, dw ? 1 : 0, [&](int64_t row, int64_t rows, float* slot) {
                rms_norm_backward<Store>(d ? d + row * H : nullptr, dw ? slot : nullptr, dout.data() + row * H,
                                         x.data() + row * H, rstd.data() + row, data_or_null(weight), rows, H);
            });
        };
        const Tensor param_sums = dx.fresh ? rows.template operator()<Overwrite>(dx.data)
                                           : rows.template operator()<Accumulate>(dx.data);
        if (dw) dw.store(param_sums.data(), H);
    }
};

}  // namespace
}  // namespace detail

Tensor rms_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight_in,
                std::optional<double> eps) {
    const int64_t H = detail::check_normalized_shape(x_in, normalized_shape, weight_in, Tensor(), "rms_norm");
    const Tensor x = x_in.contiguous(), weight = detail::contiguous_or_empty(weight_in);
    const int64_t N = detail::leading_rows(x, normalized_shape.size());
    Tensor out = empty(x.shape()), rstd = empty({N});
    const double e = eps.value_or(std::numeric_limits<float>::epsilon());
    detail::parallel_for(N, detail::row_grain(H), [&](int64_t b, int64_t end) {
        detail::rms_norm_forward(out.data() + b * H, rstd.data() + b, x.data() + b * H, detail::data_or_null(weight),
                                 end - b, H, e);
    });
    if (auto* node = detail::record<detail::RmsNormBackward>(out, {x, weight}, {x, weight, rstd})) {
        node->N = N, node->H = H;
    }
    return out;
}

namespace detail {
namespace {

// Doubles reused by every call on this thread (statistics, sums; resized once, so no allocation
// in steady state). A kernel's threads get disjoint parts of the calling thread's scratch.
double* double_scratch(int64_t n) {
    thread_local std::vector<double> scratch;
    scratch.resize(static_cast<size_t>(n));
    return scratch.data();
}

// ---- batch_norm -------------------------------------------------------------------------------
// The kernels see a block of nc channels of inp: [N, C, L]: pointers at the block's first
// channel, `ld` = C * L elements from one sample to the next. Two layouts, two kernel sets:
// [N, C] (L == 1), where the loops run over the block's channels (unit stride, vectorised), and
// [N, C, L > 1] (images: L = H * W), where they run over each (sample, channel) plane of L values.

// mean, m2: [nc] (double) = the mean and the sum of squared deviations of each channel of the
// block of inp: [N, C], over two passes.
void channel_stats_flat(double* __restrict mean, double* __restrict m2, const float* __restrict inp, int64_t N,
                        int64_t nc, int64_t ld) {
    for (int64_t c = 0; c < nc; ++c) mean[c] = m2[c] = 0.0;
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = 0; c < nc; ++c) mean[c] += inp[n * ld + c];
    }
    for (int64_t c = 0; c < nc; ++c) mean[c] /= static_cast<double>(N);
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = 0; c < nc; ++c) {
            const double d = inp[n * ld + c] - mean[c];
            m2[c] += d * d;
        }
    }
}

// The threads split batch_norm's work as the ops around it split theirs: [N, C] (L == 1) by
// rows, in blocks of kFlatBlockRows; images ([N, C, L > 1]) by samples, as the convolutions
// that produce and consume them do. (Split by channels, each thread read every row or sample,
// half of it where the other core had just written it: the ViT's BatchNorm rows ran 1.8x their
// GEMM floor on two threads and 1.4x on one, as LayerNorm's.) Each block's (a sample's, for
// images) statistics or sums go to a scratch, [blocks, 3, C] (count, mean, m2: as
// merge_channel_stats takes them) or [blocks, 2, C] (sums of dy and dy * xhat), merged per
// channel in block order: the results do not depend on the thread count.
constexpr int64_t kFlatBlockRows = 64;
int64_t flat_blocks(int64_t N) { return (N + kFlatBlockRows - 1) / kFlatBlockRows; }
// The scratch's blocks.
int64_t stat_blocks(int64_t N, int64_t L) { return L == 1 ? flat_blocks(N) : N; }

// body(i0, i1) for chunks of `items` items (rows, samples, row blocks) of `values` values
// each, split between the threads.
template <class Body>
void for_each_chunk(int64_t items, int64_t values, Body&& body) {
    parallel_for(items, item_grain(values), body);
}

// body(block, first_row, rows) for the row blocks of [N, C], split between the threads.
template <class Body>
void for_each_flat_block(int64_t N, int64_t C, Body&& body) {
    for_each_chunk(flat_blocks(N), kFlatBlockRows * C, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int64_t r = b * kFlatBlockRows;
            body(b, r, std::min(kFlatBlockRows, N - r));
        }
    });
}

// blocks: [stat_blocks(N, L), 3, C] = each block's (count, mean, m2) per channel of inp: [N, C, L].
void channel_stats_blocks(double* __restrict blocks, const float* __restrict inp, int64_t N, int64_t C, int64_t L) {
    if (L == 1) {
        for_each_flat_block(N, C, [&](int64_t b, int64_t r, int64_t rows) {
            double* block = blocks + b * 3 * C;
            std::fill_n(block, C, static_cast<double>(rows));
            channel_stats_flat(block + C, block + 2 * C, inp + r * C, rows, C, C);
        });
        return;
    }
    for_each_chunk(N, C * L, [&](int64_t n0, int64_t n1) {
        for (int64_t n = n0; n < n1; ++n) {
            double* block = blocks + n * 3 * C;
            for (int64_t c = 0; c < C; ++c) {
                block[c] = static_cast<double>(L);
                mean_and_m2(inp + (n * C + c) * L, L, block[C + c], block[2 * C + c]);
            }
        }
    });
}

// dy_sum, dy_xhat_sum: [C] = the sums at blocks: [n, 2, C], added per channel in block order in double.
void add_block_sums(float* __restrict dy_sum, float* __restrict dy_xhat_sum, const double* __restrict blocks,
                    int64_t n, int64_t C) {
    for (int64_t c = 0; c < C; ++c) {
        double a = 0.0, b = 0.0;
        for (int64_t k = 0; k < n; ++k) a += blocks[k * 2 * C + c], b += blocks[k * 2 * C + C + c];
        dy_sum[c] = static_cast<float>(a), dy_xhat_sum[c] = static_cast<float>(b);
    }
}

// out: [N, nc] block = (inp - mean[c]) * rstd[c] * weight[c] + bias[c]; mean, rstd: [nc] in double;
// weight, bias: [nc] (either may be null)
void batch_norm_apply_flat(float* __restrict out, const float* __restrict inp, const double* __restrict mean,
                           const double* __restrict rstd, const float* __restrict weight,
                           const float* __restrict bias, int64_t N, int64_t nc, int64_t ld) {
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = 0; c < nc; ++c) {
            const float w = weight ? weight[c] : 1.0f;
            const float shift = bias ? bias[c] : 0.0f;
            out[n * ld + c] = static_cast<float>((inp[n * ld + c] - mean[c]) * rstd[c]) * w + shift;
        }
    }
}

// out: [N, nc, L] block = xhat * weight[c] + bias[c] with xhat = ((inp - mean) - mean_lo) * rstd,
// in float as the backward computes it (x - mean is exact for x near the mean, so a large common
// offset costs nothing; a quarter of the double arithmetic's time); mean, mean_lo, rstd: [nc];
// weight, bias: [nc] (either may be null)
void batch_norm_apply_planes(float* __restrict out, const float* __restrict inp, const float* __restrict mean,
                             const float* __restrict mean_lo, const float* __restrict rstd,
                             const float* __restrict weight, const float* __restrict bias, int64_t N, int64_t nc,
                             int64_t L, int64_t ld) {
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = 0; c < nc; ++c) {
            const float m = mean[c], ml = mean_lo[c], s = rstd[c];
            const float w = weight ? weight[c] : 1.0f;
            const float shift = bias ? bias[c] : 0.0f;
            const float* x = inp + n * ld + c * L;
            float* y = out + n * ld + c * L;
            for (int64_t l = 0; l < L; ++l) y[l] = (((x[l] - m) - ml) * s) * w + shift;
        }
    }
}

// a, b = the sums of dy and of dy * xhat over a channel's L values dy, x: [L], with
// xhat = ((x - mean) - mean_lo) * rstd (vectorised: float lanes).
inline void dy_sums(float& a, float& b, const float* __restrict dy, const float* __restrict x, float mean,
                    float mean_lo, float rstd, int64_t L) {
    float sa = 0.0f, sb = 0.0f;
#pragma omp simd reduction(+ : sa, sb)
    for (int64_t l = 0; l < L; ++l) {
        sa += dy[l];
        sb += dy[l] * (((x[l] - mean) - mean_lo) * rstd);
    }
    a = sa, b = sb;
}

// dx for one channel's values given its sums: with batch statistics every dx of a channel depends
// on all its dy (the statistics are functions of the batch); with running statistics they are
// constants. dx: [L] (Store); dy, x: [L]; dnorm_mean, dnorm_norm_mean: the channel's sums of
// dy * w and dy * w * xhat over its count (0 without batch statistics).
// dy == null: dx is written over the dy it holds (Overwrite).
template <class Store>
inline void batch_norm_dx(float* __restrict dx, const float* __restrict dy, const float* __restrict x, float m,
                          float ml, float s, float w, float dnorm_mean, float dnorm_norm_mean, bool batch_stats,
                          int64_t L) {
    const auto value = [&](float d, float xv) { return (d * w - dnorm_mean - (((xv - m) - ml) * s) * dnorm_norm_mean) * s; };
    if (batch_stats && dy == nullptr) {
        for (int64_t l = 0; l < L; ++l) dx[l] = value(dx[l], x[l]);
    } else if (batch_stats) {
        for (int64_t l = 0; l < L; ++l) Store::put(dx[l], value(dy[l], x[l]));
    } else if (dy == nullptr) {
        for (int64_t l = 0; l < L; ++l) dx[l] = dx[l] * w * s;
    } else {
        for (int64_t l = 0; l < L; ++l) Store::put(dx[l], dy[l] * w * s);
    }
}

// dy_sum, dy_xhat_sum: [nc] = the sums of dy and dy * xhat over the [N, nc] block (the bias and
// weight gradients); dout, inp: [N, nc] blocks; mean, mean_lo, rstd: [nc].
// Restrict pointers: with this many arrays GCC would not vectorise the channel loops behind
// runtime alias checks (BatchNorm's backward took 3x longer without them).
void batch_norm_sums_flat(double* __restrict dy_sum, double* __restrict dy_xhat_sum, const float* __restrict dout,
                          const float* __restrict inp, const float* __restrict mean, const float* __restrict mean_lo,
                          const float* __restrict rstd, int64_t N, int64_t nc, int64_t ld) {
    for (int64_t c = 0; c < nc; ++c) dy_sum[c] = dy_xhat_sum[c] = 0.0;
    for (int64_t n = 0; n < N; ++n) {
        const float* dy = dout + n * ld;
        const float* x = inp + n * ld;
        for (int64_t c = 0; c < nc; ++c) {
            dy_sum[c] += dy[c];
            dy_xhat_sum[c] += dy[c] * (((x[c] - mean[c]) - mean_lo[c]) * rstd[c]);
        }
    }
}

// dinp: [N, nc] block (Store) from the channels' sums (batch_norm_sums_flat's, over the `1 /
// inv_count` values the statistics came from: this block's, or every rank's for sync_batch_norm);
// weight: [nc] (may be null).
template <class Store>
void batch_norm_dx_flat(float* __restrict dinp, const float* __restrict dy_sum, const float* __restrict dy_xhat_sum,
                        const float* __restrict dout, const float* __restrict inp, const float* __restrict mean,
                        const float* __restrict mean_lo, const float* __restrict rstd, const float* __restrict weight,
                        bool batch_stats, float inv_count, int64_t N, int64_t nc, int64_t ld) {
    for (int64_t n = 0; n < N; ++n) {
        const float* dy = dout + n * ld;
        const float* x = inp + n * ld;
        float* dx = dinp + n * ld;
        for (int64_t c = 0; c < nc; ++c) {
            const float w = weight ? weight[c] : 1.0f;
            const float dnorm_mean = batch_stats ? dy_sum[c] * w * inv_count : 0.0f;
            const float dnorm_norm_mean = batch_stats ? dy_xhat_sum[c] * w * inv_count : 0.0f;
            const float xhat = ((x[c] - mean[c]) - mean_lo[c]) * rstd[c];
            Store::put(dx[c], batch_stats ? (dy[c] * w - dnorm_mean - xhat * dnorm_norm_mean) * rstd[c]
                                          : dy[c] * w * rstd[c]);
        }
    }
}

// blocks: [stat_blocks(N, L), 2, C] = each block's sums of dy and dy * xhat per channel, of
// dout, inp: [N, C, L]; mean, mean_lo, rstd: [C]. Images' per-plane sums are dy_sums' floats.
void batch_norm_block_sums(double* __restrict blocks, const float* __restrict dout, const float* __restrict inp,
                           const float* __restrict mean, const float* __restrict mean_lo,
                           const float* __restrict rstd, int64_t N, int64_t C, int64_t L) {
    if (L == 1) {
        for_each_flat_block(N, C, [&](int64_t b, int64_t r, int64_t rows) {
            double* block = blocks + b * 2 * C;
            batch_norm_sums_flat(block, block + C, dout + r * C, inp + r * C, mean, mean_lo, rstd, rows, C, C);
        });
        return;
    }
    for_each_chunk(N, C * L, [&](int64_t n0, int64_t n1) {
        for (int64_t n = n0; n < n1; ++n) {
            double* block = blocks + n * 2 * C;
            for (int64_t c = 0; c < C; ++c) {
                float a, b;
                dy_sums(a, b, dout + (n * C + c) * L, inp + (n * C + c) * L, mean[c], mean_lo[c], rstd[c], L);
                block[c] = a, block[C + c] = b;
            }
        }
    });
}

// As batch_norm_dx_flat for a block of inp: [N, C, L > 1], plane by plane in address order;
// dout == null: dinp holds dy and is written over (Overwrite).
template <class Store>
void batch_norm_dx_planes(float* __restrict dinp, const float* __restrict dy_sum,
                          const float* __restrict dy_xhat_sum, const float* __restrict dout,
                          const float* __restrict inp, const float* __restrict mean, const float* __restrict mean_lo,
                          const float* __restrict rstd, const float* __restrict weight, bool batch_stats,
                          float inv_count, int64_t N, int64_t nc, int64_t L, int64_t ld) {
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = 0; c < nc; ++c) {
            const float w = weight ? weight[c] : 1.0f;
            const float dnorm_mean = batch_stats ? dy_sum[c] * w * inv_count : 0.0f;
            const float dnorm_norm_mean = batch_stats ? dy_xhat_sum[c] * w * inv_count : 0.0f;
            const int64_t at = n * ld + c * L;
            batch_norm_dx<Store>(dinp + at, dout ? dout + at : nullptr, inp + at, mean[c], mean_lo[c], rstd[c], w, dnorm_mean,
                                 dnorm_norm_mean, batch_stats, L);
        }
    }
}

class NativeBatchNormBackward final : public OpNode {
public:
    bool batch_stats = true;
    bool sync = false;  // sync_batch_norm: the statistics are every rank's
    int64_t N = 0, C = 0, L = 0;
    double count = 0;  // the values per channel the statistics came from (N * L, or every rank's)
    const char* name() const override { return sync ? "SyncBatchNormBackward" : "NativeBatchNormBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &weight = saved(1), &mean = saved(2), &mean_lo = saved(3), &rstd = saved(4);
        // Images: dx written over dout when the engine allows (grad_over_dout; dx comes after
        // every sum), one activation-sized buffer fewer.
        GradOut dx = L > 1 ? grad_over_dout(0, dout) : GradOut{};
        const bool over = static_cast<bool>(dx);
        if (!over) dx = grad_out(0);
        const GradOut dw = grad_out(1), db = grad_out(2);
        const Tensor sums = empty({2, C});  // per channel: sum of dy, sum of dy * xhat
        float* s = sums.data();
        const float inv_count = 1.0f / static_cast<float>(count);
        const float *m = mean.data(), *m_lo = mean_lo.data(), *r = rstd.data(), *w = data_or_null(weight);
        const float *dy = dout.data(), *xd = x.data();
        // The sums, per block (see kFlatBlockRows), then added in block order.
        double* blocks = double_scratch(stat_blocks(N, L) * 2 * C);
        batch_norm_block_sums(blocks, dy, xd, m, m_lo, r, N, C, L);
        add_block_sums(s, s + C, blocks, stat_blocks(N, L), C);
        // dx from the sums at `t` ([2, C]), by rows or samples (written over dout when `over`:
        // every sum is taken by then).
        const auto all_dx = [&]<class Store>(float* d, const float* t) {
            for_each_chunk(N, C * L, [&](int64_t n0, int64_t n1) {
                const int64_t at = n0 * C * L;
                if (L == 1) {
                    batch_norm_dx_flat<Store>(d + at, t, t + C, dy + at, xd + at, m, m_lo, r, w, batch_stats,
                                              inv_count, n1 - n0, C, C);
                } else {
                    batch_norm_dx_planes<Store>(d + at, t, t + C, over ? nullptr : dy + at, xd + at, m, m_lo, r, w,
                                                batch_stats, inv_count, n1 - n0, C, L, C * L);
                }
            });
        };
        const float* t = s;
        Tensor global;
        if (sync) {
            // One all-reduce of both sums (every rank, also one without samples): dx needs the
            // sums over every rank's values, weight and bias only this rank's part (the gradient
            // all-reduce adds the parts).
            global = sums.clone();
            dist::all_reduce(global);
            t = global.data();
        }
        if (dx && N * L > 0) {
            dx.fresh ? all_dx.template operator()<Overwrite>(dx.data, t) : all_dx.template operator()<Accumulate>(dx.data, t);
        }
        if (db) db.store(s, C);
        if (dw) dw.store(s + C, C);
    }
};

// Per channel: merges `ranks` blocks of (count, mean, m2) [3][C] in rank order with Chan et al.'s
// pairwise update into mean and the biased var; returns the total count (the same on every rank,
// as the blocks and their order are).
double merge_channel_stats(double* __restrict mean, double* __restrict var, const double* __restrict blocks,
                           int ranks, int64_t C) {
    double total = 0;
    for (int64_t c = 0; c < C; ++c) {
        double n = 0, m = 0, m2 = 0;
        for (int r = 0; r < ranks; ++r) {
            const double* b = blocks + static_cast<int64_t>(r) * 3 * C;
            const double nb = b[c], mb = b[C + c], m2b = b[2 * C + c];
            if (nb == 0) continue;
            const double sum = n + nb, delta = mb - m;
            m += delta * (nb / sum);
            m2 += m2b + delta * delta * (n * nb / sum);
            n = sum;
        }
        mean[c] = m;
        var[c] = n > 0 ? m2 / n : 0.0;
        total = n;
    }
    return total;
}


// ---- a normalisation, then max_pool2d(2) and relu, in one pass --------------------------------
// The CNN block's norm -> MaxPool2d(2) -> ReLU as one op, for planes that 2x2 windows tile (H, W
// even, at least 4 windows per row). The forward normalises each window's four values and writes
// only the pooled, rectified output (a quarter of the values) and one byte per output: which
// element of the window its gradient goes to (0..3, row-major), or kClosed when ReLU passes
// none. The normalised [N, C, H, W] is never written and read back (at batch 128 the first
// block's is 12.8 MB, beyond cache), and the backward reads the pooled gradient and the bytes
// instead of a [N, C, H, W] gradient that is three quarters zeros, once for the sums and once for
// dx. Values are normalised as batch_norm's forward does, ((x - mean) - mean_lo) * rstd * weight
// + bias in float, and the maxima, choices and ReLU follow torch's rules as max_pool2d and relu
// do (NaN propagates, the first of equal maxima wins, relu(-0.0) = -0.0).

using namespace pool2x2;

constexpr int32_t kClosed = 4;

// A plane's normalisation: its group's mean (hi + lo) and rstd, its channel's weight and bias.
struct PlaneNorm {
    float m, ml, s, w, b;
};

template <class F>
F xhat_of(F x, const PlaneNorm& p) {
    return ((x - p.m) - p.ml) * p.s;
}

// The choice bytes of a vector of outputs as int lanes.
template <class F>
MaskOf<F> load_choices(const uint8_t* p) {
    BytesOf<F> b;
    std::memcpy(&b, p, sizeof b);
    return __builtin_convertvector(b, MaskOf<F>);
}

// out: [H/2, W/2] = relu(max_pool2d(y, 2)) with y the plane x: [H, W] normalised by p;
// choice: [H/2, W/2] = the element of each window that gets its gradient, or kClosed.
// Vectors of F (W/2 >= lanes of F); a row's last vector overlaps the one before. Without
// kScalarNaN the choices are vector selects and the pass only notes whether a maximum was NaN
// (returns true; then the plane is done again with kScalarNaN, which takes torch's exact scalar
// scan for the vectors that hold one): a NaN test per vector cost as much as the selects.
template <class F, bool kScalarNaN>
bool norm_pool_relu_pass(float* __restrict out, uint8_t* __restrict choice, const float* __restrict x, PlaneNorm p,
                         int64_t H, int64_t W) {
    using I = MaskOf<F>;
    const int64_t N = kLanes<F>, OH = H / 2, OW = W / 2;
    const F zero = {};
    I nan_seen = {};
    for (int64_t oh = 0; oh < OH; ++oh) {
        const float* r0 = x + 2 * oh * W;
        const float* r1 = r0 + W;
        for (int64_t ow = 0; ow < OW; ow += N) {
            const int64_t s = std::min(ow, OW - N);
            const int64_t at = oh * OW + s;
            F a, b, c, d;
            deinterleave(r0 + 2 * s, a, b);
            deinterleave(r1 + 2 * s, c, d);
            a = xhat_of(a, p) * p.w + p.b, b = xhat_of(b, p) * p.w + p.b;
            c = xhat_of(c, p) * p.w + p.b, d = xhat_of(d, p) * p.w + p.b;
            const F m = scan(scan(scan(a, b), c), d);
            store(out + at, m < zero ? zero : m);
            const I zeros = {};
            I k = a == m ? zeros : b == m ? zeros + 1 : c == m ? zeros + 2 : zeros + 3;
            if constexpr (kScalarNaN) {
                bool nan = false;
                for (int64_t i = 0; i < N; ++i) nan |= m[i] != m[i];
                if (nan) {
                    // torch's exact scalar scan (the last NaN wins), as max_pool2d takes it.
                    for (int64_t i = 0; i < N; ++i) {
                        float unused;
                        k[i] = argmax_2x2(a[i], b[i], c[i], d[i], unused);
                    }
                }
            } else {
                nan_seen |= m != m;
            }
            // ReLU's gradient rule on its output relu(m): none where m <= 0 (NaN passes).
            k = m <= zero ? zeros + kClosed : k;
            const BytesOf<F> bytes = __builtin_convertvector(k, BytesOf<F>);
            std::memcpy(choice + at, &bytes, sizeof bytes);
        }
    }
    bool any = false;
    for (int64_t i = 0; i < N; ++i) any |= nan_seen[i] != 0;
    return any;
}

template <class F>
void norm_pool_relu_forward(float* __restrict out, uint8_t* __restrict choice, const float* __restrict x, PlaneNorm p,
                            int64_t H, int64_t W) {
    if (norm_pool_relu_pass<F, false>(out, choice, x, p, H, W)) norm_pool_relu_pass<F, true>(out, choice, x, p, H, W);
}

// sum_dy, sum_dy_xhat += the sums of dy and dy * xhat over the plane x: [H, W], where dy is
// dpool: [H/2, W/2] routed to each window's chosen element (the forward's choice bytes).
template <class F>
void norm_pool_relu_sums(double& sum_dy, double& sum_dy_xhat, const float* __restrict dpool,
                         const uint8_t* __restrict choice, const float* __restrict x, PlaneNorm p, int64_t H,
                         int64_t W) {
    const int64_t N = kLanes<F>, OH = H / 2, OW = W / 2;
    const F zero = {};
    F lane, va = {}, vb = {};
    for (int64_t i = 0; i < N; ++i) lane[i] = static_cast<float>(i);
    for (int64_t oh = 0; oh < OH; ++oh) {
        const float* r0 = x + 2 * oh * W;
        const float* r1 = r0 + W;
        for (int64_t ow = 0; ow < OW; ow += N) {
            const int64_t s = std::min(ow, OW - N);
            const int64_t at = oh * OW + s;
            const auto k = load_choices<F>(choice + at);
            // Closed windows and the lanes an overlapping last vector repeats add nothing.
            F g = load<F>(dpool + at);
            g = ((k == kClosed) | (lane < static_cast<float>(ow - s))) ? zero : g;
            F a, b, c, d;
            deinterleave(r0 + 2 * s, a, b);
            deinterleave(r1 + 2 * s, c, d);
            const F chosen = k == 0 ? a : k == 1 ? b : k == 2 ? c : d;
            va += g;
            vb += g * xhat_of(chosen, p);
        }
    }
    float a = 0.0f, b = 0.0f;
    for (int64_t i = 0; i < N; ++i) a += va[i], b += vb[i];
    sum_dy += a, sum_dy_xhat += b;
}

// dx: [H, W] (Store) = the normalisation's input gradient over the plane, dy being dpool routed
// by the choice bytes as in norm_pool_relu_sums; dnorm_mean, dnorm_norm_mean: the means of
// dy * weight and dy * weight * xhat over the plane's group (as batch_norm_dx takes them).
template <class F, class Store>
void norm_pool_relu_dx(float* __restrict dx, const float* __restrict dpool, const uint8_t* __restrict choice,
                       const float* __restrict x, PlaneNorm p, float dnorm_mean, float dnorm_norm_mean, int64_t H,
                       int64_t W) {
    const int64_t N = kLanes<F>, OH = H / 2, OW = W / 2;
    const F zero = {};
    F lane;
    for (int64_t i = 0; i < N; ++i) lane[i] = static_cast<float>(i);
    for (int64_t oh = 0; oh < OH; ++oh) {
        const float* r0 = x + 2 * oh * W;
        const float* r1 = r0 + W;
        float* d0 = dx + 2 * oh * W;
        float* d1 = d0 + W;
        for (int64_t ow = 0; ow < OW; ow += N) {
            const int64_t s = std::min(ow, OW - N);
            const int64_t at = oh * OW + s;
            const auto k = load_choices<F>(choice + at);
            const F g = load<F>(dpool + at);
            F a, b, c, d;
            deinterleave(r0 + 2 * s, a, b);
            deinterleave(r1 + 2 * s, c, d);
            // As batch_norm_dx: (dy * w - dnorm_mean - xhat * dnorm_norm_mean) * rstd.
            const auto grad = [&](F v, int32_t e) {
                const F dy = k == e ? g : zero;
                return (dy * p.w - dnorm_mean - xhat_of(v, p) * dnorm_norm_mean) * p.s;
            };
            F top0 = grad(a, 0), top1 = grad(b, 1), bottom0 = grad(c, 2), bottom1 = grad(d, 3);
            if (Store::beta != 0.0f) {
                // An overlapping last vector rewrites the same windows, but must not add twice.
                const auto again = lane < static_cast<float>(ow - s);
                top0 = again ? zero : top0, top1 = again ? zero : top1;
                bottom0 = again ? zero : bottom0, bottom1 = again ? zero : bottom1;
            }
            store_windows<F, Store>(d0, d1, s, top0, top1, bottom0, bottom1);
        }
    }
}

// The three plane kernels for the plane's width: vectors of 8 outputs, or 4 for rows of 4 to 7.
void plane_pool_forward(float* out, uint8_t* choice, const float* x, PlaneNorm p, int64_t H, int64_t W) {
    if (W / 2 >= 8) return norm_pool_relu_forward<Floats8>(out, choice, x, p, H, W);
    norm_pool_relu_forward<Floats4>(out, choice, x, p, H, W);
}
void plane_pool_sums(double& sum_dy, double& sum_dy_xhat, const float* dpool, const uint8_t* choice, const float* x,
                     PlaneNorm p, int64_t H, int64_t W) {
    if (W / 2 >= 8) return norm_pool_relu_sums<Floats8>(sum_dy, sum_dy_xhat, dpool, choice, x, p, H, W);
    norm_pool_relu_sums<Floats4>(sum_dy, sum_dy_xhat, dpool, choice, x, p, H, W);
}
template <class Store>
void plane_pool_dx(float* dx, const float* dpool, const uint8_t* choice, const float* x, PlaneNorm p, float dnorm_mean,
                   float dnorm_norm_mean, int64_t H, int64_t W) {
    if (W / 2 >= 8) return norm_pool_relu_dx<Floats8, Store>(dx, dpool, choice, x, p, dnorm_mean, dnorm_norm_mean, H, W);
    norm_pool_relu_dx<Floats4, Store>(dx, dpool, choice, x, p, dnorm_mean, dnorm_norm_mean, H, W);
}

// True when x: [N, C, H, W] is pooled inside the normalisation's pass (2x2 windows tile every
// plane, at least 4 per row); otherwise the *_max_pool2d_relu ops run the three ops in turn.
bool pools_in_pass(const Tensor& x) {
    return x.dim() == 4 && x.dtype() == kFloat32 && x.size(2) % 2 == 0 && x.size(3) % 2 == 0 && x.size(3) / 2 >= 4;
}

// Choice bytes live in a bool tensor's storage (bytes 0..4, never read as bools).
uint8_t* choice_bytes(const Tensor& t) { return reinterpret_cast<uint8_t*>(t.data_ptr<bool>()); }

// batch_norm (batch statistics, one process) -> max_pool2d(2) -> relu: the backward, split by
// samples (as NativeBatchNormBackward's images): each plane's sums of dy and dy * xhat, added
// per channel in sample order, then dx.
class BatchNormMaxPool2dReluBackward final : public OpNode {
public:
    int64_t N = 0, C = 0, H = 0, W = 0;
    const char* name() const override { return "BatchNormMaxPool2dReluBackward"; }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &weight = saved(1), &mean = saved(2), &mean_lo = saved(3), &rstd = saved(4);
        const uint8_t* choice = choice_bytes(saved(5));
        const GradOut dx = grad_out(0), dw = grad_out(1), db = grad_out(2);
        const int64_t L = H * W, P = L / 4;
        const Tensor sums = empty({2, C});  // per channel: sum of dy, sum of dy * xhat
        float* s = sums.data();
        const float inv_count = 1.0f / static_cast<float>(N * L);
        // Pointers taken once: Tensor::data() is an out-of-line call, and these loops visit every
        // (sample, channel) plane (the CNN's two blocks: 12,288 at batch 128; taken per plane, the
        // calls were 0.7% of perf's samples of its BatchNorm epoch).
        const float *m = mean.data(), *m_lo = mean_lo.data(), *r = rstd.data(), *w = data_or_null(weight);
        const float *dy = dout.data(), *xd = x.data();
        const auto plane = [&](int64_t c) { return PlaneNorm{m[c], m_lo[c], r[c], w ? w[c] : 1.0f, 0.0f}; };
        // Each sample's sums ([N, 2, C], as batch_norm_block_sums's), added in sample order.
        double* blocks = double_scratch(N * 2 * C);
        for_each_chunk(N, C * L, [&](int64_t n0, int64_t n1) {
            for (int64_t n = n0; n < n1; ++n) {
                for (int64_t c = 0; c < C; ++c) {
                    const int64_t i = n * C + c;
                    double& a = blocks[n * 2 * C + c];
                    double& b = blocks[n * 2 * C + C + c];
                    a = b = 0.0;
                    plane_pool_sums(a, b, dy + i * P, choice + i * P, xd + i * L, plane(c), H, W);
                }
            }
        });
        add_block_sums(s, s + C, blocks, N, C);
        const auto dx_planes = [&]<class Store>(float* d) {
            for_each_chunk(N, C * L, [&](int64_t n0, int64_t n1) {
                for (int64_t i = n0 * C; i < n1 * C; ++i) {
                    const int64_t c = i % C;
                    const PlaneNorm p = plane(c);
                    plane_pool_dx<Store>(d + i * L, dy + i * P, choice + i * P, xd + i * L, p,
                                         s[c] * p.w * inv_count, s[C + c] * p.w * inv_count, H, W);
                }
            });
        };
        if (dx) dx.fresh ? dx_planes.template operator()<Overwrite>(dx.data) : dx_planes.template operator()<Accumulate>(dx.data);
        if (db) db.store(s, C);
        if (dw) dw.store(s + C, C);
    }
};

}  // namespace
}  // namespace detail

namespace {

// batch_norm and dist::sync_batch_norm: with `sync` (training only) the statistics of each channel
// are every rank's, from one all-gather of (count, mean, m2), and the backward all-reduces its sums.
Tensor batch_norm_impl(const Tensor& x_in, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight_in, const Tensor& bias_in, bool training, std::optional<double> momentum,
                       double eps, int64_t num_batches_tracked, bool sync, const char* op, bool pool_relu = false) {
    NORMNET_CHECK(x_in.dim() >= 2, op, ": expected an input of at least 2 dimensions [N, C, *], got shape ",
                  x_in.shape());
    for (const Tensor* t : {&x_in, &running_mean, &running_var, &weight_in, &bias_in}) {
        NORMNET_CHECK(!t->defined() || t->dtype() == kFloat32, op, ": expected float32 tensors, got ", t->dtype());
    }
    const int64_t N = x_in.size(0), C = x_in.size(1), L = detail::spatial_size(x_in);
    for (const Tensor* p : {&running_mean, &running_var, &weight_in, &bias_in}) {
        NORMNET_CHECK(!p->defined() || (p->dim() == 1 && p->size(0) == C), op, ": a parameter or buffer of shape ",
                      p->shape(), " does not match ", C, " channels of input ", x_in.shape());
    }
    NORMNET_CHECK(running_mean.defined() == running_var.defined(), op,
                  ": give both running_mean and running_var or neither");
    NORMNET_CHECK(training || running_mean.defined(), "running_mean must be defined in evaluation mode");
    if (training && !sync) {
        // As torch: one value per channel has no variance; none (an empty batch) is let through.
        NORMNET_CHECK(N * L != 1, "Expected more than 1 value per channel when training, got input size ", x_in.shape());
    }
    const Tensor x = x_in.contiguous(), weight = detail::contiguous_or_empty(weight_in),
                 bias = detail::contiguous_or_empty(bias_in);
    // Per channel, in double: mean and biased variance (then 1 / sqrt(var + eps)); then each
    // block's (count, mean, m2) [n_blocks, 3, C] (see kFlatBlockRows).
    const int64_t n_blocks = detail::stat_blocks(N, L);
    double* mean_d = detail::double_scratch(2 * C + n_blocks * 3 * C);
    double* var_d = mean_d + C;
    double count = static_cast<double>(N * L);
    if (training) {
        if (N * L > 0) {
            detail::channel_stats_blocks(mean_d + 2 * C, x.data(), N, C, L);
            detail::merge_channel_stats(mean_d, var_d, mean_d + 2 * C, static_cast<int>(n_blocks), C);
        } else {
            std::fill_n(mean_d, 2 * C, 0.0);
        }
        if (sync) {
            // This rank's (count, mean, m2) per channel, gathered from every rank and merged.
            const int ranks = dist::get_world_size();
            std::vector<double> local(static_cast<size_t>(3 * C)), blocks(static_cast<size_t>(3 * C * ranks));
            for (int64_t c = 0; c < C; ++c) {
                local[static_cast<size_t>(c)] = count;
                local[static_cast<size_t>(C + c)] = mean_d[c];
                local[static_cast<size_t>(2 * C + c)] = var_d[c] * count;
            }
            dist::all_gather(local.data(), 3 * C, blocks.data());
            count = detail::merge_channel_stats(mean_d, var_d, blocks.data(), ranks, C);
            // The batch-1 rule on the global count: every rank sees the same count, so all refuse.
            NORMNET_CHECK(count > 1, "Expected more than 1 value per channel when training, got ", count,
                          " over all ", ranks, " ranks (this rank's input size ", x_in.shape(), ")");
        }
        if (running_mean.defined() && count > 0) {  // an empty batch leaves them, as torch
            // PyTorch's momentum=None is a cumulative average over the batches seen so far.
            const double m = momentum ? *momentum : 1.0 / static_cast<double>(std::max<int64_t>(num_batches_tracked, 1));
            const double unbias = count / (count - 1);
            float* rm = running_mean.data();
            float* rv = running_var.data();
            for (int64_t c = 0; c < C; ++c) {
                rm[c] = static_cast<float>((1.0 - m) * rm[c] + m * mean_d[c]);
                rv[c] = static_cast<float>((1.0 - m) * rv[c] + m * var_d[c] * unbias);
            }
            running_mean.bump_version();
            running_var.bump_version();
        }
    } else {
        for (int64_t c = 0; c < C; ++c) {
            mean_d[c] = running_mean.data()[c];
            var_d[c] = running_var.data()[c];
        }
    }
    double* rstd_d = var_d;
    for (int64_t c = 0; c < C; ++c) rstd_d[c] = 1.0 / std::sqrt(var_d[c] + eps);
    Tensor mean = empty({C}), mean_lo = empty({C}), rstd = empty({C});
    for (int64_t c = 0; c < C; ++c) {
        detail::split_mean(mean_d[c], mean.data()[c], mean_lo.data()[c]);
        rstd.data()[c] = static_cast<float>(rstd_d[c]);
    }
    if (pool_relu) {
        // relu(max_pool2d(., 2)) of the normalised planes, written as they are normalised.
        const int64_t H = x.size(2), W = x.size(3), P = L / 4;
        Tensor out = empty({N, C, H / 2, W / 2}), choice = empty({N * C * P}, kBool);
        uint8_t* bytes = detail::choice_bytes(choice);
        // Pointers taken once (see BatchNormMaxPool2dReluBackward).
        const float *m = mean.data(), *m_lo = mean_lo.data(), *r = rstd.data();
        const float *w = detail::data_or_null(weight), *b = detail::data_or_null(bias), *xd = x.data();
        float* o = out.data();
        detail::for_each_chunk(N, C * L, [&](int64_t n0, int64_t n1) {
            for (int64_t n = n0; n < n1; ++n) {
                for (int64_t c = 0; c < C; ++c) {
                    const int64_t i = n * C + c;
                    const detail::PlaneNorm p{m[c], m_lo[c], r[c], w ? w[c] : 1.0f, b ? b[c] : 0.0f};
                    detail::plane_pool_forward(o + i * P, bytes + i * P, xd + i * L, p, H, W);
                }
            }
        });
        if (auto* node = detail::record<detail::BatchNormMaxPool2dReluBackward>(
                out, {x, weight, bias}, {x, weight, mean, mean_lo, rstd, choice})) {
            node->N = N, node->C = C, node->H = H, node->W = W;
        }
        return out;
    }
    Tensor out = empty(x.shape());
    if (N * L > 0) {
        detail::for_each_chunk(N, C * L, [&](int64_t n0, int64_t n1) {
            const int64_t at = n0 * C * L;
            const float *w = detail::data_or_null(weight), *b = detail::data_or_null(bias);
            if (L == 1) {
                detail::batch_norm_apply_flat(out.data() + at, x.data() + at, mean_d, rstd_d, w, b, n1 - n0, C, C);
            } else {
                detail::batch_norm_apply_planes(out.data() + at, x.data() + at, mean.data(), mean_lo.data(),
                                                rstd.data(), w, b, n1 - n0, C, L, C * L);
            }
        });
    }
    if (auto* node = detail::record<detail::NativeBatchNormBackward>(out, {x, weight, bias},
                                                                      {x, weight, mean, mean_lo, rstd, bias})) {
        node->batch_stats = training;
        node->sync = sync;
        node->N = N, node->C = C, node->L = L;
        node->count = count;
    }
    return out;
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, std::optional<double> momentum, double eps,
                  int64_t num_batches_tracked) {
    return batch_norm_impl(x, running_mean, running_var, weight, bias, training, momentum, eps, num_batches_tracked,
                           false, "batch_norm");
}

Tensor batch_norm_max_pool2d_relu(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                                  const Tensor& weight, const Tensor& bias, bool training, std::optional<double> momentum,
                                  double eps, int64_t num_batches_tracked) {
    if (!training || !detail::pools_in_pass(x) || x.size(0) * x.size(1) == 0) {
        return relu(max_pool2d(batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps,
                                          num_batches_tracked),
                               2));
    }
    return batch_norm_impl(x, running_mean, running_var, weight, bias, true, momentum, eps, num_batches_tracked, false,
                           "batch_norm", true);
}

Tensor dist::sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                             const Tensor& weight, const Tensor& bias, std::optional<double> momentum, double eps,
                             int64_t num_batches_tracked) {
    return batch_norm_impl(x, running_mean, running_var, weight, bias, true, momentum, eps, num_batches_tracked,
                           true, "sync_batch_norm");
}

namespace detail {
namespace {

// ---- group_norm -------------------------------------------------------------------------------

// Groups per chunk of group_norm's parallel loops: about 16k values, at least one group.
int64_t group_grain(int64_t values_per_group) { return item_grain(values_per_group, 1); }
// x: [N, C, L] is N * G groups ("rows") of Cg = C / G consecutive channels: Cg * L contiguous
// values each, with per-channel weight and bias. A kernel gets `rows` consecutive groups starting
// at group `first` (the channels of group r are (r % G) * Cg ...).

// out: [rows, Cg * L], mean, mean_lo, rstd: [rows]; stats: [rows, 2] (double mean and biased
// variance, for instance_norm's running statistics; may be null); inp: [rows, Cg * L];
// weight, bias: [C] (either may be null)
void group_norm_forward(float* __restrict out, float* __restrict mean, float* __restrict mean_lo,
                        float* __restrict rstd, double* __restrict stats, const float* __restrict inp,
                        const float* __restrict weight, const float* __restrict bias, int64_t first, int64_t rows,
                        int64_t G, int64_t Cg, int64_t L, double eps) {
    const int64_t M = Cg * L;
    for (int64_t r = 0; r < rows; ++r) {
        const float* x = inp + r * M;
        float* y = out + r * M;
        double m, sq;
        mean_and_m2(x, M, m, sq);
        const double var = M > 0 ? sq / static_cast<double>(M) : 0.0;
        const double s = 1.0 / std::sqrt(var + eps);
        const int64_t c0 = ((first + r) % G) * Cg;
        for (int64_t c = 0; c < Cg; ++c) {
            const float w = weight ? weight[c0 + c] : 1.0f;
            const float b = bias ? bias[c0 + c] : 0.0f;
            const float* xc = x + c * L;
            float* yc = y + c * L;
            for (int64_t l = 0; l < L; ++l) yc[l] = static_cast<float>((xc[l] - m) * s) * w + b;
        }
        split_mean(m, mean[r], mean_lo[r]);
        rstd[r] = static_cast<float>(s);
        if (stats) stats[2 * r] = m, stats[2 * r + 1] = var;
    }
}

// dinp: [rows, Cg * L] (Store; may be null); dweight, dbias: [C] += (may be null); dout, inp:
// [rows, Cg * L]; mean, mean_lo, rstd: [rows]; weight: [C] (may be null). Two passes per group:
// the per-channel sums of dy and dy * xhat (the parameter gradients, and weighted by the channels'
// weights the two group means that couple every dx of the group to every dy), then dx.
// dout == null: dinp holds dy and is written over (Overwrite), each group after its sums.
template <class Store>
void group_norm_backward(float* __restrict dinp, float* __restrict dweight, float* __restrict dbias,
                         const float* __restrict dout, const float* __restrict inp, const float* __restrict mean,
                         const float* __restrict mean_lo, const float* __restrict rstd,
                         const float* __restrict weight, int64_t first, int64_t rows, int64_t G, int64_t Cg,
                         int64_t L) {
    const int64_t M = Cg * L;
    const float* dy = dout ? dout : dinp;
    for (int64_t r = 0; r < rows; ++r) {
        const float m = mean[r], ml = mean_lo[r], s = rstd[r];
        const int64_t c0 = ((first + r) % G) * Cg;
        double dnorm_sum = 0.0, dnorm_xhat_sum = 0.0;
        for (int64_t c = 0; c < Cg; ++c) {
            float a, b;
            dy_sums(a, b, dy + r * M + c * L, inp + r * M + c * L, m, ml, s, L);
            if (dbias) dbias[c0 + c] += a;
            if (dweight) dweight[c0 + c] += b;
            const float w = weight ? weight[c0 + c] : 1.0f;
            dnorm_sum += static_cast<double>(w * a);
            dnorm_xhat_sum += static_cast<double>(w * b);
        }
        if (!dinp) continue;
        const float dnorm_mean = static_cast<float>(dnorm_sum / static_cast<double>(M));
        const float dnorm_norm_mean = static_cast<float>(dnorm_xhat_sum / static_cast<double>(M));
        for (int64_t c = 0; c < Cg; ++c) {
            const int64_t at = r * M + c * L;
            batch_norm_dx<Store>(dinp + at, dout ? dout + at : nullptr, inp + at, m, ml, s, weight ? weight[c0 + c] : 1.0f, dnorm_mean,
                                 dnorm_norm_mean, true, L);
        }
    }
}

class NativeGroupNormBackward final : public OpNode {
public:
    int64_t N = 0, C = 0, L = 0, G = 1;
    const char* name() const override { return "NativeGroupNormBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &weight = saved(1), &mean = saved(2), &mean_lo = saved(3), &rstd = saved(4);
        // dx written over dout when the engine allows (grad_over_dout; each group's dx after its sums).
        GradOut dx = grad_over_dout(0, dout);
        const bool over = static_cast<bool>(dx);
        if (!over) dx = grad_out(0);
        const GradOut dw = grad_out(1), db = grad_out(2);
        const int sums = (dw ? 1 : 0) + (db ? 1 : 0);
        const int64_t Cg = C / G, M = Cg * L;
        const auto rows = [&]<class Store>(float* d) {
            return rows_with_partial_sums(
                N * G, C, sums,
                [&](int64_t row, int64_t count, float* slot) {
                    group_norm_backward<Store>(d ? d + row * M : nullptr, dw ? slot : nullptr,
                                               db ? slot + (dw ? C : 0) : nullptr, over ? nullptr : dout.data() + row * M,
                                               x.data() + row * M, mean.data() + row, mean_lo.data() + row,
                                               rstd.data() + row, data_or_null(weight), row, count, G, Cg, L);
                },
                group_grain(M));
        };
        const Tensor param_sums = dx.fresh ? rows.template operator()<Overwrite>(dx.data)
                                           : rows.template operator()<Accumulate>(dx.data);
        if (dw) dw.store(param_sums.data(), C);
        if (db) db.store(param_sums.data() + (dw ? C : 0), C);
    }
};

// group_norm -> max_pool2d(2) -> relu (the pass of the normalisations above): per group of
// rows [first, first + rows) of x: [N * G, Cg, H, W], the statistics as group_norm_forward takes
// them, then each channel's plane normalised, pooled and rectified into out: [rows, Cg, H/2,
// W/2] with its choice bytes.
void group_norm_pool_forward(float* __restrict out, uint8_t* __restrict choice, float* __restrict mean,
                             float* __restrict mean_lo, float* __restrict rstd, double* __restrict stats,
                             const float* __restrict inp, const float* __restrict weight, const float* __restrict bias,
                             int64_t first, int64_t rows, int64_t G, int64_t Cg, int64_t H, int64_t W, double eps) {
    const int64_t L = H * W, M = Cg * L, P = L / 4;
    for (int64_t r = 0; r < rows; ++r) {
        double m, sq;
        mean_and_m2(inp + r * M, M, m, sq);
        const double var = M > 0 ? sq / static_cast<double>(M) : 0.0;
        split_mean(m, mean[r], mean_lo[r]);
        rstd[r] = static_cast<float>(1.0 / std::sqrt(var + eps));
        if (stats) stats[2 * r] = m, stats[2 * r + 1] = var;
        const int64_t c0 = ((first + r) % G) * Cg;
        for (int64_t c = 0; c < Cg; ++c) {
            const PlaneNorm p{mean[r], mean_lo[r], rstd[r], weight ? weight[c0 + c] : 1.0f, bias ? bias[c0 + c] : 0.0f};
            const int64_t i = r * Cg + c;
            plane_pool_forward(out + i * P, choice + i * P, inp + i * L, p, H, W);
        }
    }
}

// Its backward for the same rows (Store for dinp, may be null); dweight, dbias: [C] += (may be
// null): per group, each channel's sums (the parameter gradients, and weighted by the channels'
// weights the group's two means), then dx, as group_norm_backward.
template <class Store>
void group_norm_pool_backward(float* __restrict dinp, float* __restrict dweight, float* __restrict dbias,
                              const float* __restrict dpool, const uint8_t* __restrict choice,
                              const float* __restrict inp, const float* __restrict mean,
                              const float* __restrict mean_lo, const float* __restrict rstd,
                              const float* __restrict weight, int64_t first, int64_t rows, int64_t G, int64_t Cg,
                              int64_t H, int64_t W) {
    const int64_t L = H * W, M = Cg * L, P = L / 4;
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t c0 = ((first + r) % G) * Cg;
        double dnorm_sum = 0.0, dnorm_xhat_sum = 0.0;
        for (int64_t c = 0; c < Cg; ++c) {
            const int64_t i = r * Cg + c;
            double a = 0.0, b = 0.0;
            plane_pool_sums(a, b, dpool + i * P, choice + i * P, inp + i * L, PlaneNorm{mean[r], mean_lo[r], rstd[r], 1.0f, 0.0f},
                            H, W);
            if (dbias) dbias[c0 + c] += static_cast<float>(a);
            if (dweight) dweight[c0 + c] += static_cast<float>(b);
            const double w = weight ? weight[c0 + c] : 1.0f;
            dnorm_sum += w * a;
            dnorm_xhat_sum += w * b;
        }
        if (!dinp) continue;
        const float dnorm_mean = static_cast<float>(dnorm_sum / static_cast<double>(M));
        const float dnorm_norm_mean = static_cast<float>(dnorm_xhat_sum / static_cast<double>(M));
        for (int64_t c = 0; c < Cg; ++c) {
            const int64_t i = r * Cg + c;
            const PlaneNorm p{mean[r], mean_lo[r], rstd[r], weight ? weight[c0 + c] : 1.0f, 0.0f};
            plane_pool_dx<Store>(dinp + i * L, dpool + i * P, choice + i * P, inp + i * L, p, dnorm_mean, dnorm_norm_mean,
                                 H, W);
        }
    }
}

class GroupNormMaxPool2dReluBackward final : public OpNode {
public:
    int64_t N = 0, C = 0, H = 0, W = 0, G = 1;
    const char* name() const override { return "GroupNormMaxPool2dReluBackward"; }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &weight = saved(1), &mean = saved(2), &mean_lo = saved(3), &rstd = saved(4);
        const uint8_t* choice = choice_bytes(saved(5));
        const GradOut dx = grad_out(0), dw = grad_out(1), db = grad_out(2);
        const int sums = (dw ? 1 : 0) + (db ? 1 : 0);
        const int64_t Cg = C / G, M = Cg * H * W, Q = Cg * H * W / 4;
        const auto rows = [&]<class Store>(float* d) {
            return rows_with_partial_sums(
                N * G, C, sums,
                [&](int64_t row, int64_t count, float* slot) {
                    group_norm_pool_backward<Store>(d ? d + row * M : nullptr, dw ? slot : nullptr,
                                                    db ? slot + (dw ? C : 0) : nullptr, dout.data() + row * Q,
                                                    choice + row * Q, x.data() + row * M, mean.data() + row,
                                                    mean_lo.data() + row, rstd.data() + row, data_or_null(weight), row,
                                                    count, G, Cg, H, W);
                },
                group_grain(M));
        };
        const Tensor param_sums = dx.fresh ? rows.template operator()<Overwrite>(dx.data)
                                           : rows.template operator()<Accumulate>(dx.data);
        if (dw) dw.store(param_sums.data(), C);
        if (db) db.store(param_sums.data() + (dw ? C : 0), C);
    }
};

// group_norm, also returning each group's double mean and biased variance in `stats` ([N * G, 2]) when given;
// with pool_relu, relu(max_pool2d(group_norm(x), 2)) in one pass (x: [N, C, H, W], pools_in_pass).
Tensor group_norm_impl(const Tensor& x_in, int64_t G, const Tensor& weight_in, const Tensor& bias_in, double eps,
                       double* stats, const char* op, bool pool_relu = false) {
    for (const Tensor* t : {&x_in, &weight_in, &bias_in}) {
        NORMNET_CHECK(!t->defined() || t->dtype() == kFloat32, op, ": expected float32 tensors, got ", t->dtype());
    }
    NORMNET_CHECK(x_in.dim() >= 2, op, ": expected an input of at least 2 dimensions [N, C, *], got shape ",
                  x_in.shape());
    const int64_t N = x_in.size(0), C = x_in.size(1);
    NORMNET_CHECK(G > 0 && C % G == 0, op, ": Expected number of channels in input to be divisible by num_groups, "
                  "but got input of shape ", x_in.shape(), " and num_groups=", G);
    for (const Tensor* p : {&weight_in, &bias_in}) {
        const char* what = p == &weight_in ? "weight" : "bias";
        NORMNET_CHECK(!p->defined() || (p->dim() == 1 && p->size(0) == C), op, ": Expected ", what,
                      " to be a vector of size equal to the number of channels in input, but got ", what, " of shape ",
                      p->shape(), " and input of shape ", x_in.shape());
    }
    const int64_t L = spatial_size(x_in), Cg = C / G, M = Cg * L;
    const Tensor x = x_in.contiguous(), weight = contiguous_or_empty(weight_in), bias = contiguous_or_empty(bias_in);
    Tensor mean = empty({N * G}), mean_lo = empty({N * G}), rstd = empty({N * G});
    if (pool_relu) {
        const int64_t H = x.size(2), W = x.size(3), Q = M / 4;
        Tensor out = empty({N, C, H / 2, W / 2}), choice = empty({N * G * Q}, kBool);
        uint8_t* bytes = choice_bytes(choice);
        parallel_for(N * G, group_grain(M), [&](int64_t b, int64_t e) {
            group_norm_pool_forward(out.data() + b * Q, bytes + b * Q, mean.data() + b, mean_lo.data() + b,
                                    rstd.data() + b, stats ? stats + 2 * b : nullptr, x.data() + b * M,
                                    data_or_null(weight), data_or_null(bias), b, e - b, G, Cg, H, W, eps);
        });
        if (auto* node = record<GroupNormMaxPool2dReluBackward>(out, {x, weight, bias},
                                                                {x, weight, mean, mean_lo, rstd, choice})) {
            node->N = N, node->C = C, node->H = H, node->W = W, node->G = G;
        }
        return out;
    }
    Tensor out = empty(x.shape());
    parallel_for(N * G, group_grain(M), [&](int64_t b, int64_t e) {
        group_norm_forward(out.data() + b * M, mean.data() + b, mean_lo.data() + b, rstd.data() + b,
                           stats ? stats + 2 * b : nullptr, x.data() + b * M, data_or_null(weight), data_or_null(bias),
                           b, e - b, G, Cg, L, eps);
    });
    if (auto* node = record<NativeGroupNormBackward>(out, {x, weight, bias}, {x, weight, mean, mean_lo, rstd})) {
        node->N = N, node->C = C, node->L = L, node->G = G;
    }
    return out;
}

}  // namespace
}  // namespace detail

namespace {

// torch's F.group_norm refuses an input whose N * C / G * spatial size is 1 (its
// _verify_batch_size on [N * C / G, G, *]), in training and eval alike: a batch of one sample
// with one channel per group and one value per channel.
void check_group_norm_size(const Tensor& x, int64_t num_groups) {
    if (x.dim() < 2 || num_groups <= 0) return;  // group_norm_impl says what is wrong
    NORMNET_CHECK(x.size(0) * x.size(1) / num_groups * detail::spatial_size(x) != 1,
                  "group_norm: Expected more than 1 value per channel when training, got input size ", x.shape());
}

}  // namespace

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
    check_group_norm_size(x, num_groups);
    return detail::group_norm_impl(x, num_groups, weight, bias, eps, nullptr, "group_norm");
}

Tensor group_norm_max_pool2d_relu(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                                  double eps) {
    check_group_norm_size(x, num_groups);
    if (!detail::pools_in_pass(x) || x.size(0) * x.size(1) == 0) {
        return relu(max_pool2d(group_norm(x, num_groups, weight, bias, eps), 2));
    }
    return detail::group_norm_impl(x, num_groups, weight, bias, eps, nullptr, "group_norm", true);
}

Tensor instance_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                     const Tensor& bias, bool use_input_stats, double momentum, double eps) {
    NORMNET_CHECK(x.dim() >= 2, "instance_norm: expected an input of at least 2 dimensions [N, C, *], got shape ",
                  x.shape());
    NORMNET_CHECK(running_mean.defined() == running_var.defined(),
                  "instance_norm: give both running_mean and running_var or neither");
    // An empty batch: torch 1.13 fails with an IndexError when there is a weight or a bias, and
    // sets the running statistics to NaN (it averages the batch's copies of them, in eval too);
    // both refused.
    NORMNET_CHECK(x.size(0) > 0 || (!weight.defined() && !bias.defined()), "instance_norm: an empty batch (input of "
                  "shape ", x.shape(), ") with a weight or bias is refused, as torch 1.13 refuses it");
    NORMNET_CHECK(x.size(0) > 0 || !running_mean.defined(), "instance_norm: an empty batch (input of shape ", x.shape(),
                  ") with running statistics is refused (torch 1.13 sets them to NaN)");
    if (!use_input_stats) {
        // Normalised by the running statistics: per-channel constants, as batch_norm in eval mode.
        NORMNET_CHECK(running_mean.defined(), "Expected running_mean and running_var to be defined when "
                      "use_input_stats is false");
        return batch_norm(x, running_mean, running_var, weight, bias, false, momentum, eps);
    }
    const int64_t N = x.size(0), C = x.size(1), L = detail::spatial_size(x);
    NORMNET_CHECK(L > 1, "Expected more than 1 spatial element when training, got input size ", x.shape());
    for (const Tensor* p : {&running_mean, &running_var}) {
        NORMNET_CHECK(!p->defined() || (p->dtype() == kFloat32 && p->dim() == 1 && p->size(0) == C),
                      "instance_norm: a running statistic of shape ", p->shape(), " does not match ", C,
                      " channels of input ", x.shape());
    }
    double* stats = running_mean.defined() ? detail::double_scratch(2 * N * C) : nullptr;
    Tensor out = detail::group_norm_impl(x, C, weight, bias, eps, stats, "instance_norm");
    if (stats) {
        // As torch: each instance updates its copy of the running statistics, and the copies are
        // averaged over the batch.
        const double unbias = static_cast<double>(L) / static_cast<double>(L - 1);
        float* rm = running_mean.data();
        float* rv = running_var.data();
        for (int64_t c = 0; c < C; ++c) {
            double m = 0.0, v = 0.0;
            for (int64_t n = 0; n < N; ++n) m += stats[2 * (n * C + c)], v += stats[2 * (n * C + c) + 1] * unbias;
            rm[c] = static_cast<float>((1.0 - momentum) * rm[c] + momentum * (m / static_cast<double>(N)));
            rv[c] = static_cast<float>((1.0 - momentum) * rv[c] + momentum * (v / static_cast<double>(N)));
        }
        running_mean.bump_version();
        running_var.bump_version();
    }
    return out;
}

}  // namespace normnet

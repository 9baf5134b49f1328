// Reductions over any set of dimensions (keepdim as PyTorch): sum and mean (float32, and int64 or
// bool inputs), var and std (correction), logsumexp, norm, and the scan cumsum; sum_to for the
// backward of broadcasting. The max/min family is in minmax.cpp, topk in sort.cpp.
//
// Sums are the bandwidth-bound ones and have their own kernels: a block of dimensions
// [outer, R, inner] -> [outer, inner], several reduced blocks done innermost first. Rows
// (inner = 1) and columns (inner > 1) add in float over short runs (64 elements per lane) and
// fold those partial sums into double, which costs little and keeps the error of a 16M-element
// sum near double's. The other reductions run on reduce_lanes (reduce.hpp) and accumulate in
// double; var and std take two passes (mean, then squared deviations), never E[x²] - E[x]².
#include "reduce.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "normnet/ops.hpp"

namespace normnet {
namespace detail {

// ---- Dimensions ------------------------------------------------------------------------------

uint32_t dim_mask(const Shape& dims, int ndim, const char* op) {
    if (dims.empty()) return ndim == 0 ? 0u : (ndim >= 32 ? ~0u : (1u << ndim) - 1u);
    uint32_t mask = 0;
    for (int64_t d : dims) {
        const int64_t n = std::max(ndim, 1);
        NORMNET_CHECK(d >= -n && d < n, op, ": dimension ", d, " out of range for a tensor of ", ndim, " dimensions");
        const int w = static_cast<int>(d < 0 ? d + n : d);
        NORMNET_CHECK(!((mask >> w) & 1u), op, ": dim ", w, " appears multiple times in the list of dims");
        mask |= 1u << w;
    }
    return ndim == 0 ? 0u : mask;
}

uint32_t one_dim_mask(int64_t dim, int ndim, const char* op) { return dim_mask(Shape{dim}, ndim, op); }

Shape reduced_shape(const Shape& shape, uint32_t mask, bool keepdim) {
    Shape out;
    for (int d = 0; d < shape.size(); ++d) {
        if (!((mask >> d) & 1u)) {
            out.push_back(shape[d]);
        } else if (keepdim) {
            out.push_back(1);
        }
    }
    return out;
}

Grouped group_dims(const Tensor& x_in, uint32_t mask, bool keepdim) {
    Grouped g;
    g.out_shape = reduced_shape(x_in.shape(), mask, keepdim);
    const Shape& shape = x_in.shape();
    const int nd = shape.size();
    // Reduced dims (size 1 aside) must form one run; otherwise move them after the kept ones.
    int runs = 0;
    bool in_run = false;
    for (int d = 0; d < nd; ++d) {
        if (shape[d] == 1) continue;
        const bool reduced = (mask >> d) & 1u;
        if (reduced && !in_run) ++runs;
        in_run = reduced;
    }
    Tensor x = x_in;
    uint32_t m = mask;
    if (runs > 1) {
        Shape perm;
        for (int d = 0; d < nd; ++d) {
            if (!((mask >> d) & 1u)) perm.push_back(d);
        }
        const int kept = perm.size();
        for (int d = 0; d < nd; ++d) {
            if ((mask >> d) & 1u) perm.push_back(d);
        }
        x = x.permute(perm);
        m = ((1u << nd) - 1u) & ~((1u << kept) - 1u);
    }
    g.x = x.contiguous();
    // The block is found in the (possibly permuted) layout of g.x, whose sizes are not x_in's.
    const Shape& sizes = g.x.shape();
    int first = nd, last = -1;
    for (int d = 0; d < nd; ++d) {
        if (((m >> d) & 1u) && sizes[d] != 1) first = std::min(first, d), last = d;
    }
    if (last < 0) {  // nothing but size-1 dims reduced: each element is its own output
        g.outer = x.numel();
        return g;
    }
    for (int d = 0; d < nd; ++d) {
        const int64_t size = sizes[d];
        if (d < first) {
            g.outer *= size;
        } else if (d > last) {
            g.inner *= size;
        } else {
            g.R *= size;
        }
    }
    return g;
}

namespace {

// ---- Sum kernels -----------------------------------------------------------------------------

constexpr int64_t kStrip = 1024;  // columns summed together: their float and double sums stay in L1

// Σ x[0, n) in double: 64 float lanes over chunks of 4096 (64 additions per lane), folded into double.
double sum_long(const float* __restrict x, int64_t n) {
    constexpr int64_t kChunk = 4096;
    double total = 0.0;
    for (int64_t b = 0; b < n; b += kChunk) {
        const int64_t m = std::min(kChunk, n - b);
        const float* __restrict p = x + b;
        std::array<float, 64> acc{};
        int64_t i = 0;
        for (; i + 64 <= m; i += 64) {
            for (int j = 0; j < 64; ++j) acc[static_cast<size_t>(j)] += p[i + j];
        }
        for (int j = 0; i + j < m; ++j) acc[static_cast<size_t>(j)] += p[i + j];
        // Fold the four vectors of lanes in float (cheap), then 16 lanes in double.
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (int j = 0; j < 16; ++j) {
            const auto k = static_cast<size_t>(j);
            s += (acc[k] + acc[k + 16]) + (acc[k + 32] + acc[k + 48]);
        }
        total += s;
    }
    return total;
}

// Σ of a row of R in [17, 256): double lanes, vectorised by the simd reduction.
double sum_medium(const float* __restrict x, int64_t n) {
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (int64_t r = 0; r < n; ++r) s += x[r];
    return s;
}

// out: [outer] (Store) = scale * Σ_r in: [outer, R] for a short R known at compile time: GCC
// vectorises across rows (the sum of at most 16 floats stays in float).
template <class Store, int R>
void sum_rows_fixed(float* __restrict out, const float* __restrict in, int64_t outer, double scale) {
    const auto rows = [&](auto scaled) {
        for (int64_t o = 0; o < outer; ++o) {
            float s = 0.0f;
            for (int r = 0; r < R; ++r) s += in[o * R + r];
            Store::put(out[o], scaled ? static_cast<float>(s * scale) : s);
        }
    };
    if (scale == 1.0) {
        rows(std::false_type{});  // a sum: no multiply in the loop
    } else {
        rows(std::true_type{});
    }
}

template <class Store, int... Rs>
bool sum_rows_short(float* out, const float* in, int64_t outer, int64_t R, double scale, std::integer_sequence<int, Rs...>) {
    return ((R == Rs + 1 && (sum_rows_fixed<Store, Rs + 1>(out, in, outer, scale), true)) || ...);
}

// out: [outer] (Store) = scale * Σ_r in: [outer, R]
template <class Store>
void sum_rows(float* out, const float* in, int64_t outer, int64_t R, double scale) {
    if (outer < 2 * pool_threads() && R >= 2 * kElementGrain) {
        // Few long rows: threads split each row; partial sums are combined in chunk order.
        for (int64_t o = 0; o < outer; ++o) {
            std::array<double, 64> partial{};
            const int chunks = parallel_run_chunks(R, std::max<int64_t>(kElementGrain, R / 64 + 1),
                                                   [&](int c, int64_t b, int64_t e) {
                                                       partial[static_cast<size_t>(c)] = sum_long(in + o * R + b, e - b);
                                                   });
            double s = 0.0;
            for (int c = 0; c < chunks; ++c) s += partial[static_cast<size_t>(c)];
            Store::put(out[o], static_cast<float>(s * scale));
        }
        return;
    }
    parallel_for(outer, item_grain(R), [&](int64_t b, int64_t e) {
        if (R == 0) {
            for (int64_t o = b; o < e; ++o) Store::put(out[o], 0.0f);
        } else if (!sum_rows_short<Store>(out + b, in + b * R, e - b, R, scale, std::make_integer_sequence<int, 16>{})) {
            for (int64_t o = b; o < e; ++o) {
                const double s = R < 256 ? sum_medium(in + o * R, R) : sum_long(in + o * R, R);
                Store::put(out[o], static_cast<float>(s * scale));
            }
        }
    });
}

// tot: [n] (double) += Σ_r in[r * stride + i] over R rows: each group of 128 rows is added in a
// float row first, four input rows per pass (one load and store of the row per four rows read;
// a third faster from memory than one row per pass). That row is placed 2 KB away (mod 4 KB)
// from the input, so its stores never share the low address bits of the loads that follow them
// (4K aliasing stalls the loads).
void add_columns(double* __restrict tot, const float* __restrict in, int64_t R, int64_t stride, int64_t n) {
    alignas(64) std::array<float, kStrip + 1024> buf;
    const auto gap = (reinterpret_cast<uintptr_t>(buf.data()) - reinterpret_cast<uintptr_t>(in)) & 4095u;
    float* __restrict acc = buf.data() + ((2048u - gap) & 4095u) / sizeof(float);
    for (int64_t r0 = 0; r0 < R; r0 += 128) {
        const int64_t r1 = std::min(R, r0 + 128);
        std::fill_n(acc, n, 0.0f);
        int64_t r = r0;
        for (; r + 4 <= r1; r += 4) {
            const float* __restrict a = in + r * stride;
            const float* __restrict b = a + stride;
            const float* __restrict c = b + stride;
            const float* __restrict d = c + stride;
            for (int64_t i = 0; i < n; ++i) acc[i] += (a[i] + b[i]) + (c[i] + d[i]);
        }
        for (; r < r1; ++r) {
            const float* __restrict row = in + r * stride;
            for (int64_t i = 0; i < n; ++i) acc[i] += row[i];
        }
        for (int64_t i = 0; i < n; ++i) tot[i] += acc[i];
    }
}

// tot: [n] (double) += Σ_r in[r * inner + i0 + i] over R rows, i < n. Narrow blocks (n = inner,
// small) are read as rows of k * inner elements, so the vector loops stay long.
void add_column_block(double* tot, const float* in, int64_t R, int64_t inner, int64_t i0, int64_t n) {
    if (n == inner && inner <= kStrip / 2) {
        const int64_t k = kStrip / inner, W = k * inner, full = R / k;
        std::array<double, kStrip> lanes{};
        add_columns(lanes.data(), in, full, W, W);
        add_columns(lanes.data(), in + full * W, 1, 0, (R - full * k) * inner);
        for (int64_t j = 0; j < W; ++j) tot[j % inner] += lanes[static_cast<size_t>(j)];
        return;
    }
    for (int64_t s = 0; s < n; s += kStrip) add_columns(tot + s, in + i0 + s, R, inner, std::min(kStrip, n - s));
}

// out: [outer, inner] (Store) = scale * Σ_r in: [outer, R, inner], inner > 1
template <class Store>
void sum_columns(float* out, const float* in, int64_t outer, int64_t R, int64_t inner, double scale) {
    const bool narrow = inner <= kStrip / 2;
    const int64_t strips = narrow ? 1 : (inner + kStrip - 1) / kStrip, items = outer * strips;
    const auto item_range = [&](int64_t item, int64_t& o, int64_t& i0, int64_t& n) {
        o = item / strips, i0 = (item % strips) * kStrip, n = narrow ? inner : std::min(kStrip, inner - i0);
    };
    const auto store = [&](float* dst, const double* tot, int64_t n) {
        for (int64_t i = 0; i < n; ++i) Store::put(dst[i], static_cast<float>(tot[i] * scale));
    };
    if (items >= 2 * pool_threads() || R * inner <= 2 * kElementGrain) {
        parallel_for(items, item_grain(R * std::min(inner, kStrip)),
                     [&](int64_t b, int64_t e) {
                         for (int64_t item = b; item < e; ++item) {
                             int64_t o = 0, i0 = 0, n = 0;
                             item_range(item, o, i0, n);
                             std::array<double, kStrip> tot{};
                             add_column_block(tot.data(), in + o * R * inner, R, inner, i0, n);
                             store(out + o * inner + i0, tot.data(), n);
                         }
                     });
        return;
    }
    // Few blocks of many rows: threads split the rows; partial sums are combined in chunk order.
    constexpr int kMaxChunks = 64;
    const int max_chunks = std::min(pool_threads(), kMaxChunks);
    for (int64_t item = 0; item < items; ++item) {
        int64_t o = 0, i0 = 0, n = 0;
        item_range(item, o, i0, n);
        const Tensor scratch = empty({max_chunks * n}, kInt64);  // pooled; holds doubles
        double* part = reinterpret_cast<double*>(scratch.data_ptr<int64_t>());
        std::fill_n(part, max_chunks * n, 0.0);
        const int chunks = parallel_run_chunks(R, std::max<int64_t>(kElementGrain / n, R / kMaxChunks + 1),
                                               [&](int c, int64_t r0, int64_t r1) {
                                                   add_column_block(part + c * n, in + (o * R + r0) * inner, r1 - r0,
                                                                    inner, i0, n);
                                               });
        for (int c = 1; c < chunks; ++c) {
            for (int64_t i = 0; i < n; ++i) part[i] += part[c * n + i];
        }
        store(out + o * inner + i0, part, n);
    }
}

// One reduced or kept run of neighbouring dimensions.
struct Run {
    int64_t size;
    bool reduced;
};

// The runs of neighbouring dimensions, held inline (a reduction allocates nothing but its output).
struct Runs {
    std::array<Run, kMaxDims> at{};
    int n = 0;
    void erase(int i) {
        for (int k = i; k + 1 < n; ++k) at[static_cast<size_t>(k)] = at[static_cast<size_t>(k + 1)];
        --n;
    }
};

// The runs of `shape` under `mask` (bit d: dimension d is reduced); size-1 dimensions are dropped.
Runs runs_of(const Shape& shape, uint32_t mask) {
    Runs runs;
    for (int d = 0; d < shape.size(); ++d) {
        if (shape[d] == 1) continue;
        const bool reduced = (mask >> d) & 1u;
        if (runs.n > 0 && runs.at[static_cast<size_t>(runs.n - 1)].reduced == reduced) {
            runs.at[static_cast<size_t>(runs.n - 1)].size *= shape[d];
        } else {
            runs.at[static_cast<size_t>(runs.n++)] = {shape[d], reduced};
        }
    }
    return runs;
}

// out (Store) = scale * src (contiguous) summed over the dimensions in mask, the innermost
// reduced run first (each later one reads the smaller intermediate result).
template <class Store>
void sum_dims(float* out, const Tensor& src, uint32_t mask, double scale) {
    Runs runs = runs_of(src.shape(), mask);
    int64_t outputs = 1;
    for (int i = 0; i < runs.n; ++i) {
        if (!runs.at[static_cast<size_t>(i)].reduced) outputs *= runs.at[static_cast<size_t>(i)].size;
    }
    if (outputs == 0) return;  // an empty output
    if (src.numel() == 0) {    // an empty reduced dimension: every output is a sum of nothing
        for (int64_t i = 0; i < outputs; ++i) Store::put(out[i], 0.0f);
        return;
    }
    // From here every size is at least 1.
    Tensor current = src;
    for (;;) {
        int j = -1;  // the innermost reduced run
        int reduced_runs = 0;
        for (int i = 0; i < runs.n; ++i) {
            if (runs.at[static_cast<size_t>(i)].reduced) j = i, ++reduced_runs;
        }
        int64_t outer = 1, inner = 1;
        for (int i = 0; i < j; ++i) outer *= runs.at[static_cast<size_t>(i)].size;
        for (int i = j + 1; i < runs.n; ++i) inner *= runs.at[static_cast<size_t>(i)].size;
        const int64_t R = j < 0 ? 1 : runs.at[static_cast<size_t>(j)].size;
        const bool last = reduced_runs <= 1;
        Tensor next = last ? Tensor() : empty({outer * inner});
        float* dst = last ? out : next.data();
        const double s = last ? scale : 1.0;
        const auto reduce = [&]<class S>() {
            if (inner == 1) {
                sum_rows<S>(dst, current.data(), outer, R, s);
            } else {
                sum_columns<S>(dst, current.data(), outer, R, inner, s);
            }
        };
        if (last) {
            reduce.template operator()<Store>();
            return;
        }
        reduce.template operator()<Overwrite>();
        // The reduced run is gone; its neighbours, both kept, merge.
        runs.erase(j);
        if (j > 0 && j < runs.n) {
            runs.at[static_cast<size_t>(j - 1)].size *= runs.at[static_cast<size_t>(j)].size;
            runs.erase(j);
        }
        current = next;
    }
}

// out: [outer, inner] = Σ_r in: [outer, R, inner] for int64 or bool elements, exactly, in int64.
template <class T>
void sum_integers(int64_t* out, const T* in, int64_t outer, int64_t R, int64_t inner) {
    parallel_for(outer, item_grain(R * inner), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
            int64_t* __restrict d = out + o * inner;
            std::fill_n(d, inner, int64_t{0});
            for (int64_t r = 0; r < R; ++r) {
                const T* __restrict row = in + (o * R + r) * inner;
                for (int64_t i = 0; i < inner; ++i) d[i] += static_cast<int64_t>(row[i]);
            }
        }
    });
}

// ---- sum and mean ----------------------------------------------------------------------------

// dx: [x shape] (Store) = scale * dy read as the keepdim shape, repeated over the reduced dims.
template <class Store>
void expand_run(const std::tuple<float*, const float*>& p, const std::array<int64_t, 2>& s, int64_t n, float scale) {
    const auto [dx, dy] = p;
    for (int64_t i = 0; i < n; ++i) Store::put(dx[i * s[0]], dy[i * s[1]] * scale);
}

class SumBackward final : public OpNode {
public:
    Shape keep_shape;  // the output's shape with the reduced dimensions kept as 1
    Shape in_shape;
    float scale = 1.0f;  // 1 for sum, 1 / count for mean
    bool mean = false, all = false;
    const char* name() const override {
        return mean ? (all ? "MeanBackward0" : "MeanBackward1") : (all ? "SumBackward0" : "SumBackward1");
    }
    void backward(const Tensor& dy_in) override {
        const GradOut dx = grad_out(0);
        if (!dx) return;
        const Shape& shape = in_shape;
        const Tensor dy = dy_in.view(keep_shape);
        dx.write([&]<class Store>(float* d) {
            const StridedLoop<2> loop(shape, {contiguous_strides(shape), broadcast_strides(dy, shape)});
            const float sc = scale;
            loop.run(std::tuple<float*, const float*>{d, dy.data()},
                     [sc](const std::tuple<float*, const float*>& p, const std::array<int64_t, 2>& s, int64_t n) {
                         expand_run<Store>(p, s, n, sc);
                     });
        });
    }
};

// sum (mean false) or mean of an int64 or bool tensor: int64 sums, a float32 mean.
Tensor reduce_integers(const Tensor& x, uint32_t mask, bool keepdim, bool mean) {
    const Grouped g = group_dims(x, mask, keepdim);
    Tensor sums = empty(g.out_shape, kInt64);
    visit_dtype(x.dtype(), [&](auto type) {
        using T = decltype(type);
        sum_integers(sums.data_ptr<int64_t>(), g.x.data_ptr<T>(), g.outer, g.R, g.inner);
    });
    if (!mean) return sums;
    Tensor out = empty(g.out_shape);
    const int64_t* s = sums.data_ptr<int64_t>();
    for (int64_t i = 0; i < out.numel(); ++i) {
        out.data()[i] = static_cast<float>(static_cast<double>(s[i]) / static_cast<double>(g.R));
    }
    return out;
}

Tensor reduce(const Tensor& x_in, const Shape& dims, bool keepdim, bool mean, bool all, const char* op) {
    const uint32_t mask = dim_mask(dims, x_in.dim(), op);
    if (x_in.dtype() != kFloat32) return reduce_integers(x_in, mask, keepdim, mean);
    const Tensor x = x_in.contiguous();
    int64_t count = 1;
    for (int d = 0; d < x.dim(); ++d) {
        if ((mask >> d) & 1u) count *= x.shape()[d];
    }
    const double scale = mean ? 1.0 / static_cast<double>(count) : 1.0;  // inf for an empty mean: nan below
    Tensor out = empty(reduced_shape(x.shape(), mask, keepdim));
    if (mean && count == 0) {
        out.fill_(std::numeric_limits<float>::quiet_NaN());  // as torch: the mean of nothing is nan
    } else {
        sum_dims<Overwrite>(out.data(), x, mask, scale);
    }
    if (auto* node = record<SumBackward>(out, {x})) {
        node->keep_shape = reduced_shape(x.shape(), mask, true);
        node->in_shape = x.shape();
        node->scale = static_cast<float>(scale);
        node->mean = mean;
        node->all = all;
    }
    return out;
}

void check_float(const Tensor& x, const char* op) {
    NORMNET_CHECK(x.dtype() == kFloat32, op, ": expected a float32 tensor, got ", x.dtype(), " (shape ", x.shape(), ")");
}

}  // namespace

void sum_to(const GradOut& dst, const Tensor& src, const Shape& shape) {
    // Leading dimensions src has beyond `shape` are reduced, and so are those where shape has 1.
    const int lead = src.dim() - shape.size();
    uint32_t mask = 0;
    for (int d = 0; d < src.dim(); ++d) {
        if (d < lead || (shape[d - lead] == 1 && src.shape()[d] != 1)) mask |= 1u << d;
    }
    dst.write([&]<class Store>(float* d) { sum_dims<Store>(d, src, mask, 1.0); });
}

// ---- var and std -----------------------------------------------------------------------------

namespace {

class VarBackward final : public ReduceNode {
public:
    // R - correction, not clamped at 0 as the forward's divisor is: torch's backward divides by
    // it as it is, so where R <= correction the gradient is NaN (R = correction) or -0 times
    // x - mean (R < correction), as torch's.
    double dof = 1.0;
    bool is_std = false;
    const char* name() const override { return is_std ? "StdBackward0" : "VarBackward0"; }
    void backward(const Tensor& dy) override {
        const GradOut dx = grad_out(0);
        if (!dx) return;
        const float* mean = saved(1).data();
        const float* result = saved(2).data();
        const float* g = dy.data();
        const float two_over = static_cast<float>(2.0 / dof);
        dx.write([&]<class Store>(float* d) {
            if (is_std) {
                // d std = d var / (2 std), 0 where std is 0, then var's backward, as torch
                map_reduced<Store>(d, saved(0).data(), outer, R, inner, [=](float x, int64_t o, int64_t) {
                    const float dvar = result[o] == 0.0f ? 0.0f : g[o] / (2.0f * result[o]);
                    return two_over * dvar * (x - mean[o]);
                });
            } else {
                map_reduced<Store>(d, saved(0).data(), outer, R, inner,
                                   [=](float x, int64_t o, int64_t) { return two_over * g[o] * (x - mean[o]); });
            }
        });
    }
};

// var (or std) over mask with the given correction (Bessel's 1 by default).
Tensor variance(const Tensor& x_in, const Dims& dims, double correction, bool keepdim, bool is_std) {
    const char* op = is_std ? "std" : "var";
    check_float(x_in, op);
    const Grouped g = group_dims(x_in, dim_mask(dims, x_in.dim(), op), keepdim);
    Tensor out = empty(g.out_shape), mean = empty(g.out_shape);
    const double n = static_cast<double>(g.R), divisor = std::max(0.0, n - correction);
    float* m = mean.data();
    float* o = out.data();
    reduce_lanes(SumOp{[](float v, float) { return static_cast<double>(v); },
                       [=](double s, int64_t i) { m[i] = static_cast<float>(s / n); }, nullptr},
                 g.x.data(), g.outer, g.R, g.inner);
    reduce_lanes(SumOp{[](float v, float c) {
                           const double d = static_cast<double>(v) - c;
                           return d * d;
                       },
                       [=](double s, int64_t i) {
                           const double var = s / divisor;
                           o[i] = static_cast<float>(is_std ? std::sqrt(var) : var);
                       },
                       m},
                 g.x.data(), g.outer, g.R, g.inner);
    if (auto* node = record<VarBackward>(out, {g.x}, {g.x, mean, out})) {
        node->set_layout(g), node->dof = n - correction, node->is_std = is_std;
    }
    return out;
}

}  // namespace
}  // namespace detail

Tensor sum(const Tensor& x) { return detail::reduce(x, {}, false, false, true, "sum"); }
Tensor mean(const Tensor& x) { return detail::reduce(x, {}, false, true, true, "mean"); }
Tensor sum(const Tensor& x, const Dims& dims, bool keepdim) { return detail::reduce(x, dims, keepdim, false, false, "sum"); }
Tensor mean(const Tensor& x, const Dims& dims, bool keepdim) {
    return detail::reduce(x, dims, keepdim, true, false, "mean");
}
Tensor var(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
    return detail::variance(x, dims, correction, keepdim, false);
}
Tensor std(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
    return detail::variance(x, dims, correction, keepdim, true);
}

// ---- logsumexp -------------------------------------------------------------------------------

namespace detail {
namespace {

class LogsumexpBackward final : public ReduceNode {
public:
    const char* name() const override { return "LogsumexpBackward0"; }
    void backward(const Tensor& dy) override {
        const GradOut dx = grad_out(0);
        if (!dx) return;
        const float* y = saved(1).data();
        const float* g = dy.data();
        // d/dx log Σ exp(x) = exp(x - y)
        dx.write([&]<class Store>(float* d) {
            map_reduced<Store>(d, saved(0).data(), outer, R, inner,
                               [=](float x, int64_t o, int64_t) { return g[o] * std::exp(x - y[o]); });
        });
    }
};

}  // namespace
}  // namespace detail

Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim) {
    detail::check_float(x, "logsumexp");
    const detail::Grouped g = detail::group_dims(x, detail::dim_mask(dims, x.dim(), "logsumexp"), keepdim);
    Tensor out = empty(g.out_shape);
    float* o = out.data();
    // Pass 1: the largest element of each output (0 when infinite, as torch) into out; pass 2:
    // log Σ exp(x - max) + max, in place.
    detail::reduce_lanes(detail::extreme_op<true>([](float v) { return v; },
                                                  [o](float v, int64_t i) { o[i] = std::isinf(v) ? 0.0f : v; }),
                         g.x.data(), g.outer, g.R, g.inner);
    detail::reduce_lanes(detail::SumOp{[](float v, float c) { return static_cast<double>(std::exp(v - c)); },
                                       [o](double s, int64_t i) { o[i] = static_cast<float>(std::log(s) + o[i]); }, o},
                         g.x.data(), g.outer, g.R, g.inner);
    if (auto* node = detail::record<detail::LogsumexpBackward>(out, {g.x}, {g.x, out})) {
        node->set_layout(g);
    }
    return out;
}

// ---- norm ------------------------------------------------------------------------------------

namespace detail {
namespace {

enum class NormKind { zero, one, two, inf, neg_inf, general };

NormKind norm_kind(double p) {
    if (p == 0.0) return NormKind::zero;
    if (p == 1.0) return NormKind::one;
    if (p == 2.0) return NormKind::two;
    if (p == INFINITY) return NormKind::inf;
    if (p == -INFINITY) return NormKind::neg_inf;
    return NormKind::general;
}

float sgn(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); }

class NormBackward final : public ReduceNode {
public:
    double p = 2.0;
    bool all = false;
    const char* name() const override { return all ? "NormBackward0" : "NormBackward1"; }
    void backward(const Tensor& dy) override {
        const GradOut dx = grad_out(0);
        if (!dx) return;
        const float* x = saved(0).data();
        const float* n = saved(1).data();
        const float* g = dy.data();
        const NormKind kind = norm_kind(p);
        Tensor count;  // inf norms: how many elements tie for the extreme |x| (the gradient is shared)
        if (kind == NormKind::inf || kind == NormKind::neg_inf) {
            count = empty({outer * inner});
            float* c = count.data();
            reduce_lanes(SumOp{[](float v, float m) { return std::abs(v) == m || v != v ? 1.0 : 0.0; },
                               [c](double s, int64_t i) { c[i] = static_cast<float>(s); }, n},
                         x, outer, R, inner);
        }
        const float* c = count.defined() ? count.data() : nullptr;
        const float pm1 = static_cast<float>(p - 1.0);
        dx.write([&]<class Store>(float* d) {
            const auto map = [&](auto f) { map_reduced<Store>(d, x, outer, R, inner, f); };
            switch (kind) {
                case NormKind::zero: map([](float, int64_t, int64_t) { return 0.0f; }); break;
                case NormKind::one: map([=](float v, int64_t o, int64_t) { return g[o] * sgn(v); }); break;
                case NormKind::two:  // x / |x|; 0 where the norm is 0, as torch
                    map([=](float v, int64_t o, int64_t) { return n[o] == 0.0f ? 0.0f : g[o] * v / n[o]; });
                    break;
                case NormKind::inf:
                case NormKind::neg_inf:
                    map([=](float v, int64_t o, int64_t) {
                        return std::abs(v) == n[o] || v != v ? sgn(v) * g[o] / c[o] : 0.0f;
                    });
                    break;
                case NormKind::general:  // sgn(x) |x|^(p-1) / |x|_p^(p-1); 0 where x or the norm is 0
                    map([=](float v, int64_t o, int64_t) {
                        return n[o] == 0.0f || v == 0.0f ? 0.0f
                                                         : g[o] * sgn(v) * std::pow(std::abs(v), pm1) / std::pow(n[o], pm1);
                    });
                    break;
            }
        });
    }
};

Tensor vector_norm(const Tensor& x, double p, const Dims& dims, bool keepdim) {
    check_float(x, "norm");
    NORMNET_CHECK(!std::isnan(p), "norm: p must be a number, got nan");
    const uint32_t mask = dim_mask(dims, x.dim(), "norm");
    // A negative p is a minimum, which nothing has: as linalg.vector_norm (torch 1.13's norm gives 0).
    for (int d = 0; d < x.dim(); ++d) {
        NORMNET_CHECK(p >= 0 || !((mask >> d) & 1u) || x.size(d) != 0, "norm: cannot compute the ", p,
                      " norm over dimension ", d, " of size 0 (shape ", x.shape(), "): a negative norm of no "
                      "elements has no value");
    }
    const Grouped g = group_dims(x, mask, keepdim);
    Tensor out = empty(g.out_shape);
    float* o = out.data();
    const auto sum = [&](auto f, auto fin) { reduce_lanes(SumOp{f, fin, nullptr}, g.x.data(), g.outer, g.R, g.inner); };
    const auto put = [o](double s, int64_t i) { o[i] = static_cast<float>(s); };
    const auto abs = [](float v) { return std::abs(v); };
    const bool empty_input = g.R == 0;
    switch (norm_kind(p)) {
        case NormKind::zero: sum([](float v, float) { return v != 0.0f ? 1.0 : 0.0; }, put); break;
        case NormKind::one: sum([](float v, float) { return static_cast<double>(std::abs(v)); }, put); break;
        case NormKind::two:
            sum([](float v, float) { return static_cast<double>(v) * v; },
                [o](double s, int64_t i) { o[i] = static_cast<float>(std::sqrt(s)); });
            break;
        case NormKind::inf:  // the largest |x| (0 for no elements)
            reduce_lanes(extreme_op<true>(abs, [o, empty_input](float v, int64_t i) { o[i] = empty_input ? 0.0f : v; }),
                         g.x.data(), g.outer, g.R, g.inner);
            break;
        case NormKind::neg_inf:
            reduce_lanes(extreme_op<false>(abs, [o](float v, int64_t i) { o[i] = v; }), g.x.data(), g.outer, g.R, g.inner);
            break;
        case NormKind::general:
            sum([p](float v, float) { return std::pow(static_cast<double>(std::abs(v)), p); },
                [o, p](double s, int64_t i) { o[i] = static_cast<float>(std::pow(s, 1.0 / p)); });
            break;
    }
    if (auto* node = record<NormBackward>(out, {g.x}, {g.x, out})) {
        node->set_layout(g), node->p = p, node->all = dims.empty();
    }
    return out;
}

}  // namespace
}  // namespace detail

Tensor norm(const Tensor& x, double p, const Dims& dims, bool keepdim) { return detail::vector_norm(x, p, dims, keepdim); }

Tensor norm(const Tensor& x, std::string_view p, const Dims& dims, bool keepdim) {
    NORMNET_CHECK(p == "fro", "norm: p '", p, "' is not supported (a number, or 'fro')");
    NORMNET_CHECK(dims.size() <= 2, "norm: 'fro' takes at most two dims, got ", dims);
    return detail::vector_norm(x, 2.0, dims, keepdim);
}

// ---- cumsum ----------------------------------------------------------------------------------

namespace detail {
namespace {

// out: [outer, R, inner] (Store) = running sums of in along R (from the end when reverse),
// accumulated in Acc (double for floats, as torch; int64 for integers); lanes of inner in step.
template <class Store, class Acc, class O, class T>
void cumsum_kernel(O* out, const T* in, int64_t outer, int64_t R, int64_t inner, bool reverse) {
    const int64_t strips = (inner + kLanes - 1) / kLanes;
    parallel_for(outer * strips, item_grain(R * std::min<int64_t>(inner, kLanes)),
                 [&](int64_t b, int64_t e) {
                     for (int64_t item = b; item < e; ++item) {
                         const int64_t o = item / strips, i0 = (item % strips) * kLanes;
                         const int n = static_cast<int>(std::min<int64_t>(kLanes, inner - i0));
                         std::array<Acc, kLanes> acc{};
                         for (int64_t k = 0; k < R; ++k) {
                             const int64_t off = (o * R + (reverse ? R - 1 - k : k)) * inner + i0;
                             for (int j = 0; j < n; ++j) {
                                 acc[static_cast<size_t>(j)] += static_cast<Acc>(in[off + j]);
                                 if constexpr (std::is_same_v<O, float>) {
                                     Store::put(out[off + j], static_cast<float>(acc[static_cast<size_t>(j)]));
                                 } else {
                                     out[off + j] = acc[static_cast<size_t>(j)];
                                 }
                             }
                         }
                     }
                 });
}

class CumsumBackward final : public ReduceNode {
public:
    const char* name() const override { return "CumsumBackward0"; }
    void backward(const Tensor& dy) override {
        // Each input element feeds every later output: its gradient is the sum of dy from it to the end.
        if (const GradOut dx = grad_out(0)) {
            dx.write([&]<class Store>(float* d) { cumsum_kernel<Store, double>(d, dy.data(), outer, R, inner, true); });
        }
    }
};

}  // namespace
}  // namespace detail

Tensor cumsum(const Tensor& x_in, int64_t dim) {
    const detail::Grouped g = detail::group_dims(x_in, detail::one_dim_mask(dim, x_in.dim(), "cumsum"), true);
    const Tensor& x = g.x;
    if (x.dtype() != kFloat32) {  // int64 and bool add up to int64, as torch
        Tensor out = empty(x.shape(), kInt64);
        detail::visit_dtype(x.dtype(), [&](auto type) {
            using T = decltype(type);
            detail::cumsum_kernel<detail::Overwrite, int64_t>(out.data_ptr<int64_t>(), x.data_ptr<T>(), g.outer, g.R,
                                                              g.inner, false);
        });
        return out;
    }
    Tensor out = empty(x.shape());
    detail::cumsum_kernel<detail::Overwrite, double>(out.data(), x.data(), g.outer, g.R, g.inner, false);
    if (auto* node = detail::record<detail::CumsumBackward>(out, {x})) {
        node->set_layout(g);
    }
    return out;
}

// ---- Tensor methods --------------------------------------------------------------------------

Tensor Tensor::sum() const { return normnet::sum(*this); }
Tensor Tensor::sum(const Dims& dims, bool keepdim) const { return normnet::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return normnet::mean(*this); }
Tensor Tensor::mean(const Dims& dims, bool keepdim) const { return normnet::mean(*this, dims, keepdim); }
Tensor Tensor::var(const Dims& dims, double correction, bool keepdim) const {
    return normnet::var(*this, dims, correction, keepdim);
}
Tensor Tensor::std(const Dims& dims, double correction, bool keepdim) const {
    return normnet::std(*this, dims, correction, keepdim);
}
Tensor Tensor::logsumexp(const Dims& dims, bool keepdim) const { return normnet::logsumexp(*this, dims, keepdim); }
Tensor Tensor::norm(double p, const Dims& dims, bool keepdim) const { return normnet::norm(*this, p, dims, keepdim); }
Tensor Tensor::cumsum(int64_t dim) const { return normnet::cumsum(*this, dim); }

}  // namespace normnet

// Pooling over the planes of [N, C, H, W]: max_pool2d (with or without indices), avg_pool2d,
// adaptive_avg_pool2d, adaptive_max_pool2d, each with its backward; the 1-D pools as these on
// [N, C, 1, L] views. Every (sample, channel) plane is independent;
// planes are split between threads outside the kernels. Windows, output sizes, padding rules
// and divisors follow torch's CPU kernels. max_pool2d keeps no int64 index per output alive
// between forward and backward: for 2x2 windows (the CNNs' pooling) the forward keeps each
// window's choice in two bools, so the input can die after the forward; for other windows the
// backward recomputes each window's argmax from the saved input (the same scan as the forward,
// so the same element).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "../parallel.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"
#include "pool2x2.hpp"

namespace normnet {
namespace detail {
namespace {

using namespace pool2x2;

// The sizes of one pooling call; N counts planes (samples x channels).
struct PoolGeometry {
    int64_t N = 0, H = 0, W = 0, OH = 0, OW = 0;
    int64_t KH = 1, KW = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
    int64_t plane() const { return H * W; }
    int64_t out_plane() const { return OH * OW; }
};

// Planes per chunk of a parallel loop: about 16k values.
int64_t plane_grain(int64_t values) { return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(values, 1)); }

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Calls f(p) for every plane p of g, the planes split between threads.
template <class F>
void for_each_plane(const PoolGeometry& g, F&& f) {
    parallel_for(g.N, plane_grain(g.plane()), [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) f(p);
    });
}

// Writes an input gradient dx by the GradOut rule, plane by plane:
// kernel.template operator()<Store>(dx plane, dout plane, plane index).
template <class Kernel>
void backward_by_plane(const GradOut& dx, const Tensor& dout, const PoolGeometry& g, Kernel&& kernel) {
    dx.write([&]<class Store>(float* d) {
        for_each_plane(g, [&](int64_t p) {
            kernel.template operator()<Store>(d + p * g.plane(), dout.data() + p * g.out_plane(), p);
        });
    });
}

// torch's pooling_output_shape: floor or ceil division, and with ceil_mode the last window must
// start inside the input or its left/top padding.
int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
    int64_t out = floor_div(in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad) --out;
    return out;
}

// The output positions o whose input index o * stride + off lies in [0, size): [lo, hi).
void valid_range(int64_t off, int64_t stride, int64_t size, int64_t count, int64_t& lo, int64_t& hi) {
    lo = std::min(count, off >= 0 ? 0 : (-off + stride - 1) / stride);
    hi = size - off <= 0 ? 0 : std::min(count, (size - off + stride - 1) / stride);
    hi = std::max(lo, hi);
}

// Checks shared by the pooling ops (torch's pool2d_shape_check) and the geometry of x [*, H, W].
PoolGeometry pool_geometry(const Tensor& x, Size2 kernel, Size2 stride, Size2 padding, Size2 dilation, bool ceil_mode,
                           const char* op) {
    NORMNET_CHECK(x.dtype() == kFloat32, op, ": expected a float32 tensor, got ", x.dtype());
    bool ok = x.dim() == 3 || x.dim() == 4;
    for (int d = x.dim() - 3; ok && d < x.dim(); ++d) ok = x.size(d) > 0;
    NORMNET_CHECK(ok, op, ": Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:",
                  x.shape());
    if (!stride.given) stride = kernel;
    NORMNET_CHECK(kernel.h > 0 && kernel.w > 0, op, ": kernel size should be greater than zero, but got kH: ", kernel.h,
                  " kW: ", kernel.w);
    NORMNET_CHECK(stride.h > 0 && stride.w > 0, op, ": stride should be greater than zero, but got dH: ", stride.h,
                  " dW: ", stride.w);
    NORMNET_CHECK(dilation.h > 0 && dilation.w > 0, op, ": dilation should be greater than zero, but got dilationH: ",
                  dilation.h, " dilationW: ", dilation.w);
    NORMNET_CHECK(padding.h >= 0 && padding.w >= 0 && padding.h <= kernel.h / 2 && padding.w <= kernel.w / 2, op,
                  ": pad should be at most half of kernel size, but got pad=(", padding.h, ", ", padding.w,
                  ") and kernel_size=(", kernel.h, ", ", kernel.w, ")");
    PoolGeometry g;
    g.H = x.size(-2), g.W = x.size(-1);
    g.N = x.numel() / (g.H * g.W);
    g.KH = kernel.h, g.KW = kernel.w, g.sh = stride.h, g.sw = stride.w;
    g.ph = padding.h, g.pw = padding.w, g.dh = dilation.h, g.dw = dilation.w;
    g.OH = pooled_size(g.H, g.KH, g.ph, g.sh, g.dh, ceil_mode);
    g.OW = pooled_size(g.W, g.KW, g.pw, g.sw, g.dw, ceil_mode);
    NORMNET_CHECK(g.OH >= 1 && g.OW >= 1, op, ": Given input size: (", x.size(-3), "x", g.H, "x", g.W,
                  "). Calculated output size: (", x.size(-3), "x", g.OH, "x", g.OW, "). Output size is too small");
    return g;
}

// x's shape with the last two sizes replaced by (OH, OW).
Shape pooled_shape(const Tensor& x, int64_t OH, int64_t OW) {
    Shape s = x.shape();
    s[s.size() - 2] = OH;
    s[s.size() - 1] = OW;
    return s;
}

// ---- max_pool2d -------------------------------------------------------------------------------

// Output positions handled together, so the window loops run over a unit-stride tile of outputs.
constexpr int64_t kTile = 64;

// m, idx: [count] = the maxima of the windows of output row oh, positions [ow0, ow0 + count), of
// the plane x: [H, W], and their indices ih * W + iw, as torch: each window is scanned in
// row-major order and an element is taken when greater than the maximum so far or NaN;
// the index starts at the window's first element inside the input.
template <bool kIndices>
void max_pool_tile(float* __restrict m, int64_t* __restrict idx, const float* __restrict x, const PoolGeometry& g,
                   int64_t oh, int64_t ow0, int64_t count) {
    const int64_t ih0 = oh * g.sh - g.ph;
    int64_t kh_first = 0;
    while (kh_first + 1 < g.KH && ih0 + kh_first * g.dh < 0) ++kh_first;
    for (int64_t j = 0; j < count; ++j) {
        m[j] = -std::numeric_limits<float>::infinity();
        if constexpr (kIndices) {
            int64_t iw = (ow0 + j) * g.sw - g.pw;
            while (iw < 0) iw += g.dw;
            idx[j] = (ih0 + kh_first * g.dh) * g.W + iw;
        }
    }
    for (int64_t kh = kh_first; kh < g.KH; ++kh) {
        const int64_t ih = ih0 + kh * g.dh;
        if (ih >= g.H) break;
        const float* row = x + ih * g.W;
        for (int64_t kw = 0; kw < g.KW; ++kw) {
            const int64_t off = kw * g.dw - g.pw;
            int64_t lo, hi;
            valid_range(off + ow0 * g.sw, g.sw, g.W, count, lo, hi);
            for (int64_t j = lo; j < hi; ++j) {
                const float v = row[(ow0 + j) * g.sw + off];
                const bool take = v > m[j] || v != v;
                m[j] = take ? v : m[j];
                if constexpr (kIndices) idx[j] = take ? ih * g.W + (ow0 + j) * g.sw + off : idx[j];
            }
        }
    }
}

// The common 2x2 window with stride 2, no padding or dilation, every window inside the input:
// each input element belongs to at most one window, and the loops run without tiles or bounds.
bool whole_2x2_windows(const PoolGeometry& g) {
    return g.KH == 2 && g.KW == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 && g.dh == 1 && g.dw == 1 &&
           2 * g.OH <= g.H && 2 * g.OW <= g.W;
}

// out: [lanes] = the maxima of the 2x2 windows of output row oh, positions [s, s + lanes), and
// a, b, c, d their elements (top-left, top-right, bottom-left, bottom-right)
template <class F>
F window_max(const float* r0, const float* r1, int64_t s, F& a, F& b, F& c, F& d) {
    deinterleave(r0 + 2 * s, a, b);
    deinterleave(r1 + 2 * s, c, d);
    return scan(scan(scan(a, b), c), d);
}

// out: [OH, OW] = 2x2 max pooling of the plane x: [H, W], vectors of F (OW >= lanes of F)
template <class F>
void max_pool_2x2_forward(float* __restrict out, const float* __restrict x, const PoolGeometry& g) {
    const int64_t N = kLanes<F>;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
        const float* r0 = x + 2 * oh * g.W;
        const float* r1 = r0 + g.W;
        for (int64_t ow = 0; ow < g.OW; ow += N) {
            const int64_t s = std::min(ow, g.OW - N);  // the last vector overlaps: same values again
            F a, b, c, d;
            store(out + oh * g.OW + s, window_max(r0, r1, s, a, b, c, d));
        }
    }
}


// dx: [H, W] (Store) = dout: [OH, OW] routed to each 2x2 window's maximum in x: [H, W], found
// again: the first element equal to the maximum (torch's strict > keeps the first of ties).
// Every element of a window is stored (dy or 0), so only the rows and columns outside every
// window are zeroed. A vector whose windows hold a NaN takes torch's exact scalar scan (the last
// NaN wins there).
template <class F, class Store>
void max_pool_2x2_backward(float* __restrict dx, const float* __restrict dout, const float* __restrict x,
                           const PoolGeometry& g) {
    const int64_t N = kLanes<F>;
    const F zero = {};
    F lane;
    for (int64_t i = 0; i < N; ++i) lane[i] = static_cast<float>(i);
    for (int64_t oh = 0; oh < g.OH; ++oh) {
        const float* r0 = x + 2 * oh * g.W;
        const float* r1 = r0 + g.W;
        float* d0 = dx + 2 * oh * g.W;
        float* d1 = d0 + g.W;
        const float* dy = dout + oh * g.OW;
        for (int64_t ow = 0; ow < g.OW; ow += N) {
            const int64_t s = std::min(ow, g.OW - N);
            F a, b, c, d;
            const F m = window_max(r0, r1, s, a, b, c, d);
            F v = load<F>(dy + s);
            // An overlapping last vector rewrites the same values, but must not add twice.
            if (Store::beta != 0.0f) v = lane >= static_cast<float>(ow - s) ? v : zero;
            bool nan = false;
            for (int64_t i = 0; i < N; ++i) nan |= m[i] != m[i];
            if (nan) {
                for (int64_t i = ow - s; i < N; ++i) {
                    const int64_t j = 2 * (s + i);
                    float unused;
                    const int k = argmax_2x2(r0[j], r0[j + 1], r1[j], r1[j + 1], unused);
                    Store::put(d0[j], k == 0 ? v[i] : 0.0f);
                    Store::put(d0[j + 1], k == 1 ? v[i] : 0.0f);
                    Store::put(d1[j], k == 2 ? v[i] : 0.0f);
                    Store::put(d1[j + 1], k == 3 ? v[i] : 0.0f);
                }
                continue;
            }
            const auto ta = a == m, tb = ~ta & (b == m), tc = ~(ta | tb) & (c == m), td = ~(ta | tb | tc);
            F top0 = ta ? v : zero, top1 = tb ? v : zero, bottom0 = tc ? v : zero, bottom1 = td ? v : zero;
            store_windows<F, Store>(d0, d1, s, top0, top1, bottom0, bottom1);
        }
        if (Store::beta == 0.0f) {
            std::fill(d0 + 2 * g.OW, d0 + g.W, 0.0f);
            std::fill(d1 + 2 * g.OW, d1 + g.W, 0.0f);
        }
    }
    if (Store::beta == 0.0f) std::fill(dx + 2 * g.OH * g.W, dx + g.plane(), 0.0f);
}

// The 2x2 windows' choices, kept by the forward for the backward: per output, whether its
// maximum is in the window's bottom row and in its right column, as bools ([2, outputs]: the
// bottom flags, then the right ones). At batch 128 the CNN's first pooled input is 12.8 MB; its
// choices are 1.6 MB, which the backward reads instead of the input to find each maximum again,
// and the input need not stay alive. The same choice as max_pool_2x2_backward makes from x.
struct WindowChoices {
    bool* bottom;
    bool* right;
};

template <class F>
void store_bools(bool* p, MaskOf<F> m) {
    const BytesOf<F> b = __builtin_convertvector(m & 1, BytesOf<F>);
    std::memcpy(p, &b, sizeof b);
}
template <class F>
MaskOf<F> load_bools(const bool* p) {
    BytesOf<F> b;
    std::memcpy(&b, p, sizeof b);
    return __builtin_convertvector(b, MaskOf<F>) != 0;
}

// out: [OH, OW] = 2x2 max pooling of the plane x: [H, W], and each window's choice in `choice`
// (vectors of F, OW >= lanes of F)
template <class F>
void max_pool_2x2_forward_choices(float* __restrict out, WindowChoices choice, const float* __restrict x,
                                  const PoolGeometry& g) {
    // The sizes in locals: the bool stores may alias g as far as the compiler knows.
    const int64_t N = kLanes<F>, OH = g.OH, OW = g.OW, W = g.W;
    for (int64_t oh = 0; oh < OH; ++oh) {
        const float* r0 = x + 2 * oh * W;
        const float* r1 = r0 + W;
        for (int64_t ow = 0; ow < OW; ow += N) {
            const int64_t s = std::min(ow, OW - N);
            const int64_t at = oh * OW + s;
            F a, b, c, d;
            const F m = window_max(r0, r1, s, a, b, c, d);
            store(out + at, m);
            bool nan = false;
            for (int64_t i = 0; i < N; ++i) nan |= m[i] != m[i];
            if (nan) {
                // torch's exact scalar scan, as max_pool_2x2_backward takes it.
                for (int64_t i = 0; i < N; ++i) {
                    const int64_t j = 2 * (s + i);
                    float unused;
                    const int k = argmax_2x2(r0[j], r0[j + 1], r1[j], r1[j + 1], unused);
                    choice.bottom[at + i] = k >= 2;
                    choice.right[at + i] = (k & 1) != 0;
                }
                continue;
            }
            // The first element equal to the maximum: a, b, c, else d.
            const auto ta = a == m, tb = ~ta & (b == m), tc = ~(ta | tb) & (c == m);
            const auto bottom = ~(ta | tb), right = tb | (bottom & ~tc);
            store_bools<F>(choice.bottom + at, bottom);
            store_bools<F>(choice.right + at, right);
        }
    }
}

// dx: [H, W] (Store) = dout: [OH, OW] routed to each 2x2 window's chosen element (the forward's
// choices): the stores of max_pool_2x2_backward, without reading x.
template <class F, class Store>
void max_pool_2x2_backward_choices(float* __restrict dx, const float* __restrict dout, const bool* __restrict bottom,
                                   const bool* __restrict right, const PoolGeometry& g) {
    const int64_t N = kLanes<F>, OH = g.OH, OW = g.OW, W = g.W;
    const F zero = {};
    F lane;
    for (int64_t i = 0; i < N; ++i) lane[i] = static_cast<float>(i);
    for (int64_t oh = 0; oh < OH; ++oh) {
        float* d0 = dx + 2 * oh * W;
        float* d1 = d0 + W;
        const float* dy = dout + oh * OW;
        for (int64_t ow = 0; ow < OW; ow += N) {
            const int64_t s = std::min(ow, OW - N);
            const int64_t at = oh * OW + s;
            F v = load<F>(dy + s);
            // An overlapping last vector rewrites the same values, but must not add twice.
            if (Store::beta != 0.0f) v = lane >= static_cast<float>(ow - s) ? v : zero;
            const MaskOf<F> b = load_bools<F>(bottom + at), r = load_bools<F>(right + at);
            F top0 = ~(b | r) ? v : zero, top1 = (~b & r) ? v : zero, bottom0 = (b & ~r) ? v : zero,
              bottom1 = (b & r) ? v : zero;
            store_windows<F, Store>(d0, d1, s, top0, top1, bottom0, bottom1);
        }
        if (Store::beta == 0.0f) {
            std::fill(d0 + 2 * g.OW, d0 + g.W, 0.0f);
            std::fill(d1 + 2 * g.OW, d1 + g.W, 0.0f);
        }
    }
    if (Store::beta == 0.0f) std::fill(dx + 2 * g.OH * g.W, dx + g.plane(), 0.0f);
}

// out: [OH, OW], idx: [OH, OW] (when kIndices) = max pooling of the plane x: [H, W]
template <bool kIndices>
void max_pool2d_forward(float* __restrict out, int64_t* __restrict idx, const float* __restrict x, const PoolGeometry& g) {
    if constexpr (!kIndices) {
        if (whole_2x2_windows(g) && g.OW >= 8) return max_pool_2x2_forward<Floats8>(out, x, g);
        if (whole_2x2_windows(g) && g.OW >= 4) return max_pool_2x2_forward<Floats4>(out, x, g);
    }
    for (int64_t oh = 0; oh < g.OH; ++oh) {
        for (int64_t ow0 = 0; ow0 < g.OW; ow0 += kTile) {
            const int64_t at = oh * g.OW + ow0;
            max_pool_tile<kIndices>(out + at, kIndices ? idx + at : nullptr, x, g, oh, ow0, std::min(kTile, g.OW - ow0));
        }
    }
}

// dx: [H, W] (Store) = dout: [OH, OW] routed to each window's maximum in x: [H, W], found again
template <class Store>
void max_pool2d_backward(float* __restrict dx, const float* __restrict dout, const float* __restrict x,
                         const PoolGeometry& g) {
    if (whole_2x2_windows(g) && g.OW >= 8) return max_pool_2x2_backward<Floats8, Store>(dx, dout, x, g);
    if (whole_2x2_windows(g) && g.OW >= 4) return max_pool_2x2_backward<Floats4, Store>(dx, dout, x, g);
    if (Store::beta == 0.0f) std::fill(dx, dx + g.plane(), 0.0f);
    float m[kTile];
    int64_t idx[kTile];
    for (int64_t oh = 0; oh < g.OH; ++oh) {
        for (int64_t ow0 = 0; ow0 < g.OW; ow0 += kTile) {
            const int64_t count = std::min(kTile, g.OW - ow0);
            max_pool_tile<true>(m, idx, x, g, oh, ow0, count);
            const float* dy = dout + oh * g.OW + ow0;
            for (int64_t j = 0; j < count; ++j) dx[idx[j]] += dy[j];
        }
    }
}

// 2x2 windows whose choices the forward keeps, when it returns no indices (vectors of 4 or 8
// outputs fit a row).
bool keeps_choices(const PoolGeometry& g) { return whole_2x2_windows(g) && g.OW >= 4; }

class MaxPool2DWithIndicesBackward final : public OpNode {
public:
    PoolGeometry g;
    bool choices = false;  // saved(0) is the windows' choices, not the input
    const char* name() const override { return "MaxPool2DWithIndicesBackward0"; }
    void backward(const Tensor& dout) override {
        const GradOut dx = grad_out(0);
        if (!dx) return;
        if (choices) {
            // saved(0): the windows' choices, [2, outputs].
            const bool* bottom = saved(0).data_ptr<bool>();
            const bool* right = bottom + g.N * g.out_plane();
            backward_by_plane(dx, dout, g, [&]<class Store>(float* d, const float* dy, int64_t p) {
                const int64_t at = p * g.out_plane();
                if (g.OW >= 8) {
                    max_pool_2x2_backward_choices<Floats8, Store>(d, dy, bottom + at, right + at, g);
                } else {
                    max_pool_2x2_backward_choices<Floats4, Store>(d, dy, bottom + at, right + at, g);
                }
            });
            return;
        }
        const Tensor& x = saved(0);
        backward_by_plane(dx, dout, g, [&]<class Store>(float* d, const float* dy, int64_t p) {
            max_pool2d_backward<Store>(d, dy, x.data() + p * g.plane(), g);
        });
    }
};

std::tuple<Tensor, Tensor> max_pool2d_impl(const Tensor& input, Size2 kernel, Size2 stride, Size2 padding,
                                           Size2 dilation, bool ceil_mode, bool with_indices, const char* op) {
    const PoolGeometry g = pool_geometry(input, kernel, stride, padding, dilation, ceil_mode, op);
    const Tensor x = input.contiguous();
    Tensor out = empty(pooled_shape(x, g.OH, g.OW));
    Tensor indices = with_indices ? empty(out.shape(), kInt64) : Tensor();
    if (keeps_choices(g) && !with_indices && any_requires_grad({x})) {
        const Tensor choices = empty({2, g.N * g.out_plane()}, kBool);
        bool* bottom = choices.data_ptr<bool>();
        const WindowChoices all{bottom, bottom + g.N * g.out_plane()};
        for_each_plane(g, [&](int64_t p) {
            const int64_t at = p * g.out_plane();
            float* o = out.data() + at;
            const WindowChoices c{all.bottom + at, all.right + at};
            if (g.OW >= 8) {
                max_pool_2x2_forward_choices<Floats8>(o, c, x.data() + p * g.plane(), g);
            } else {
                max_pool_2x2_forward_choices<Floats4>(o, c, x.data() + p * g.plane(), g);
            }
        });
        if (auto* node = record<MaxPool2DWithIndicesBackward>(out, {x}, {choices})) node->g = g, node->choices = true;
        return {out, indices};
    }
    for_each_plane(g, [&](int64_t p) {
        if (with_indices) {
            max_pool2d_forward<true>(out.data() + p * g.out_plane(), indices.data_ptr<int64_t>() + p * g.out_plane(),
                                     x.data() + p * g.plane(), g);
        } else {
            max_pool2d_forward<false>(out.data() + p * g.out_plane(), nullptr, x.data() + p * g.plane(), g);
        }
    });
    if (auto* node = record<MaxPool2DWithIndicesBackward>(out, {x}, {x})) node->g = g;
    return {out, indices};
}

// ---- avg_pool2d -------------------------------------------------------------------------------

// What avg_pool2d divides each window's sum by.
struct AvgDivisor {
    bool count_include_pad = true;
    int64_t override_by = 0;  // 0: none
};

// The window of output (oh, ow) clipped to the input: rows [h0, h1), columns [w0, w1); returns
// the divisor (0 for a window with no element inside the input), as torch's CPU kernel.
int64_t avg_window(const PoolGeometry& g, AvgDivisor d, int64_t oh, int64_t ow, int64_t& h0, int64_t& h1, int64_t& w0,
                   int64_t& w1) {
    h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
    h1 = std::min(h0 + g.KH, g.H + g.ph), w1 = std::min(w0 + g.KW, g.W + g.pw);
    const int64_t padded = (h1 - h0) * (w1 - w0);
    h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
    h1 = std::min(h1, g.H), w1 = std::min(w1, g.W);
    if (h0 >= h1 || w0 >= w1) return 0;
    return d.override_by != 0 ? d.override_by : d.count_include_pad ? padded : (h1 - h0) * (w1 - w0);
}

// out: [OH, OW] = window sums of the plane x: [H, W] / divisor (0 for an empty window)
void avg_pool2d_forward(float* __restrict out, const float* __restrict x, const PoolGeometry& g, AvgDivisor d) {
    for (int64_t oh = 0; oh < g.OH; ++oh) {
        for (int64_t ow = 0; ow < g.OW; ++ow) {
            int64_t h0, h1, w0, w1;
            const int64_t divisor = avg_window(g, d, oh, ow, h0, h1, w0, w1);
            float sum = 0.0f;
            for (int64_t ih = h0; ih < h1; ++ih) {
                for (int64_t iw = w0; iw < w1; ++iw) sum += x[ih * g.W + iw];
            }
            out[oh * g.OW + ow] = divisor == 0 ? 0.0f : sum / static_cast<float>(divisor);
        }
    }
}

// dx: [H, W] (Store) = each dout: [OH, OW] / divisor spread over its window
template <class Store>
void avg_pool2d_backward(float* __restrict dx, const float* __restrict dout, const PoolGeometry& g, AvgDivisor d) {
    if (Store::beta == 0.0f) std::fill(dx, dx + g.plane(), 0.0f);
    for (int64_t oh = 0; oh < g.OH; ++oh) {
        for (int64_t ow = 0; ow < g.OW; ++ow) {
            int64_t h0, h1, w0, w1;
            const int64_t divisor = avg_window(g, d, oh, ow, h0, h1, w0, w1);
            if (divisor == 0) continue;
            const float v = dout[oh * g.OW + ow] / static_cast<float>(divisor);
            for (int64_t ih = h0; ih < h1; ++ih) {
                for (int64_t iw = w0; iw < w1; ++iw) dx[ih * g.W + iw] += v;
            }
        }
    }
}

class AvgPool2DBackward final : public OpNode {
public:
    PoolGeometry g;
    AvgDivisor d;
    const char* name() const override { return "AvgPool2DBackward0"; }
    void backward(const Tensor& dout) override {
        if (const GradOut dx = grad_out(0)) {
            backward_by_plane(dx, dout, g, [&]<class Store>(float* data, const float* dy, int64_t) {
                avg_pool2d_backward<Store>(data, dy, g, d);
            });
        }
    }
};

// ---- adaptive_avg_pool2d ----------------------------------------------------------------------

// Window i of `out` windows over `in`: [floor(i * in / out), ceil((i + 1) * in / out)).
int64_t window_start(int64_t i, int64_t out, int64_t in) { return i * in / out; }
int64_t window_end(int64_t i, int64_t out, int64_t in) { return ((i + 1) * in + out - 1) / out; }

// out: [OH, OW] = the means of the adaptive windows of the plane x: [H, W]
void adaptive_avg_pool2d_forward(float* __restrict out, const float* __restrict x, const PoolGeometry& g) {
    for (int64_t oh = 0; oh < g.OH; ++oh) {
        const int64_t h0 = window_start(oh, g.OH, g.H), h1 = window_end(oh, g.OH, g.H);
        for (int64_t ow = 0; ow < g.OW; ++ow) {
            const int64_t w0 = window_start(ow, g.OW, g.W), w1 = window_end(ow, g.OW, g.W);
            float sum = 0.0f;
            for (int64_t ih = h0; ih < h1; ++ih) {
                const float* r = x + ih * g.W;
#pragma omp simd reduction(+ : sum)
                for (int64_t iw = w0; iw < w1; ++iw) sum += r[iw];
            }
            out[oh * g.OW + ow] = sum / static_cast<float>((h1 - h0) * (w1 - w0));
        }
    }
}

// dx: [H, W] (Store) = each dout: [OH, OW] / window size spread over its window
template <class Store>
void adaptive_avg_pool2d_backward(float* __restrict dx, const float* __restrict dout, const PoolGeometry& g) {
    if (Store::beta == 0.0f) std::fill(dx, dx + g.plane(), 0.0f);
    for (int64_t oh = 0; oh < g.OH; ++oh) {
        const int64_t h0 = window_start(oh, g.OH, g.H), h1 = window_end(oh, g.OH, g.H);
        for (int64_t ow = 0; ow < g.OW; ++ow) {
            const int64_t w0 = window_start(ow, g.OW, g.W), w1 = window_end(ow, g.OW, g.W);
            const float v = dout[oh * g.OW + ow] / static_cast<float>((h1 - h0) * (w1 - w0));
            for (int64_t ih = h0; ih < h1; ++ih) {
                float* r = dx + ih * g.W;
                for (int64_t iw = w0; iw < w1; ++iw) r[iw] += v;
            }
        }
    }
}

class AdaptiveAvgPool2DBackward final : public OpNode {
public:
    PoolGeometry g;
    const char* name() const override { return "AdaptiveAvgPool2DBackward0"; }
    void backward(const Tensor& dout) override {
        if (const GradOut dx = grad_out(0)) {
            backward_by_plane(dx, dout, g, [&]<class Store>(float* data, const float* dy, int64_t) {
                adaptive_avg_pool2d_backward<Store>(data, dy, g);
            });
        }
    }
};

// ---- adaptive_max_pool2d ----------------------------------------------------------------------

// out, idx: [OH, OW] = the maxima of the adaptive windows of the plane x: [H, W] and their
// indices ih * W + iw; as torch's kernel, an element is taken when greater than the maximum so
// far or NaN
void adaptive_max_pool2d_forward(float* __restrict out, int64_t* __restrict idx, const float* __restrict x,
                                 const PoolGeometry& g) {
    for (int64_t oh = 0; oh < g.OH; ++oh) {
        const int64_t h0 = window_start(oh, g.OH, g.H), h1 = window_end(oh, g.OH, g.H);
        for (int64_t ow = 0; ow < g.OW; ++ow) {
            const int64_t w0 = window_start(ow, g.OW, g.W), w1 = window_end(ow, g.OW, g.W);
            float m = -std::numeric_limits<float>::infinity();
            int64_t at = h0 * g.W + w0;
            for (int64_t ih = h0; ih < h1; ++ih) {
                for (int64_t iw = w0; iw < w1; ++iw) {
                    const float v = x[ih * g.W + iw];
                    if (v > m || v != v) m = v, at = ih * g.W + iw;
                }
            }
            out[oh * g.OW + ow] = m;
            idx[oh * g.OW + ow] = at;
        }
    }
}

class AdaptiveMaxPool2DBackward final : public OpNode {
public:
    PoolGeometry g;
    const char* name() const override { return "AdaptiveMaxPool2DBackward0"; }
    void backward(const Tensor& dout) override {
        const GradOut dx = grad_out(0);
        if (!dx) return;
        const int64_t* idx = saved(0).data_ptr<int64_t>();
        backward_by_plane(dx, dout, g, [&]<class Store>(float* d, const float* dy, int64_t p) {
            if (Store::beta == 0.0f) std::fill(d, d + g.plane(), 0.0f);
            const int64_t* i = idx + p * g.out_plane();
            for (int64_t o = 0; o < g.out_plane(); ++o) d[i[o]] += dy[o];
        });
    }
};

// The geometry of an adaptive pool of input [N, C, H, W] (or [C, H, W]) to output_size. As torch
// 1.13, the average pool needs non-empty H and W only (an empty C gives an empty output), the max
// pool every dim after the first.
PoolGeometry adaptive_geometry(const Tensor& input, Size2 output_size, const char* op, bool spatial_only = false) {
    NORMNET_CHECK(input.dtype() == kFloat32, op, ": expected a float32 tensor, got ", input.dtype());
    NORMNET_CHECK(input.dim() == 3 || input.dim() == 4, op, ": Expected 3D or 4D tensor, but got input of shape ",
                  input.shape());
    for (int d = spatial_only ? input.dim() - 2 : 1; d < input.dim(); ++d) {
        NORMNET_CHECK(input.size(d) > 0, op, ": Expected input to have non-zero size for non-batch dimensions, but "
                      "input has sizes ", input.shape(), " with dimension ", d, " being empty");
    }
    NORMNET_CHECK(output_size.h >= 0 && output_size.w >= 0, op, ": output_size ", output_size.h, "x", output_size.w,
                  " must not be negative");
    PoolGeometry g;
    g.H = input.size(-2), g.W = input.size(-1);
    g.N = input.numel() / (g.H * g.W);
    g.OH = output_size.h, g.OW = output_size.w;
    return g;
}

}  // namespace
}  // namespace detail

Tensor max_pool2d(const Tensor& input, Size2 kernel_size, Size2 stride, Size2 padding, Size2 dilation, bool ceil_mode) {
    return std::get<0>(
        detail::max_pool2d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, false, "max_pool2d"));
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Size2 kernel_size, Size2 stride,
                                                   Size2 padding, Size2 dilation, bool ceil_mode) {
    return detail::max_pool2d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, true,
                                   "max_pool2d_with_indices");
}

Tensor avg_pool2d(const Tensor& input, Size2 kernel_size, Size2 stride, Size2 padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
    const detail::PoolGeometry g =
        detail::pool_geometry(input, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d");
    NORMNET_CHECK(!divisor_override || *divisor_override != 0, "avg_pool2d: divisor must be not zero");
    const detail::AvgDivisor d{count_include_pad, divisor_override.value_or(0)};
    const Tensor x = input.contiguous();
    Tensor out = empty(detail::pooled_shape(x, g.OH, g.OW));
    detail::for_each_plane(g, [&](int64_t p) {
        detail::avg_pool2d_forward(out.data() + p * g.out_plane(), x.data() + p * g.plane(), g, d);
    });
    if (auto* node = detail::record<detail::AvgPool2DBackward>(out, {x})) node->g = g, node->d = d;
    return out;
}

Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size) {
    const detail::PoolGeometry g = detail::adaptive_geometry(input, output_size, "adaptive_avg_pool2d", true);
    const Tensor x = input.contiguous();
    Tensor out = empty(detail::pooled_shape(x, g.OH, g.OW));
    detail::for_each_plane(g, [&](int64_t p) {
        detail::adaptive_avg_pool2d_forward(out.data() + p * g.out_plane(), x.data() + p * g.plane(), g);
    });
    if (auto* node = detail::record<detail::AdaptiveAvgPool2DBackward>(out, {x})) node->g = g;
    return out;
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, Size2 output_size) {
    const detail::PoolGeometry g = detail::adaptive_geometry(input, output_size, "adaptive_max_pool2d");
    const Tensor x = input.contiguous();
    Tensor out = empty(detail::pooled_shape(x, g.OH, g.OW)), indices = empty(out.shape(), kInt64);
    detail::for_each_plane(g, [&](int64_t p) {
        detail::adaptive_max_pool2d_forward(out.data() + p * g.out_plane(),
                                            indices.data_ptr<int64_t>() + p * g.out_plane(), x.data() + p * g.plane(), g);
    });
    if (auto* node = detail::record<detail::AdaptiveMaxPool2DBackward>(out, {x}, {indices})) node->g = g;
    return {out, indices};
}

Tensor adaptive_max_pool2d(const Tensor& input, Size2 output_size) {
    return std::get<0>(adaptive_max_pool2d_with_indices(input, output_size));
}

// ---- 1-D pools: the 2-D ones on [N, C, 1, L] ----------------------------------------------------

namespace {

// input [N, C, L] or [C, L] as [N, C, 1, L] or [C, 1, L], checked as torch's 1-D pools.
Tensor as_planes(const Tensor& input, const char* op) {
    NORMNET_CHECK(input.dim() == 2 || input.dim() == 3, op, ": Expected 2D or 3D (batch mode) tensor for input, but got ",
                  input.shape());
    return input.unsqueeze(-2);
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, int64_t kernel_size, std::optional<int64_t> stride,
                                                   int64_t padding, int64_t dilation, bool ceil_mode) {
    auto [out, indices] = max_pool2d_with_indices(as_planes(input, "max_pool1d"), Size2{1, kernel_size},
                                                  Size2{1, stride.value_or(kernel_size)}, Size2{0, padding},
                                                  Size2{1, dilation}, ceil_mode);
    return {out.squeeze(-2), indices.squeeze(-2)};
}

Tensor max_pool1d(const Tensor& input, int64_t kernel_size, std::optional<int64_t> stride, int64_t padding,
                  int64_t dilation, bool ceil_mode) {
    return max_pool2d(as_planes(input, "max_pool1d"), Size2{1, kernel_size}, Size2{1, stride.value_or(kernel_size)},
                      Size2{0, padding}, Size2{1, dilation}, ceil_mode)
        .squeeze(-2);
}

Tensor avg_pool1d(const Tensor& input, int64_t kernel_size, std::optional<int64_t> stride, int64_t padding,
                  bool ceil_mode, bool count_include_pad) {
    return avg_pool2d(as_planes(input, "avg_pool1d"), Size2{1, kernel_size}, Size2{1, stride.value_or(kernel_size)},
                      Size2{0, padding}, ceil_mode, count_include_pad)
        .squeeze(-2);
}

Tensor adaptive_avg_pool1d(const Tensor& input, int64_t output_size) {
    return adaptive_avg_pool2d(as_planes(input, "adaptive_avg_pool1d"), Size2{1, output_size}).squeeze(-2);
}

Tensor adaptive_max_pool1d(const Tensor& input, int64_t output_size) {
    return adaptive_max_pool2d(as_planes(input, "adaptive_max_pool1d"), Size2{1, output_size}).squeeze(-2);
}

}  // namespace normnet

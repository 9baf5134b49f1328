// 2-D convolution (conv2d) with its backward, lowered to OpenBLAS sgemm. An image x [C, H, W] is
// lowered (im2col) to col [C * KH * KW, OH * OW], one row per (channel, kernel tap), so that per
// group the output is one product out [OC/g, P] = weight [OC/g, C/g * KH * KW] @ col, and the
// backward is two: dweight += dy @ col^T, dcol = weight^T @ dy (then col2im adds dcol back into
// dx). A 1x1 convolution with stride 1 and no padding needs no lowering: col is x itself.
//
// The lowering works on blocks of images: one image per product when an image has enough output
// positions P to keep sgemm efficient (the common case), otherwise several images side by side
// in one col ([K, B * P]), so small feature maps still make wide products. Blocks are split
// between threads outside the kernels, each thread lowering into its own slice of one pooled
// scratch tensor, so a block's col stays in that core's cache between im2col and the products;
// when there is only one block, the product itself is split over the pool instead. The weight
// gradient is summed per thread and the threads' sums added at the end (results depend on the
// thread count only through that summation order). Nothing is allocated beyond the output and
// the pooled scratch.
#include <algorithm>
#include <cstring>

#include "../parallel.hpp"
#include "gemm.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"

namespace normnet {

Size2::Size2(std::initializer_list<int64_t> v) : given(true) {
    NORMNET_CHECK(v.size() == 1 || v.size() == 2, "expected one value or a (height, width) pair, got ", v.size(),
                  " values");
    h = *v.begin();
    w = *(v.end() - 1);
}

Conv2dPadding::Conv2dPadding(std::string_view mode) {
    if (mode == "same") {
        this->mode = Mode::same;
    } else if (mode == "valid") {
        this->mode = Mode::valid;
    } else {
        fail("Invalid padding string: '", mode, "'");
    }
}

Conv1dPadding::Conv1dPadding(std::string_view mode) : mode(Conv2dPadding(mode).mode) {}

namespace detail {
namespace {

// Output positions below which images are lowered side by side into one wider product. One
// core's sgemm runs at 100-120 GFLOP/s from 16 columns up on these shapes (measured: 64 x
// {16 .. 784} x 288), so only the smallest maps (4x4 and below) gain from the copies into and
// out of a shared block.
constexpr int64_t kMinColumns = 32;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The sizes of one conv2d call. Padding is given as top/left; the bottom/right padding is
// implied by OH, OW (torch's "same" with an even kernel pads one more on the bottom/right).
struct ConvGeometry {
    int64_t N = 0, C = 0, H = 0, W = 0, OC = 0, KH = 0, KW = 0;
    int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
    int64_t OH = 0, OW = 0;
    int64_t Cg() const { return C / groups; }
    int64_t OCg() const { return OC / groups; }
    int64_t K() const { return C * KH * KW; }  // rows of col
    int64_t Kg() const { return Cg() * KH * KW; }
    int64_t P() const { return OH * OW; }
    int64_t image() const { return C * H * W; }
    // 1x1, stride 1, no padding: the image is its own col.
    bool pointwise() const { return KH == 1 && KW == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && OH == H && OW == W; }
    // Images per lowered product.
    int64_t block() const {
        if (P() >= kMinColumns) return 1;
        return std::clamp<int64_t>(ceil_div(kMinColumns, std::max<int64_t>(P(), 1)), 1, std::max<int64_t>(N, 1));
    }
};

// The output positions ow whose input column ow * sw + off lies in [0, W): [lo, hi).
void valid_range(int64_t off, int64_t sw, int64_t W, int64_t OW, int64_t& lo, int64_t& hi) {
    lo = std::min(OW, off >= 0 ? 0 : ceil_div(-off, sw));
    hi = W - off <= 0 ? 0 : std::min(OW, ceil_div(W - off, sw));
    hi = std::max(lo, hi);
}

// The common "same"-sized case (stride 1, OW == W): a tap's rows of col are one shifted copy of
// the input plane, except for up to |off_w| wrapped-around columns per row, which are padding.
bool shifted_planes(const ConvGeometry& g) { return g.sh == 1 && g.sw == 1 && g.OW == g.W; }

// One kernel tap (kh, kw) of the lowering: its offsets into the unpadded input plane and the
// output rows [oh_lo, oh_hi) that read inside the input.
struct Tap {
    int64_t off_h, off_w, oh_lo, oh_hi;
    Tap(const ConvGeometry& g, int64_t kh, int64_t kw) : off_h(kh * g.dh - g.ph), off_w(kw * g.dw - g.pw) {
        valid_range(off_h, g.sh, g.H, g.OH, oh_lo, oh_hi);
    }
    // For shifted planes: the tap's col entries [oh_lo * OW, oh_hi * OW) are plane[start + i]
    // for i in [0, len), of which [b, e) lie inside the plane.
    struct Run {
        int64_t start, len, b, e;
    };
    Run run(const ConvGeometry& g) const {
        const int64_t start = (oh_lo + off_h) * g.W + off_w, len = (oh_hi - oh_lo) * g.W;
        const int64_t b = std::clamp<int64_t>(-start, 0, len);
        return {start, len, b, std::clamp(g.H * g.W - start, b, len)};
    }
};

// Zeroes the wrapped-around (padding) columns of a shifted-plane tap's col row: columns
// [W - off_w, W) of each row for off_w > 0, [0, -off_w) for off_w < 0 (one or two, typically).
void zero_wrapped_columns(float* __restrict row, const Tap& t, const ConvGeometry& g) {
    const int64_t W = g.W;
    const int64_t first = t.off_w > 0 ? std::max<int64_t>(0, W - t.off_w) : 0;
    const int64_t last = t.off_w > 0 ? W : std::min(W, -t.off_w);
    for (int64_t oh = t.oh_lo; oh < t.oh_hi; ++oh) {
        for (int64_t j = first; j < last; ++j) row[oh * W + j] = 0.0f;
    }
}

// col: [C * KH * KW, OH * OW] at row stride ld (Overwrite) = x: [C, H, W] lowered:
// col[(c, kh, kw), (oh, ow)] = x[c, oh * sh - ph + kh * dh, ow * sw - pw + kw * dw], 0 outside x.
void im2col(float* __restrict col, int64_t ld, const float* __restrict x, const ConvGeometry& g) {
    const int64_t H = g.H, W = g.W, OH = g.OH, OW = g.OW;
    for (int64_t c = 0; c < g.C; ++c) {
        const float* plane = x + c * H * W;
        for (int64_t kh = 0; kh < g.KH; ++kh) {
            for (int64_t kw = 0; kw < g.KW; ++kw) {
                const Tap t(g, kh, kw);
                float* row = col + ((c * g.KH + kh) * g.KW + kw) * ld;
                if (shifted_planes(g)) {
                    // One copy of the rows [oh_lo, oh_hi), clipped to the plane, with zeros
                    // before and after it (the rows outside the plane and the clipped ends: one
                    // fill each side, a call per fill counting at these sizes), then the
                    // wrapped-around columns zeroed.
                    const Tap::Run r = t.run(g);
                    float* dst = row + t.oh_lo * OW;
                    std::fill(row, dst + r.b, 0.0f);
                    std::memcpy(dst + r.b, plane + r.start + r.b, static_cast<size_t>(r.e - r.b) * sizeof(float));
                    std::fill(dst + r.e, row + OH * OW, 0.0f);
                    zero_wrapped_columns(row, t, g);
                    continue;
                }
                std::fill(row, row + t.oh_lo * OW, 0.0f);
                std::fill(row + t.oh_hi * OW, row + OH * OW, 0.0f);
                int64_t lo, hi;
                valid_range(t.off_w, g.sw, W, OW, lo, hi);
                for (int64_t oh = t.oh_lo; oh < t.oh_hi; ++oh) {
                    float* dst = row + oh * OW;
                    const float* src = plane + (oh * g.sh + t.off_h) * W;
                    std::fill(dst, dst + lo, 0.0f);
                    if (g.sw == 1) {
                        for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow + t.off_w];
                    } else {
                        for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * g.sw + t.off_w];
                    }
                    std::fill(dst + hi, dst + OW, 0.0f);
                }
            }
        }
    }
}

// The tap that reads every input pixel once, unshifted (the centre of an odd kernel with "same"
// padding), or -1: col2im's first tap can then write instead of add.
int64_t identity_tap(const ConvGeometry& g) {
    if (!shifted_planes(g) || g.OH != g.H) return -1;
    if (g.ph % g.dh != 0 || g.pw % g.dw != 0 || g.ph / g.dh >= g.KH || g.pw / g.dw >= g.KW) return -1;
    return (g.ph / g.dh) * g.KW + g.pw / g.dw;
}

// dx: [C, H, W] (Store) = col: [C * KH * KW, OH * OW] at row stride ld, folded back: the adjoint
// of im2col (each input pixel gathers the col entries it was copied to). col's padding entries
// are zeroed on the way (it is scratch), so the shifted-plane case adds whole rows at once.
template <class Store>
void col2im(float* __restrict dx, float* __restrict col, int64_t ld, const ConvGeometry& g) {
    const int64_t H = g.H, W = g.W, OW = g.OW, taps = g.KH * g.KW;
    const int64_t identity = identity_tap(g);
    for (int64_t c = 0; c < g.C; ++c) {
        float* plane = dx + c * H * W;
        if (Store::beta == 0.0f) {
            // The first tap's values are written: the identity tap's row, or zeros.
            if (identity >= 0) {
                std::memcpy(plane, col + (c * taps + identity) * ld, static_cast<size_t>(H * W) * sizeof(float));
            } else {
                std::fill(plane, plane + H * W, 0.0f);
            }
        }
        for (int64_t kh = 0; kh < g.KH; ++kh) {
            for (int64_t kw = 0; kw < g.KW; ++kw) {
                if (Store::beta == 0.0f && kh * g.KW + kw == identity) continue;
                const Tap t(g, kh, kw);
                float* row = col + ((c * g.KH + kh) * g.KW + kw) * ld;
                if (shifted_planes(g)) {
                    zero_wrapped_columns(row, t, g);
                    const Tap::Run r = t.run(g);
                    const float* src = row + t.oh_lo * OW;
                    for (int64_t i = r.b; i < r.e; ++i) plane[r.start + i] += src[i];
                    continue;
                }
                int64_t lo, hi;
                valid_range(t.off_w, g.sw, W, OW, lo, hi);
                for (int64_t oh = t.oh_lo; oh < t.oh_hi; ++oh) {
                    const float* src = row + oh * OW;
                    float* dst = plane + (oh * g.sh + t.off_h) * W;
                    if (g.sw == 1) {
                        for (int64_t ow = lo; ow < hi; ++ow) dst[ow + t.off_w] += src[ow];
                    } else {
                        for (int64_t ow = lo; ow < hi; ++ow) dst[ow * g.sw + t.off_w] += src[ow];
                    }
                }
            }
        }
    }
}

// A thread's slice of the pooled scratch: col [K, B * P] (also dcol in backward; absent for a
// pointwise convolution of single images), then, for blocks of several images, tmp [OC, B * P]:
// the block's output (forward) or dy (backward) as one matrix.
int64_t col_floats(const ConvGeometry& g) { return g.pointwise() && g.block() == 1 ? 0 : g.K() * g.block() * g.P(); }
int64_t scratch_per_thread(const ConvGeometry& g) {
    return col_floats(g) + (g.block() > 1 ? g.OC * g.block() * g.P() : 0);
}
float* tmp_of(float* col, const ConvGeometry& g) { return col + col_floats(g); }

// out: [nb, OC, P] (the block's images) = conv(inp: [nb, C, H, W], weight: [OC, C/g, KH, KW]) + bias: [OC]
// (bias may be null); col: scratch [K, nb * P]; tmp: scratch [OC, nb * P] when nb > 1.
void conv2d_forward(float* __restrict out, float* __restrict col, float* __restrict tmp, const float* __restrict inp,
                    const float* __restrict weight, const float* __restrict bias, const ConvGeometry& g, int64_t nb) {
    const int64_t P = g.P(), ld = nb * P, OCg = g.OCg(), Kg = g.Kg();
    const float* cols = inp;
    if (!(g.pointwise() && nb == 1)) {
        for (int64_t j = 0; j < nb; ++j) im2col(col + j * P, ld, inp + j * g.image(), g);
        cols = col;
    }
    float* dst = nb == 1 ? out : tmp;
    if (bias) {
        for (int64_t oc = 0; oc < g.OC; ++oc) std::fill(dst + oc * ld, dst + (oc + 1) * ld, bias[oc]);
    }
    for (int64_t grp = 0; grp < g.groups; ++grp) {
        gemm(false, false, OCg, ld, Kg, 1.0f, weight + grp * OCg * Kg, Kg, cols + grp * Kg * ld, ld, bias ? 1.0f : 0.0f,
             dst + grp * OCg * ld, ld);
    }
    if (nb > 1) {
        for (int64_t j = 0; j < nb; ++j) {
            for (int64_t oc = 0; oc < g.OC; ++oc) {
                std::memcpy(out + (j * g.OC + oc) * P, tmp + oc * ld + j * P, static_cast<size_t>(P) * sizeof(float));
            }
        }
    }
}

// For the block's images: dinp: [nb, C, H, W] (Store; may be null), dweight: [OC, C/g, KH, KW]
// (= beta_w * dweight + the block's sum; may be null), dbias: [OC] += (may be null);
// dout: [nb, OC, P]; inp: [nb, C, H, W]; weight as in forward; col, tmp: scratch as in forward.
template <class Store>
void conv2d_backward(float* __restrict dinp, float* __restrict dweight, float beta_w, float* __restrict dbias,
                     float* __restrict col, float* __restrict tmp, const float* __restrict dout,
                     const float* __restrict inp, const float* __restrict weight, const ConvGeometry& g, int64_t nb) {
    const int64_t P = g.P(), ld = nb * P, OCg = g.OCg(), Kg = g.Kg();
    const float* dy = dout;
    if (nb > 1) {
        for (int64_t j = 0; j < nb; ++j) {
            for (int64_t oc = 0; oc < g.OC; ++oc) {
                std::memcpy(tmp + oc * ld + j * P, dout + (j * g.OC + oc) * P, static_cast<size_t>(P) * sizeof(float));
            }
        }
        dy = tmp;
    }
    if (dbias) {
        for (int64_t oc = 0; oc < g.OC; ++oc) {
            const float* r = dy + oc * ld;
            float s = 0.0f;
#pragma omp simd reduction(+ : s)
            for (int64_t i = 0; i < ld; ++i) s += r[i];
            dbias[oc] += s;
        }
    }
    const bool direct = g.pointwise() && nb == 1;
    if (dweight) {
        const float* cols = inp;
        if (!direct) {
            for (int64_t j = 0; j < nb; ++j) im2col(col + j * P, ld, inp + j * g.image(), g);
            cols = col;
        }
        for (int64_t grp = 0; grp < g.groups; ++grp) {
            gemm(false, true, OCg, Kg, ld, 1.0f, dy + grp * OCg * ld, ld, cols + grp * Kg * ld, ld, beta_w,
                 dweight + grp * OCg * Kg, Kg);
        }
    }
    if (!dinp) return;
    if (direct) {
        // dx = weight^T @ dy straight into the gradient (Kg == C/g rows per group).
        for (int64_t grp = 0; grp < g.groups; ++grp) {
            gemm(true, false, Kg, P, OCg, 1.0f, weight + grp * OCg * Kg, Kg, dy + grp * OCg * P, P, Store::beta,
                 dinp + grp * Kg * P, P);
        }
        return;
    }
    for (int64_t grp = 0; grp < g.groups; ++grp) {
        gemm(true, false, Kg, ld, OCg, 1.0f, weight + grp * OCg * Kg, Kg, dy + grp * OCg * ld, ld, 0.0f,
             col + grp * Kg * ld, ld);
    }
    for (int64_t j = 0; j < nb; ++j) col2im<Store>(dinp + j * g.image(), col + j * P, ld, g);
}

// Threads that share the image blocks (each with its own scratch); 1 runs the blocks in order
// and lets each product split itself over the pool. Every one of them gets at least one block.
int block_threads(int64_t blocks) { return static_cast<int>(std::clamp<int64_t>(blocks, 1, pool_threads())); }

// Calls body(thread, first_image, images, first) for every block, split between block_threads()
// threads; `first` marks a thread's first block.
template <class Body>
void for_each_block(const ConvGeometry& g, Body&& body) {
    const int64_t B = g.block(), blocks = ceil_div(g.N, B);
    parallel_for_chunks(blocks, 1, [&](int chunk, int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) body(chunk, b * B, std::min(B, g.N - b * B), b == b0);
    });
}

class ConvolutionBackward final : public OpNode {
public:
    ConvGeometry g;
    const char* name() const override { return "ConvolutionBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &weight = saved(1);
        const GradOut dx = grad_out(0), dw = grad_out(1), db = grad_out(2);
        const int64_t wsize = g.OC * g.Kg(), lowered = scratch_per_thread(g);
        const int threads = block_threads(ceil_div(g.N, g.block()));
        // Per thread: its scratch, its weight-gradient sum (thread 0 sums into dw itself), its bias sum.
        const int64_t per = lowered + wsize + g.OC;
        const Tensor scratch = empty({threads, per});
        float* base = scratch.data();
        for (int t = 0; t < threads; ++t) std::fill(base + t * per + lowered + wsize, base + (t + 1) * per, 0.0f);
        const auto run = [&]<class Store>(float* d) {
            for_each_block(g, [&](int t, int64_t n0, int64_t nb, bool first) {
                float* mine = base + t * per;
                float* wsum = t == 0 ? dw.data : mine + lowered;
                const float beta_w = !first ? 1.0f : t == 0 ? dw.beta() : 0.0f;
                conv2d_backward<Store>(d ? d + n0 * g.image() : nullptr, dw ? wsum : nullptr, beta_w,
                                       db ? mine + lowered + wsize : nullptr, mine, tmp_of(mine, g),
                                       dout.data() + n0 * g.OC * g.P(), x.data() + n0 * g.image(), weight.data(), g, nb);
            });
        };
        dx.fresh ? run.template operator()<Overwrite>(dx.data) : run.template operator()<Accumulate>(dx.data);
        if (dw) {
            if (g.N == 0 && dw.fresh) std::fill(dw.data, dw.data + wsize, 0.0f);
            for (int t = 1; t < threads; ++t) {
                const float* s = base + t * per + lowered;
                for (int64_t i = 0; i < wsize; ++i) dw.data[i] += s[i];
            }
        }
        if (db) {
            float* s0 = base + lowered + wsize;
            for (int t = 1; t < threads; ++t) {
                const float* s = base + t * per + lowered + wsize;
                for (int64_t i = 0; i < g.OC; ++i) s0[i] += s[i];
            }
            db.store(s0, g.OC);
        }
    }
};

// conv_transpose2d is conv2d's input gradient: with the geometry of the convolution that maps its
// output [N, OC, OH, OW] to its input [N, C, H, W] (weight [C, OC/g, KH, KW] is that convolution's
// [OC', C'/g, KH, KW]), its forward is conv2d_backward's dinp path (col = weight^T x, col2im), its
// input gradient conv2d_forward of dy, and its weight gradient conv2d_backward's dweight path with
// x as the "dy" and dy as the "input".
class ConvTransposeBackward final : public OpNode {
public:
    ConvGeometry g;  // of the convolution from this op's output to its input
    const char* name() const override { return "ConvolutionBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &weight = saved(1);
        const GradOut dx = grad_out(0), dw = grad_out(1), db = grad_out(2);
        const int64_t wsize = g.OC * g.Kg(), lowered = scratch_per_thread(g);
        const int threads = block_threads(ceil_div(g.N, g.block()));
        const int64_t per = lowered + wsize;
        const Tensor scratch = empty({threads, per});
        float* base = scratch.data();
        // dx as conv2d's output: written, so a gradient that holds values gets it through a copy.
        const Tensor dx_new = dx && !dx.fresh ? empty({g.N, g.OC, g.OH, g.OW}) : Tensor();
        float* dx_to = dx ? (dx.fresh ? dx.data : dx_new.data()) : nullptr;
        for_each_block(g, [&](int t, int64_t n0, int64_t nb, bool first) {
            float* mine = base + t * per;
            const float* dy = dout.data() + n0 * g.image();
            if (dx_to) conv2d_forward(dx_to + n0 * g.OC * g.P(), mine, tmp_of(mine, g), dy, weight.data(), nullptr, g, nb);
            if (dw) {
                float* wsum = t == 0 ? dw.data : mine + lowered;
                const float beta_w = !first ? 1.0f : t == 0 ? dw.beta() : 0.0f;
                conv2d_backward<Overwrite>(nullptr, wsum, beta_w, nullptr, mine, tmp_of(mine, g),
                                           x.data() + n0 * g.OC * g.P(), dy, weight.data(), g, nb);
            }
        });
        if (dx_new.defined()) {
            for (int64_t i = 0; i < dx_new.numel(); ++i) dx.data[i] += dx_new.data()[i];
        }
        if (dw) {
            if (g.N == 0 && dw.fresh) std::fill(dw.data, dw.data + wsize, 0.0f);
            for (int t = 1; t < threads; ++t) {
                const float* s = base + t * per + lowered;
                for (int64_t i = 0; i < wsize; ++i) dw.data[i] += s[i];
            }
        }
        if (db) {
            std::vector<float> sums(static_cast<size_t>(g.C), 0.0f);
            const int64_t plane = g.H * g.W;
            for (int64_t n = 0; n < g.N; ++n) {
                for (int64_t c = 0; c < g.C; ++c) {
                    const float* r = dout.data() + (n * g.C + c) * plane;
                    double s = 0.0;
                    for (int64_t i = 0; i < plane; ++i) s += r[i];
                    sums[static_cast<size_t>(c)] += static_cast<float>(s);
                }
            }
            db.store(sums.data(), g.C);
        }
    }
};

}  // namespace
}  // namespace detail

Tensor conv2d(const Tensor& input, const Tensor& weight_in, const Tensor& bias_in, Size2 stride, Conv2dPadding padding,
              Size2 dilation, int64_t groups) {
    for (const Tensor* t : {&input, &weight_in, &bias_in}) {
        NORMNET_CHECK(!t->defined() || t->dtype() == kFloat32, "conv2d: expected float32 tensors, got ", t->dtype());
    }
    NORMNET_CHECK(input.dim() == 3 || input.dim() == 4,
                  "conv2d: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: ",
                  input.shape());
    if (input.dim() == 3) {
        // Unbatched [C, H, W], as torch: a batch of one.
        const Tensor out = conv2d(input.reshape({1, input.size(0), input.size(1), input.size(2)}), weight_in, bias_in,
                                  stride, padding, dilation, groups);
        return out.view({out.size(1), out.size(2), out.size(3)});
    }
    NORMNET_CHECK(weight_in.dim() == 4, "conv2d: expected weight of shape [out_channels, in_channels / groups, kH, kW], got ",
                  weight_in.shape());
    NORMNET_CHECK(groups > 0, "conv2d: non-positive groups is not supported");
    NORMNET_CHECK(stride.h > 0 && stride.w > 0, "conv2d: non-positive stride is not supported");
    NORMNET_CHECK(dilation.h > 0 && dilation.w > 0, "conv2d: dilation should be greater than zero, but got [",
                  dilation.h, ", ", dilation.w, "]");
    detail::ConvGeometry g;
    g.N = input.size(0), g.C = input.size(1), g.H = input.size(2), g.W = input.size(3);
    g.OC = weight_in.size(0), g.KH = weight_in.size(2), g.KW = weight_in.size(3);
    g.sh = stride.h, g.sw = stride.w, g.dh = dilation.h, g.dw = dilation.w, g.groups = groups;
    NORMNET_CHECK(g.OC > 0, "conv2d: Given groups=", groups, ", expected weight to be at least 1 at dimension 0, but "
                  "got weight of size ", weight_in.shape(), " instead");
    NORMNET_CHECK(g.OC % groups == 0, "conv2d: Given groups=", groups, ", expected weight to be divisible by ", groups,
                  " at dimension 0, but got weight of size ", weight_in.shape(), " instead");
    NORMNET_CHECK(g.C == weight_in.size(1) * groups, "conv2d: Given groups=", groups, ", weight of size ",
                  weight_in.shape(), ", expected input", input.shape(), " to have ", weight_in.size(1) * groups,
                  " channels, but got ", g.C, " channels instead");
    NORMNET_CHECK(!bias_in.defined() || (bias_in.dim() == 1 && bias_in.size(0) == g.OC), "conv2d: Given weight of size ",
                  weight_in.shape(), ", expected bias to be 1-dimensional with ", g.OC, " elements, but got bias of size ",
                  bias_in.shape(), " instead");
    NORMNET_CHECK(g.N == 0 || g.C == 0 || (g.H > 0 && g.W > 0),
                  "conv2d: Only zero batch or zero channel inputs are supported, but got input shape: ", input.shape());
    const int64_t eh = g.dh * (g.KH - 1) + 1, ew = g.dw * (g.KW - 1) + 1;  // the dilated kernel
    int64_t pad_h_total = 0, pad_w_total = 0;
    if (padding.mode == Conv2dPadding::Mode::same) {
        NORMNET_CHECK(g.sh == 1 && g.sw == 1, "conv2d: padding='same' is not supported for strided convolutions");
        // As torch: the total padding (eh - 1) split with the extra one at the bottom/right.
        pad_h_total = eh - 1, pad_w_total = ew - 1;
        g.ph = pad_h_total / 2, g.pw = pad_w_total / 2;
    } else if (padding.mode == Conv2dPadding::Mode::sizes) {
        NORMNET_CHECK(padding.size.h >= 0 && padding.size.w >= 0, "conv2d: negative padding is not supported");
        g.ph = padding.size.h, g.pw = padding.size.w;
        pad_h_total = 2 * g.ph, pad_w_total = 2 * g.pw;
    }
    NORMNET_CHECK(g.H + pad_h_total >= eh && g.W + pad_w_total >= ew,
                  "conv2d: Calculated padded input size per channel: (", g.H + pad_h_total, " x ", g.W + pad_w_total,
                  "). Kernel size: (", eh, " x ", ew, "). Kernel size can't be greater than actual input size");
    g.OH = (g.H + pad_h_total - eh) / g.sh + 1;
    g.OW = (g.W + pad_w_total - ew) / g.sw + 1;

    const Tensor x = input.contiguous(), weight = weight_in.contiguous();
    const Tensor bias = bias_in.defined() ? bias_in.contiguous() : Tensor();
    Tensor out = empty({g.N, g.OC, g.OH, g.OW});
    const int64_t blocks = detail::ceil_div(g.N, g.block());
    const int64_t per = detail::scratch_per_thread(g);
    const Tensor scratch = empty({detail::block_threads(blocks), per});
    detail::for_each_block(g, [&](int t, int64_t n0, int64_t nb, bool) {
        float* col = scratch.data() + t * per;
        detail::conv2d_forward(out.data() + n0 * g.OC * g.P(), col, detail::tmp_of(col, g), x.data() + n0 * g.image(),
                               weight.data(), bias.defined() ? bias.data() : nullptr, g, nb);
    });
    if (auto* node = detail::record<detail::ConvolutionBackward>(out, {x, weight, bias}, {x, weight})) node->g = g;
    return out;
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride, Conv1dPadding padding,
              int64_t dilation, int64_t groups) {
    NORMNET_CHECK(input.dim() == 2 || input.dim() == 3,
                  "conv1d: Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: ", input.shape());
    NORMNET_CHECK(weight.dim() == 3, "conv1d: expected weight of shape [out_channels, in_channels / groups, kW], got ",
                  weight.shape());
    Conv2dPadding pad2 = Size2{0, padding.size};
    pad2.mode = padding.mode;
    const Tensor out = conv2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, Size2{1, stride}, pad2,
                              Size2{1, dilation}, groups);
    return out.squeeze(-2);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight_in, const Tensor& bias_in, Size2 stride, Size2 padding,
                        Size2 output_padding, int64_t groups, Size2 dilation) {
    for (const Tensor* t : {&input, &weight_in, &bias_in}) {
        NORMNET_CHECK(!t->defined() || t->dtype() == kFloat32, "conv_transpose2d: expected float32 tensors, got ",
                      t->dtype());
    }
    NORMNET_CHECK(input.dim() == 3 || input.dim() == 4,
                  "conv_transpose2d: Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input "
                  "of size: ", input.shape());
    if (input.dim() == 3) {
        const Tensor out = conv_transpose2d(input.unsqueeze(0), weight_in, bias_in, stride, padding, output_padding,
                                            groups, dilation);
        return out.squeeze(0);
    }
    NORMNET_CHECK(weight_in.dim() == 4, "conv_transpose2d: expected weight of shape [in_channels, out_channels / groups, "
                  "kH, kW], got ", weight_in.shape());
    NORMNET_CHECK(groups > 0, "conv_transpose2d: non-positive groups is not supported");
    NORMNET_CHECK(stride.h > 0 && stride.w > 0, "conv_transpose2d: non-positive stride is not supported");
    NORMNET_CHECK(dilation.h > 0 && dilation.w > 0, "conv_transpose2d: dilation should be greater than zero");
    NORMNET_CHECK(padding.h >= 0 && padding.w >= 0, "conv_transpose2d: negative padding is not supported");
    NORMNET_CHECK(output_padding.h >= 0 && output_padding.w >= 0 &&
                      (output_padding.h < stride.h || output_padding.h < dilation.h) &&
                      (output_padding.w < stride.w || output_padding.w < dilation.w),
                  "conv_transpose2d: output padding must be smaller than either stride or dilation, but got "
                  "output_padding (", output_padding.h, ", ", output_padding.w, "), stride (", stride.h, ", ", stride.w,
                  "), dilation (", dilation.h, ", ", dilation.w, ")");
    const int64_t C = input.size(1);
    NORMNET_CHECK(weight_in.size(0) == C, "conv_transpose2d: Given transposed=1, weight of size ", weight_in.shape(),
                  ", expected input", input.shape(), " to have ", weight_in.size(0), " channels, but got ", C,
                  " channels instead");
    NORMNET_CHECK(C % groups == 0, "conv_transpose2d: Given groups=", groups, ", expected weight to be divisible by ",
                  groups, " at dimension 0, but got weight of size ", weight_in.shape(), " instead");
    const int64_t OC = weight_in.size(1) * groups;
    NORMNET_CHECK(!bias_in.defined() || (bias_in.dim() == 1 && bias_in.size(0) == OC),
                  "conv_transpose2d: Given transposed=1, weight of size ", weight_in.shape(),
                  ", expected bias to be 1-dimensional with ", OC, " elements, but got bias of size ", bias_in.shape(),
                  " instead");
    NORMNET_CHECK(input.size(0) == 0 || C == 0 || (input.size(2) > 0 && input.size(3) > 0),
                  "conv_transpose2d: Only zero batch or zero channel inputs are supported, but got input shape: ",
                  input.shape());
    // The convolution from this op's output [N, OC, OH, OW] back to its input [N, C, H, W].
    detail::ConvGeometry g;
    g.N = input.size(0), g.C = OC, g.OC = C, g.KH = weight_in.size(2), g.KW = weight_in.size(3);
    g.sh = stride.h, g.sw = stride.w, g.ph = padding.h, g.pw = padding.w, g.dh = dilation.h, g.dw = dilation.w;
    g.groups = groups, g.OH = input.size(2), g.OW = input.size(3);
    g.H = (g.OH - 1) * g.sh - 2 * g.ph + g.dh * (g.KH - 1) + output_padding.h + 1;
    g.W = (g.OW - 1) * g.sw - 2 * g.pw + g.dw * (g.KW - 1) + output_padding.w + 1;
    NORMNET_CHECK(g.H > 0 && g.W > 0, "conv_transpose2d: Given input size per channel: (", g.OH, " x ", g.OW,
                  "). Calculated output size per channel: (", g.H, " x ", g.W, "). Output size is too small");

    const Tensor x = input.contiguous(), weight = weight_in.contiguous();
    const Tensor bias = bias_in.defined() ? bias_in.contiguous() : Tensor();
    Tensor out = empty({g.N, g.C, g.H, g.W});
    const int64_t per = detail::scratch_per_thread(g);
    const Tensor scratch = empty({detail::block_threads(detail::ceil_div(g.N, g.block())), per});
    detail::for_each_block(g, [&](int t, int64_t n0, int64_t nb, bool) {
        float* col = scratch.data() + t * per;
        float* o = out.data() + n0 * g.image();
        detail::conv2d_backward<detail::Overwrite>(o, nullptr, 0.0f, nullptr, col, detail::tmp_of(col, g),
                                                   x.data() + n0 * g.OC * g.P(), nullptr, weight.data(), g, nb);
        if (bias.defined()) {
            const int64_t plane = g.H * g.W;
            for (int64_t n = 0; n < nb; ++n) {
                for (int64_t c = 0; c < g.C; ++c) {
                    float* p = o + (n * g.C + c) * plane;
                    const float b = bias.data()[c];
                    for (int64_t i = 0; i < plane; ++i) p[i] += b;
                }
            }
        }
    });
    if (auto* node = detail::record<detail::ConvTransposeBackward>(out, {x, weight, bias}, {x, weight})) node->g = g;
    return out;
}

}  // namespace normnet

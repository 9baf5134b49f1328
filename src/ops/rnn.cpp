// Recurrent layers as fused ops over a whole sequence (as cuDNN's): lstm_layer and gru_layer run
// one layer over a batch-first sequence [N, T, I]: the input projection of every step is one
// sgemm, each step adds one sgemm of the previous state and a fused cell kernel; backward runs
// the steps in reverse with one sgemm per step and the weight and input gradients as three sgemm
// over all steps; layer_norm_lstm_layer (Ba et al.'s LayerNorm LSTM) runs the same way with its
// LayerNorms fused into the cell kernels. Variable lengths: a sample's steps past its length leave its state unchanged,
// output zeros and take no gradient, so padding changes neither outputs nor gradients.
// last_step gathers each sample's output at its last valid step (the final hidden state); the
// final cell state comes out of the LSTM ops themselves, differentiable too.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <tuple>

#include "../parallel.hpp"
#include "gemm.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"
#include "reduce.hpp"
#include "vmath.hpp"

namespace normnet {
namespace detail {
namespace {

// The cells use the vectorised sigmoid and tanh (vmath.hpp): libm's calls keep the per-unit
// loops scalar. The loops below name each gate block by its own restrict pointer and say omp simd,
// since GCC cannot otherwise tell that the blocks of one row do not overlap.
using vmath::sigmoid;
using vmath::tanh;

// Rows (samples) per chunk of a per-step cell kernel.
int64_t cell_grain(int64_t width) { return std::max<int64_t>(1, (int64_t{1} << 13) / std::max<int64_t>(width, 1)); }

// The sizes of one layer: batch N, steps T, input I, hidden H.
struct RnnDims {
    int64_t N = 0, T = 0, I = 0, H = 0;
};

// Sample n's length: T without a lengths tensor.
int64_t length_of(const int64_t* lengths, int64_t n, int64_t T) { return lengths ? lengths[n] : T; }

// gates: [N, T, G] = input: [N, T, I] @ w_ih^T + b_ih + b_hh (either bias may be null)
void input_projection(float* gates, const float* input, const float* w_ih, const float* b_ih, const float* b_hh,
                      int64_t rows, int64_t I, int64_t G) {
    for (int64_t r = 0; r < rows; ++r) {
        float* g = gates + r * G;
        for (int64_t j = 0; j < G; ++j) g[j] = (b_ih ? b_ih[j] : 0.0f) + (b_hh ? b_hh[j] : 0.0f);
    }
    gemm(false, true, rows, G, I, 1.0f, input, I, w_ih, I, 1.0f, gates, G);
}

// ---- lstm_layer ---------------------------------------------------------------------------------
// Gates in PyTorch's order i, f, g, o; c' = f * c + i * g; h' = o * tanh(c').

// One step for rows [0, rows): gates (pre-activations in, activations out) [rows, 4H] with row
// stride gs; c_prev, h/c state [rows, H] updated; out, c_out [rows, H] with row stride os.
void lstm_cell_forward(float* gates, int64_t gs, float* h_state, float* c_state, float* out, float* c_out, int64_t os,
                       const int64_t* lengths, int64_t first_row, int64_t rows, int64_t t, int64_t T, int64_t H) {
    for (int64_t r = 0; r < rows; ++r) {
        float* g = gates + r * gs;
        float* h = h_state + r * H;
        float* c = c_state + r * H;
        float* o_row = out + r * os;
        float* c_row = c_out + r * os;
        if (t >= length_of(lengths, first_row + r, T)) {  // padding: the state carries over
            std::fill_n(o_row, H, 0.0f);
            std::copy_n(c, H, c_row);
            std::fill_n(g, 4 * H, 0.0f);
            continue;
        }
        float* __restrict gi = g;
        float* __restrict gf = g + H;
        float* __restrict gc = g + 2 * H;
        float* __restrict go = g + 3 * H;
        float* __restrict hr = h;
        float* __restrict cr = c;
        float* __restrict orow = o_row;
        float* __restrict crow = c_row;
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
            const float i = sigmoid(gi[j]), f = sigmoid(gf[j]), gg = tanh(gc[j]), o = sigmoid(go[j]);
            gi[j] = i, gf[j] = f, gc[j] = gg, go[j] = o;
            const float cn = f * cr[j] + i * gg;
            const float hn = o * tanh(cn);
            cr[j] = cn, crow[j] = cn;
            hr[j] = hn, orow[j] = hn;
        }
    }
}

// One step backward for rows [0, rows): dgates [rows, 4H] (stride gs) from the saved activations,
// dh/dc [rows, H] (the gradient of the state after the step, updated to the one before it, except
// dh of valid rows, which the caller adds from dgates @ w_hh), dout [rows, H] (stride os).
void lstm_cell_backward(float* dgates, const float* gates, int64_t gs, float* dh, float* dc, const float* dout,
                        const float* c_new, const float* c_prev, int64_t os, const int64_t* lengths, int64_t first_row,
                        int64_t rows, int64_t t, int64_t T, int64_t H) {
    for (int64_t r = 0; r < rows; ++r) {
        float* d = dgates + r * gs;
        if (t >= length_of(lengths, first_row + r, T)) {
            std::fill_n(d, 4 * H, 0.0f);
            continue;
        }
        const float* g = gates + r * gs;
        float* __restrict di = d;
        float* __restrict df = d + H;
        float* __restrict dg = d + 2 * H;
        float* __restrict d_o = d + 3 * H;
        float* __restrict dcr = dc + r * H;
        const float* __restrict dhr = dh + r * H;
        const float* __restrict cn = c_new + r * os;
        const float* __restrict cp = c_prev + r * os;
        const float* __restrict dor = dout + r * os;
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
            const float i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j];
            const float tc = tanh(cn[j]);
            const float dht = dor[j] + dhr[j];
            const float dct = dcr[j] + dht * o * (1.0f - tc * tc);
            di[j] = dct * gg * i * (1.0f - i);
            df[j] = dct * cp[j] * f * (1.0f - f);
            dg[j] = dct * i * (1.0f - gg * gg);
            d_o[j] = dht * tc * o * (1.0f - o);
            dcr[j] = dct * f;
        }
    }
}

// dh of rows that took step t becomes dgates @ w_hh (in `fresh`); padded rows keep theirs.
void take_recurrent_gradient(float* dh, const float* fresh, const int64_t* lengths, int64_t N, int64_t t, int64_t T,
                             int64_t H) {
    for (int64_t n = 0; n < N; ++n) {
        if (t < length_of(lengths, n, T)) std::copy_n(fresh + n * H, H, dh + n * H);
    }
}

// lstm_layer's (and layer_norm_lstm_layer's) node has one output: the hidden states [N, T, H]
// followed by the final cell states [N, H] in one flat tensor, so that c_n is differentiable
// through the same backward (its gradient seeds the cell-state gradient of the last step).
// The caller sees two views of it.
struct PackedStates {
    Tensor out, c_n;
};
PackedStates unpack_states(const Tensor& packed, int64_t N, int64_t T, int64_t H) {
    return {packed.narrow(0, 0, N * T * H).view({N, T, H}), packed.narrow(0, N * T * H, N * H).view({N, H})};
}
// The gradient of c_n within the packed gradient: the cell-state gradient after the last step.
Tensor final_cell_gradient(const Tensor& dpacked, int64_t N, int64_t T, int64_t H) {
    Tensor dc = empty({N, H});
    std::copy_n(dpacked.data() + N * T * H, N * H, dc.data());
    return dc;
}

// The gradients of a layer's inputs that are the same for the LSTMs and GRU, from dgates [N*T, G]
// of the input projection: x ([N*T, I] = dgates @ w_ih), w_ih (dgates^T @ x) and b_ih (column
// sums; b_slot < 0: the layer has none).
void input_projection_backward(OpNode& node, const Tensor& dgates, const Tensor& x, const Tensor& w_ih, int64_t rows,
                               int64_t I, int64_t G, int x_slot, int w_slot, int b_slot) {
    if (const GradOut dx = node.grad_out(x_slot)) {
        gemm(false, false, rows, I, G, 1.0f, dgates.data(), G, w_ih.data(), I, dx.beta(), dx.data, I);
    }
    if (const GradOut dw = node.grad_out(w_slot)) {
        gemm(true, false, G, I, rows, 1.0f, dgates.data(), G, x.data(), I, dw.beta(), dw.data, I);
    }
    if (b_slot < 0) return;  // no bias
    if (const GradOut db = node.grad_out(b_slot)) sum_to(db, dgates.view({rows, G}), {G});
}

// Inputs: 0 x, 1 h0, 2 c0, 3 w_ih, 4 w_hh, 5 b_ih, 6 b_hh.
class LstmBackward final : public OpNode {
public:
    RnnDims d;
    const char* name() const override { return "LstmBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &w_ih = saved(1), &w_hh = saved(2), &gates = saved(3), &h_prev = saved(4),
                     &c_prev = saved(5), &c_new = saved(6), &lengths_t = saved(7);
        const int64_t N = d.N, T = d.T, I = d.I, H = d.H, G = 4 * H;
        const int64_t* lengths = lengths_t.defined() ? lengths_t.data_ptr<int64_t>() : nullptr;
        Tensor dgates = empty({N, T, G}), dh = zeros({N, H}), dc = final_cell_gradient(dout, N, T, H), fresh = empty({N, H});
        for (int64_t t = T - 1; t >= 0; --t) {
            parallel_for(N, cell_grain(G), [&](int64_t b, int64_t e) {
                lstm_cell_backward(dgates.data() + (b * T + t) * G, gates.data() + (b * T + t) * G, T * G,
                                   dh.data() + b * H, dc.data() + b * H, dout.data() + (b * T + t) * H,
                                   c_new.data() + (b * T + t) * H, c_prev.data() + (b * T + t) * H, T * H, lengths, b,
                                   e - b, t, T, H);
            });
            // dh before the step: dgates_t @ w_hh, for the rows that took it.
            gemm(false, false, N, H, G, 1.0f, dgates.data() + t * G, T * G, w_hh.data(), H, 0.0f, fresh.data(), H);
            take_recurrent_gradient(dh.data(), fresh.data(), lengths, N, t, T, H);
        }
        if (const GradOut dh0 = grad_out(1)) dh0.store(dh.data(), N * H);
        if (const GradOut dc0 = grad_out(2)) dc0.store(dc.data(), N * H);
        // w_hh: sum over steps of dgates_t^T @ h_{t-1}, one product over all steps; b_hh as b_ih.
        if (const GradOut dw = grad_out(4)) {
            gemm(true, false, G, H, N * T, 1.0f, dgates.data(), G, h_prev.data(), H, dw.beta(), dw.data, H);
        }
        if (const GradOut db = grad_out(6)) sum_to(db, dgates.view({N * T, G}), {G});
        input_projection_backward(*this, dgates, x, w_ih, N * T, I, G, 0, 3, 5);
    }
};

// ---- gru_layer ----------------------------------------------------------------------------------
// Gates in PyTorch's order r, z, n; n = tanh(x_n + r * (h W_hn^T + b_hn)); h' = (1 - z) * n + z * h.

// One step: xg [rows, 3H] (stride gs; the input projection plus b_ih) and hg [rows, 3H] (the
// state's projection plus b_hh) in; activations r, z, n written over xg, hg's n part kept;
// h_state [rows, H] updated, out [rows, H] (stride os).
void gru_cell_forward(float* xg, int64_t gs, const float* hg, float* h_state, float* out, int64_t os,
                      const int64_t* lengths, int64_t first_row, int64_t rows, int64_t t, int64_t T, int64_t H) {
    for (int64_t r = 0; r < rows; ++r) {
        float* g = xg + r * gs;
        const float* hh = hg + r * 3 * H;
        float* h = h_state + r * H;
        float* o_row = out + r * os;
        if (t >= length_of(lengths, first_row + r, T)) {
            std::fill_n(o_row, H, 0.0f);
            std::fill_n(g, 3 * H, 0.0f);
            continue;
        }
        float* __restrict gr = g;
        float* __restrict gz = g + H;
        float* __restrict gn = g + 2 * H;
        float* __restrict hr = h;
        float* __restrict orow = o_row;
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
            const float rr = sigmoid(gr[j] + hh[j]), z = sigmoid(gz[j] + hh[H + j]);
            const float n = tanh(gn[j] + rr * hh[2 * H + j]);
            gr[j] = rr, gz[j] = z, gn[j] = n;
            const float hn = (1.0f - z) * n + z * hr[j];
            hr[j] = hn, orow[j] = hn;
        }
    }
}

// One step backward: dxg [rows, 3H] and dhg [rows, 3H] (stride gs) from the activations, the
// state's n projection hn [rows, H] (stride os) and h_prev; dh [rows, H] updated to z * dh (the
// caller adds dhg @ w_hh for valid rows).
void gru_cell_backward(float* dxg, float* dhg, const float* act, int64_t gs, const float* hn, const float* h_prev,
                       float* dh, const float* dout, int64_t os, const int64_t* lengths, int64_t first_row, int64_t rows,
                       int64_t t, int64_t T, int64_t H) {
    for (int64_t r = 0; r < rows; ++r) {
        float* dx = dxg + r * gs;
        float* dhh = dhg + r * gs;
        if (t >= length_of(lengths, first_row + r, T)) {
            std::fill_n(dx, 3 * H, 0.0f);
            std::fill_n(dhh, 3 * H, 0.0f);
            continue;
        }
        const float* g = act + r * gs;
        for (int64_t j = 0; j < H; ++j) {
            const float rr = g[j], z = g[H + j], n = g[2 * H + j];
            const float dht = dout[r * os + j] + dh[r * H + j];
            const float dn = dht * (1.0f - z) * (1.0f - n * n);
            const float dz = dht * (h_prev[r * os + j] - n) * z * (1.0f - z);
            const float dr = dn * hn[r * os + j] * rr * (1.0f - rr);
            dx[j] = dr, dx[H + j] = dz, dx[2 * H + j] = dn;
            dhh[j] = dr, dhh[H + j] = dz, dhh[2 * H + j] = dn * rr;
            dh[r * H + j] = dht * z;
        }
    }
}

// Inputs: 0 x, 1 h0, 2 w_ih, 3 w_hh, 4 b_ih, 5 b_hh.
class GruBackward final : public OpNode {
public:
    RnnDims d;
    const char* name() const override { return "GruBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &w_ih = saved(1), &w_hh = saved(2), &act = saved(3), &hn = saved(4),
                     &h_prev = saved(5), &lengths_t = saved(6);
        const int64_t N = d.N, T = d.T, I = d.I, H = d.H, G = 3 * H;
        const int64_t* lengths = lengths_t.defined() ? lengths_t.data_ptr<int64_t>() : nullptr;
        Tensor dxg = empty({N, T, G}), dhg = empty({N, T, G}), dh = zeros({N, H}), fresh = empty({N, H});
        for (int64_t t = T - 1; t >= 0; --t) {
            parallel_for(N, cell_grain(G), [&](int64_t b, int64_t e) {
                gru_cell_backward(dxg.data() + (b * T + t) * G, dhg.data() + (b * T + t) * G, act.data() + (b * T + t) * G,
                                  T * G, hn.data() + (b * T + t) * H, h_prev.data() + (b * T + t) * H, dh.data() + b * H,
                                  dout.data() + (b * T + t) * H, T * H, lengths, b, e - b, t, T, H);
            });
            gemm(false, false, N, H, G, 1.0f, dhg.data() + t * G, T * G, w_hh.data(), H, 0.0f, fresh.data(), H);
            for (int64_t n = 0; n < N; ++n) {
                if (t >= length_of(lengths, n, T)) continue;
                for (int64_t j = 0; j < H; ++j) dh.data()[n * H + j] += fresh.data()[n * H + j];
            }
        }
        if (const GradOut dh0 = grad_out(1)) dh0.store(dh.data(), N * H);
        if (const GradOut dw = grad_out(3)) {
            gemm(true, false, G, H, N * T, 1.0f, dhg.data(), G, h_prev.data(), H, dw.beta(), dw.data, H);
        }
        if (const GradOut db = grad_out(5)) sum_to(db, dhg.view({N * T, G}), {G});
        input_projection_backward(*this, dxg, x, w_ih, N * T, I, G, 0, 2, 4);
    }
};

// ---- layer_norm_lstm_layer ----------------------------------------------------------------------
// Ba et al.'s cell (eq. 20-22), gates i, f, g, o: gates = LN_ih(x W_ih^T) + LN_hh(h W_hh^T), each
// LayerNorm over all 4H gates (LN_hh without shift: LN_ih's is the gate bias); c' = f c + i g;
// h' = o tanh(LN_c(c')). Forward and backward of a step are one pass per row: the hidden
// product's LayerNorm, the gates, the cell state's LayerNorm and the output (backward: the same
// in reverse), where the composition of ops took a dozen kernels and their tensors per step.

// What the forward keeps for the backward, [N, T] rows each (row n * T + t), in one workspace:
// the normalised products xh_ih, xh_hh [G] and cell state xh_c [H], the activations act [G]
// (i, f, g, o), tc = tanh(LN_c(c')) [H], the states before the step h_prev, c_prev [H], and the
// three rows' rstd [3] (ih, hh, c). Padded steps set only h_prev (the carried state: dW_hh's
// product reads every row; the backward skips their other values).
struct LnLstmSaved {
    float *xh_ih, *xh_hh, *act, *xh_c, *tc, *h_prev, *c_prev, *rstd;
    static int64_t floats(int64_t rows, int64_t H) { return rows * (3 * 4 * H + 4 * H + 3); }
    LnLstmSaved(float* base, int64_t rows, int64_t H) {
        const int64_t G = 4 * H;
        xh_ih = base, xh_hh = xh_ih + rows * G, act = xh_hh + rows * G;
        xh_c = act + rows * G, tc = xh_c + rows * H, h_prev = tc + rows * H, c_prev = h_prev + rows * H;
        rstd = c_prev + rows * H;
    }
};

// x: [n] normalised in place by its mean and biased variance (double, two passes); returns rstd.
float normalise_row(float* __restrict x, int64_t n, double eps) {
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) sum += x[i];
    const double m = sum / static_cast<double>(n);
    double sq = 0.0;
#pragma omp simd reduction(+ : sq)
    for (int64_t i = 0; i < n; ++i) {
        const double d = x[i] - m;
        sq += d * d;
    }
    const double s = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>((x[i] - m) * s);
    return static_cast<float>(s);
}

// LayerNorm's input gradient of one row, in place: dy [n] (the gradient of weight * xhat + bias)
// becomes dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dy * weight.
void layer_norm_row_backward(float* __restrict dy, const float* __restrict xhat, const float* __restrict weight,
                             float rstd, int64_t n) {
    float a = 0.0f, b = 0.0f;
#pragma omp simd reduction(+ : a, b)
    for (int64_t i = 0; i < n; ++i) {
        const float d = dy[i] * weight[i];
        a += d;
        b += d * xhat[i];
    }
    a /= static_cast<float>(n), b /= static_cast<float>(n);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dy[i] = (dy[i] * weight[i] - a - xhat[i] * b) * rstd;
}

// The LayerNorms' weights and shifts (shifts may be null): ih [G] (+ shift [G]), hh [G], c [H] (+ shift).
struct LnLstmParams {
    const float *w_ih, *b_ih, *w_hh, *w_c, *b_c;
    double eps;
};

// One step for rows [first_row, first_row + rows) at step t: s's rows of step t hold xh_ih (done
// before the loop) and the raw hidden product in xh_hh; h_state, c_state [rows, H] updated;
// out [rows, H] with row stride T * H.
void ln_lstm_cell_forward(const LnLstmSaved& s, float* h_state, float* c_state, float* out, const LnLstmParams& p,
                          const int64_t* lengths, int64_t first_row, int64_t rows, int64_t t, int64_t T, int64_t H) {
    const int64_t G = 4 * H;
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t n = first_row + r, row = n * T + t;
        float* __restrict h = h_state + r * H;
        float* __restrict c = c_state + r * H;
        float* __restrict o_row = out + row * H;
        float* __restrict xhh = s.xh_hh + row * G;
        float* __restrict xc = s.xh_c + row * H;
        std::copy_n(h, H, s.h_prev + row * H);
        if (t >= length_of(lengths, n, T)) {  // padding: the state carries over
            std::fill_n(o_row, H, 0.0f);
            continue;
        }
        std::copy_n(c, H, s.c_prev + row * H);
        float* rstd = s.rstd + row * 3;
        rstd[1] = normalise_row(xhh, G, p.eps);
        const float* __restrict xih = s.xh_ih + row * G;
        float* __restrict a = s.act + row * G;
#pragma omp simd
        for (int64_t j = 0; j < G; ++j) {
            a[j] = p.w_ih[j] * xih[j] + (p.b_ih ? p.b_ih[j] : 0.0f) + p.w_hh[j] * xhh[j];
        }
        float* __restrict ai = a;
        float* __restrict af = a + H;
        float* __restrict ag = a + 2 * H;
        float* __restrict ao = a + 3 * H;
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
            const float i = sigmoid(ai[j]), f = sigmoid(af[j]), gg = tanh(ag[j]);
            ai[j] = i, af[j] = f, ag[j] = gg, ao[j] = sigmoid(ao[j]);
            c[j] = f * c[j] + i * gg;
            xc[j] = c[j];
        }
        rstd[2] = normalise_row(xc, H, p.eps);
        float* __restrict tc = s.tc + row * H;
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
            tc[j] = tanh(p.w_c[j] * xc[j] + (p.b_c ? p.b_c[j] : 0.0f));
            h[j] = ao[j] * tc[j];
            o_row[j] = h[j];
        }
    }
}

// The LayerNorms' parameter sums a backward chunk adds up, [3G + 2H]: ln_ih weight [G], ln_ih
// bias [G], ln_hh weight [G], ln_c weight [H], ln_c bias [H].
int64_t ln_lstm_sums(int64_t H) { return 3 * 4 * H + 2 * H; }

// One step backward for rows [first_row, first_row + rows): from dh, dc [rows, H] (the state's
// gradients after the step; dc becomes the one before it, dh is left for the caller to replace
// by dq @ w_hh on valid rows) and dout (row stride T * H), writes the step's rows of dp [G] (the
// input product's gradient, through LN_ih) and dq [G] (the hidden product's, through LN_hh), and
// adds the rows' parameter sums into sums (ln_lstm_sums), all while the row is in cache. dy [H]:
// scratch.
void ln_lstm_cell_backward(float* dpre, float* dq, float* sums, float* dy, float* dh, float* dc, const float* dout,
                           const LnLstmSaved& s, const LnLstmParams& p, const int64_t* lengths, int64_t first_row,
                           int64_t rows, int64_t t, int64_t T, int64_t H) {
    const int64_t G = 4 * H;
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t n = first_row + r, row = n * T + t;
        float* __restrict dp = dpre + row * G;
        float* __restrict dqr = dq + row * G;
        if (t >= length_of(lengths, n, T)) {
            std::fill_n(dp, G, 0.0f);
            std::fill_n(dqr, G, 0.0f);
            continue;
        }
        const float* __restrict a = s.act + row * G;
        const float* __restrict tc = s.tc + row * H;
        const float* __restrict dor = dout + row * H;
        const float* __restrict dhr = dh + r * H;
        float* __restrict d_o = dp + 3 * H;
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
            const float o = a[3 * H + j], dht = dor[j] + dhr[j];
            d_o[j] = dht * tc[j] * o * (1.0f - o);
            dy[j] = dht * o * (1.0f - tc[j] * tc[j]);
        }
        // dcn: the gradient of c' through LN_c, in the f block of dp for the moment.
        float* __restrict dcn = dp + H;
        std::copy_n(dy, H, dcn);
        const float* rstd = s.rstd + row * 3;
        layer_norm_row_backward(dcn, s.xh_c + row * H, p.w_c, rstd[2], H);
        const float* __restrict cp = s.c_prev + row * H;
        float* __restrict dcr = dc + r * H;
        float* __restrict di = dp;
        float* __restrict df = dp + H;
        float* __restrict dg = dp + 2 * H;
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
            const float i = a[j], f = a[H + j], gg = a[2 * H + j];
            const float dct = dcr[j] + df[j];
            di[j] = dct * gg * i * (1.0f - i);
            df[j] = dct * cp[j] * f * (1.0f - f);
            dg[j] = dct * i * (1.0f - gg * gg);
            dcr[j] = dct * f;
        }
        std::copy_n(dp, G, dqr);
        const float* __restrict xih = s.xh_ih + row * G;
        const float* __restrict xhh = s.xh_hh + row * G;
        const float* __restrict xc = s.xh_c + row * H;
        float* __restrict s_ih_w = sums;
        float* __restrict s_ih_b = sums + G;
        float* __restrict s_hh_w = sums + 2 * G;
        float* __restrict s_c_w = sums + 3 * G;
        float* __restrict s_c_b = sums + 3 * G + H;
#pragma omp simd
        for (int64_t j = 0; j < G; ++j) {
            s_ih_w[j] += dp[j] * xih[j];
            s_ih_b[j] += dp[j];
            s_hh_w[j] += dp[j] * xhh[j];
        }
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
            s_c_w[j] += dy[j] * xc[j];
            s_c_b[j] += dy[j];
        }
        layer_norm_row_backward(dqr, xhh, p.w_hh, rstd[1], G);
        layer_norm_row_backward(dp, xih, p.w_ih, rstd[0], G);
    }
}

// Inputs: 0 x, 1 h0, 2 c0, 3 w_ih, 4 w_hh, 5 ln_ih weight, 6 ln_ih bias, 7 ln_hh weight,
// 8 ln_c weight, 9 ln_c bias.
class LayerNormLstmBackward final : public OpNode {
public:
    RnnDims d;
    double eps = 1e-5;
    const char* name() const override { return "LayerNormLstmBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &w_ih = saved(1), &w_hh = saved(2), &g_ih = saved(3), &g_hh = saved(4),
                     &g_c = saved(5), &ws = saved(6), &lengths_t = saved(7);
        const int64_t N = d.N, T = d.T, I = d.I, H = d.H, G = 4 * H, rows = N * T;
        const int64_t* lengths = lengths_t.defined() ? lengths_t.data_ptr<int64_t>() : nullptr;
        const LnLstmSaved s(ws.data(), rows, H);
        const LnLstmParams p{g_ih.data(), nullptr, g_hh.data(), g_c.data(), nullptr, eps};
        Tensor dpre = empty({N, T, G}), dq = empty({N, T, G});
        Tensor dh = zeros({N, H}), dc = final_cell_gradient(dout, N, T, H), fresh = empty({N, H});
        // Each chunk of rows adds its parameter sums into its own slot (and uses its own dy scratch).
        const int64_t S = ln_lstm_sums(H), slots = pool_threads();
        Tensor partials = zeros({slots, S}), scratch = empty({slots, H});
        for (int64_t t = T - 1; t >= 0; --t) {
            parallel_for_chunks(N, cell_grain(G), [&](int chunk, int64_t b, int64_t e) {
                ln_lstm_cell_backward(dpre.data(), dq.data(), partials.data() + chunk * S, scratch.data() + chunk * H,
                                      dh.data() + b * H, dc.data() + b * H, dout.data(), s, p, lengths, b, e - b, t, T,
                                      H);
            });
            gemm(false, false, N, H, G, 1.0f, dq.data() + t * G, T * G, w_hh.data(), H, 0.0f, fresh.data(), H);
            take_recurrent_gradient(dh.data(), fresh.data(), lengths, N, t, T, H);
        }
        if (const GradOut dh0 = grad_out(1)) dh0.store(dh.data(), N * H);
        if (const GradOut dc0 = grad_out(2)) dc0.store(dc.data(), N * H);
        if (const GradOut dw = grad_out(4)) {
            gemm(true, false, G, H, rows, 1.0f, dq.data(), G, s.h_prev, H, dw.beta(), dw.data, H);
        }
        float* sums = partials.data();
        for (int64_t k = 1; k < slots; ++k) {
            for (int64_t j = 0; j < S; ++j) sums[j] += sums[k * S + j];
        }
        const int64_t offsets[] = {0, G, 2 * G, 3 * G, 3 * G + H}, sizes[] = {G, G, G, H, H};
        for (int k = 0; k < 5; ++k) {
            if (const GradOut g = grad_out(5 + k)) g.store(sums + offsets[k], sizes[k]);
        }
        input_projection_backward(*this, dpre, x, w_ih, rows, I, G, 0, 3, -1);
    }
};

// Checks a layer's arguments and returns its sizes; `gates` is 4 (LSTM) or 3 (GRU).
RnnDims check_layer(const char* op, const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                    const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, const Tensor& lengths, int gates) {
    for (const Tensor* t : {&x, &h0, &c0, &w_ih, &w_hh, &b_ih, &b_hh}) {
        NORMNET_CHECK(!t->defined() || t->dtype() == kFloat32, op, ": expected float32 tensors, got ", t->dtype());
    }
    NORMNET_CHECK(x.dim() == 3, op, ": expected a batch-first input [N, T, I], got ", x.shape());
    RnnDims d{x.size(0), x.size(1), x.size(2), w_hh.defined() ? w_hh.size(-1) : 0};
    const int64_t G = gates * d.H;
    NORMNET_CHECK(w_ih.dim() == 2 && w_ih.size(0) == G && w_ih.size(1) == d.I && w_hh.dim() == 2 && w_hh.size(0) == G,
                  op, ": weights ", w_ih.shape(), " and ", w_hh.shape(), " do not fit input ", x.shape(), " (expected [",
                  G, ", ", d.I, "] and [", G, ", H])");
    for (const Tensor* b : {&b_ih, &b_hh}) {
        NORMNET_CHECK((!b->defined() || b->shape() == Shape{G}), op, ": bias of shape ", b->shape(), " (expected [", G, "])");
    }
    for (const Tensor* s : {&h0, &c0}) {
        NORMNET_CHECK((!s->defined() || s->shape() == Shape{d.N, d.H}), op, ": initial state of shape ", s->shape(),
                      " (expected [", d.N, ", ", d.H, "])");
    }
    if (lengths.defined()) {
        NORMNET_CHECK((lengths.dtype() == kInt64 && lengths.shape() == Shape{d.N}), op, ": lengths must be int64 [", d.N,
                      "], got ", lengths.dtype(), " ", lengths.shape());
        const Tensor l = lengths.contiguous();
        for (int64_t n = 0; n < d.N; ++n) {
            const int64_t v = l.data_ptr<int64_t>()[n];
            NORMNET_CHECK(v >= 1 && v <= d.T, op, ": length ", v, " of sample ", n, " is not in [1, ", d.T, "]");
        }
    }
    return d;
}

Tensor state_or_zeros(const Tensor& s, int64_t N, int64_t H) { return s.defined() ? s.contiguous().clone() : zeros({N, H}); }
float* data_or_null(const Tensor& t) { return t.defined() ? t.data() : nullptr; }

}  // namespace
}  // namespace detail

Tensor lstm_layer(const Tensor& input, const Tensor& h0, const Tensor& c0, const Tensor& w_ih, const Tensor& w_hh,
                  const Tensor& b_ih, const Tensor& b_hh, const Tensor& lengths_in, Tensor* c_n) {
    const detail::RnnDims d = detail::check_layer("lstm_layer", input, h0, c0, w_ih, w_hh, b_ih, b_hh, lengths_in, 4);
    const int64_t N = d.N, T = d.T, H = d.H, G = 4 * H;
    const Tensor x = input.contiguous(), wi = w_ih.contiguous(), wh = w_hh.contiguous();
    const Tensor lengths = lengths_in.defined() ? lengths_in.contiguous() : Tensor();
    const int64_t* len = lengths.defined() ? lengths.data_ptr<int64_t>() : nullptr;
    Tensor gates = empty({N, T, G}), h_prev = empty({N, T, H}), c_prev = empty({N, T, H}), c_new = empty({N, T, H});
    Tensor packed = empty({N * T * H + N * H});  // out, then c_n (PackedStates)
    float* out = packed.data();
    Tensor h = detail::state_or_zeros(h0, N, H), c = detail::state_or_zeros(c0, N, H);
    detail::input_projection(gates.data(), x.data(), wi.data(), detail::data_or_null(b_ih), detail::data_or_null(b_hh),
                             N * T, d.I, G);
    for (int64_t t = 0; t < T; ++t) {
        for (int64_t n = 0; n < N; ++n) {  // the state before the step, saved for backward
            std::copy_n(h.data() + n * H, H, h_prev.data() + (n * T + t) * H);
            std::copy_n(c.data() + n * H, H, c_prev.data() + (n * T + t) * H);
        }
        detail::gemm(false, true, N, G, H, 1.0f, h.data(), H, wh.data(), H, 1.0f, gates.data() + t * G, T * G);
        detail::parallel_for(N, detail::cell_grain(G), [&](int64_t b, int64_t e) {
            detail::lstm_cell_forward(gates.data() + (b * T + t) * G, T * G, h.data() + b * H, c.data() + b * H,
                                      out + (b * T + t) * H, c_new.data() + (b * T + t) * H, T * H, len, b, e - b,
                                      t, T, H);
        });
    }
    std::copy_n(c.data(), N * H, out + N * T * H);
    if (auto* node = detail::record<detail::LstmBackward>(packed, {x, h0, c0, wi, wh, b_ih, b_hh},
                                                          {x, wi, wh, gates, h_prev, c_prev, c_new, lengths})) {
        node->d = d;
    }
    auto [output, final_c] = detail::unpack_states(packed, N, T, H);
    if (c_n) *c_n = final_c;
    return output;
}

Tensor layer_norm_lstm_layer(const Tensor& input, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                             const Tensor& w_hh, const Tensor& ln_ih_weight, const Tensor& ln_ih_bias,
                             const Tensor& ln_hh_weight, const Tensor& ln_c_weight, const Tensor& ln_c_bias, double eps,
                             const Tensor& lengths_in, Tensor* c_n) {
    const char* op = "layer_norm_lstm_layer";
    const detail::RnnDims d = detail::check_layer(op, input, h0, c0, w_ih, w_hh, {}, {}, lengths_in, 4);
    const int64_t N = d.N, T = d.T, H = d.H, G = 4 * H, rows = N * T;
    for (const auto& [t, size, what] : {std::tuple{&ln_ih_weight, G, "ln_ih weight"}, {&ln_ih_bias, G, "ln_ih bias"},
                                        {&ln_hh_weight, G, "ln_hh weight"}, {&ln_c_weight, H, "ln_c weight"},
                                        {&ln_c_bias, H, "ln_c bias"}}) {
        const bool optional = std::string_view(what).ends_with("bias");
        NORMNET_CHECK((optional && !t->defined()) || (t->defined() && t->dtype() == kFloat32 && t->shape() == Shape{size}),
                      op, ": ", what, " must be float32 [", size, "], got ",
                      t->defined() ? t->shape().str() : std::string("undefined"));
    }
    NORMNET_CHECK(eps > 0.0, op, ": eps must be positive, got ", eps);
    const Tensor x = input.contiguous(), wi = w_ih.contiguous(), wh = w_hh.contiguous();
    const Tensor gi = ln_ih_weight.contiguous(), gh = ln_hh_weight.contiguous(), gc = ln_c_weight.contiguous();
    const Tensor bi = ln_ih_bias.defined() ? ln_ih_bias.contiguous() : Tensor();
    const Tensor bc = ln_c_bias.defined() ? ln_c_bias.contiguous() : Tensor();
    const Tensor lengths = lengths_in.defined() ? lengths_in.contiguous() : Tensor();
    const int64_t* len = lengths.defined() ? lengths.data_ptr<int64_t>() : nullptr;
    Tensor ws = empty({detail::LnLstmSaved::floats(rows, H)});
    const detail::LnLstmSaved s(ws.data(), rows, H);
    const detail::LnLstmParams p{gi.data(), detail::data_or_null(bi), gh.data(), gc.data(), detail::data_or_null(bc), eps};
    Tensor packed = empty({rows * H + N * H});  // out, then c_n (PackedStates)
    float* out = packed.data();
    Tensor h = detail::state_or_zeros(h0, N, H), c = detail::state_or_zeros(c0, N, H);
    // LN_ih of every step at once: the input product, each row normalised in place.
    detail::gemm(false, true, rows, G, d.I, 1.0f, x.data(), d.I, wi.data(), d.I, 0.0f, s.xh_ih, G);
    detail::parallel_for(rows, detail::cell_grain(G), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) s.rstd[r * 3] = detail::normalise_row(s.xh_ih + r * G, G, eps);
    });
    for (int64_t t = 0; t < T; ++t) {
        detail::gemm(false, true, N, G, H, 1.0f, h.data(), H, wh.data(), H, 0.0f, s.xh_hh + t * G, T * G);
        detail::parallel_for(N, detail::cell_grain(G), [&](int64_t b, int64_t e) {
            detail::ln_lstm_cell_forward(s, h.data() + b * H, c.data() + b * H, out, p, len, b, e - b, t, T, H);
        });
    }
    std::copy_n(c.data(), N * H, out + rows * H);
    if (auto* node = detail::record<detail::LayerNormLstmBackward>(
            packed, {x, h0, c0, wi, wh, gi, bi, gh, gc, bc}, {x, wi, wh, gi, gh, gc, ws, lengths})) {
        node->d = d;
        node->eps = eps;
    }
    auto [output, final_c] = detail::unpack_states(packed, N, T, H);
    if (c_n) *c_n = final_c;
    return output;
}

Tensor gru_layer(const Tensor& input, const Tensor& h0, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                 const Tensor& b_hh, const Tensor& lengths_in) {
    const detail::RnnDims d = detail::check_layer("gru_layer", input, h0, Tensor(), w_ih, w_hh, b_ih, b_hh, lengths_in, 3);
    const int64_t N = d.N, T = d.T, H = d.H, G = 3 * H;
    const Tensor x = input.contiguous(), wi = w_ih.contiguous(), wh = w_hh.contiguous();
    const Tensor lengths = lengths_in.defined() ? lengths_in.contiguous() : Tensor();
    const int64_t* len = lengths.defined() ? lengths.data_ptr<int64_t>() : nullptr;
    Tensor act = empty({N, T, G}), hn = empty({N, T, H}), h_prev = empty({N, T, H}), out = empty({N, T, H});
    Tensor hg = empty({N, G});
    Tensor h = detail::state_or_zeros(h0, N, H);
    detail::input_projection(act.data(), x.data(), wi.data(), detail::data_or_null(b_ih), nullptr, N * T, d.I, G);
    const float* bh = detail::data_or_null(b_hh);
    for (int64_t t = 0; t < T; ++t) {
        for (int64_t n = 0; n < N; ++n) {
            std::copy_n(h.data() + n * H, H, h_prev.data() + (n * T + t) * H);
            float* row = hg.data() + n * G;
            for (int64_t j = 0; j < G; ++j) row[j] = bh ? bh[j] : 0.0f;
        }
        detail::gemm(false, true, N, G, H, 1.0f, h.data(), H, wh.data(), H, 1.0f, hg.data(), G);
        for (int64_t n = 0; n < N; ++n) std::copy_n(hg.data() + n * G + 2 * H, H, hn.data() + (n * T + t) * H);
        detail::parallel_for(N, detail::cell_grain(G), [&](int64_t b, int64_t e) {
            detail::gru_cell_forward(act.data() + (b * T + t) * G, T * G, hg.data() + b * G, h.data() + b * H,
                                     out.data() + (b * T + t) * H, T * H, len, b, e - b, t, T, H);
        });
    }
    if (auto* node = detail::record<detail::GruBackward>(out, {x, h0, wi, wh, b_ih, b_hh},
                                                         {x, wi, wh, act, hn, h_prev, lengths})) {
        node->d = d;
    }
    return out;
}

namespace detail {
namespace {

// ---- last_step ----------------------------------------------------------------------------------

class LastStepBackward final : public OpNode {
public:
    int64_t N = 0, T = 0, H = 0;
    const char* name() const override { return "LastStepBackward0"; }
    void backward(const Tensor& dy) override {
        const Tensor& lengths = saved(0);
        const Tensor dx = grad_to_add(0);  // [N, T, H]: only the last valid step of each sample
        if (!dx.defined()) return;
        for (int64_t n = 0; n < N; ++n) {
            const int64_t t = (lengths.defined() ? lengths.data_ptr<int64_t>()[n] : T) - 1;
            float* d = dx.data() + (n * T + t) * H;
            for (int64_t j = 0; j < H; ++j) d[j] += dy.data()[n * H + j];
        }
    }
};

}  // namespace
}  // namespace detail

Tensor last_step(const Tensor& output_in, const Tensor& lengths_in) {
    NORMNET_CHECK(output_in.dtype() == kFloat32 && output_in.dim() == 3, "last_step: expected a float32 [N, T, H], got ",
                  output_in.dtype(), " ", output_in.shape());
    const Tensor output = output_in.contiguous();
    const int64_t N = output.size(0), T = output.size(1), H = output.size(2);
    const Tensor lengths = lengths_in.defined() ? lengths_in.contiguous() : Tensor();
    NORMNET_CHECK((!lengths.defined() || (lengths.dtype() == kInt64 && lengths.shape() == Shape{N})),
                  "last_step: lengths must be int64 [", N, "]");
    Tensor out = empty({N, H});
    for (int64_t n = 0; n < N; ++n) {
        const int64_t t = (lengths.defined() ? lengths.data_ptr<int64_t>()[n] : T) - 1;
        NORMNET_CHECK(t >= 0 && t < T, "last_step: length ", t + 1, " of sample ", n, " is not in [1, ", T, "]");
        std::copy_n(output.data() + (n * T + t) * H, H, out.data() + n * H);
    }
    if (auto* node = detail::record<detail::LastStepBackward>(out, {output}, {lengths})) {
        node->N = N, node->T = T, node->H = H;
    }
    return out;
}

}  // namespace normnet

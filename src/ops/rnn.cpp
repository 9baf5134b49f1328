// Recurrent layers as fused ops over a whole sequence (as cuDNN's): lstm_layer and gru_layer run
// one layer over a batch-first sequence [N, T, I]: the input projection of every step is one
// sgemm, each step adds one sgemm of the previous state and a fused cell kernel; backward runs
// the steps in reverse with one sgemm per step and the weight and input gradients as three sgemm
// over all steps. Variable lengths: a sample's steps past its length leave its state unchanged,
// output zeros and take no gradient, so padding changes neither outputs nor gradients.
// last_step gathers each sample's output at its last valid step (the final hidden state).
#include <algorithm>
#include <cmath>

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

// The gradients of a layer's inputs that are the same for LSTM and GRU, from dgates [N*T, G] of
// the input projection: x ([N*T, I] = dgates @ w_ih), w_ih (dgates^T @ x) and b_ih (column sums).
void input_projection_backward(OpNode& node, const Tensor& dgates, const Tensor& x, const Tensor& w_ih, int64_t rows,
                               int64_t I, int64_t G, int x_slot, int w_slot, int b_slot) {
    if (const GradOut dx = node.grad_out(x_slot)) {
        gemm(false, false, rows, I, G, 1.0f, dgates.data(), G, w_ih.data(), I, dx.beta(), dx.data, I);
    }
    if (const GradOut dw = node.grad_out(w_slot)) {
        gemm(true, false, G, I, rows, 1.0f, dgates.data(), G, x.data(), I, dw.beta(), dw.data, I);
    }
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
        Tensor dgates = empty({N, T, G}), dh = zeros({N, H}), dc = zeros({N, H}), fresh = empty({N, H});
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
    Tensor out = empty({N, T, H});
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
                                      out.data() + (b * T + t) * H, c_new.data() + (b * T + t) * H, T * H, len, b, e - b,
                                      t, T, H);
        });
    }
    if (c_n) *c_n = c;
    if (auto* node = detail::record<detail::LstmBackward>(out, {x, h0, c0, wi, wh, b_ih, b_hh},
                                                          {x, wi, wh, gates, h_prev, c_prev, c_new, lengths})) {
        node->d = d;
    }
    return out;
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

// Internal: the one forward and backward every unary elementwise op runs (exp, tanh, gelu,
// x + scalar, ...). An op is a small struct, its value and its derivative:
//
//   // y = e^x; dx = dy * y
//   struct ExpOp {
//       static constexpr const char* kBackwardName = "ExpBackward0";
//       static constexpr Uses kUses = Uses::output;   // what grad() reads: x, y, both or neither
//       float value(float x) const { return vmath::exp(x); }
//       float grad(float x, float y, float dy) const { return dy * y; }
//   };
//   Tensor exp(const Tensor& x) { return detail::unary_op(x, "exp", detail::ExpOp{}); }
//
// Members of the struct are the op's parameters (a slope, a bound, a scalar operand); the node
// keeps a copy. Kernels take the struct by value and restrict pointers, so the loops vectorise
// (the transcendental functions come from vmath.hpp); threading is split around them.
#pragma once

#include "loop.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"
#include "vmath.hpp"

namespace normnet::detail {

/// What an op's gradient reads, and so what its node saves.
enum class Uses : uint8_t { none, input, output, both };

// y: [n] = op(x). Every kernel here is flattened: GCC's inlining budget otherwise leaves the
// heavier ops' value or grad (GELU's) as a call per element, and the loop is not vectorised
// (GELU's backward ran 20x slower than its vectorised form).
template <class Op>
[[gnu::flatten]] void unary_forward(float* __restrict y, const float* __restrict x, int64_t n, const Op op) {
    for (int64_t i = 0; i < n; ++i) y[i] = op.value(x[i]);
}

// dx: [n] (Store) = op.grad(x, y, dy); x or y stand in for each other (or dy for both) when the
// op does not read them.
template <class Store, class Op>
[[gnu::flatten]] void unary_backward(float* __restrict dx, const float* __restrict dy, const float* __restrict x,
                    const float* __restrict y, int64_t n, const Op op) {
    for (int64_t i = 0; i < n; ++i) Store::put(dx[i], op.grad(x[i], y[i], dy[i]));
}

// dy: [n] = op.grad(x, y, dy), in place (dx written over dy); x and y are saved tensors (either
// stands in for the other when the op does not read it), never dy.
template <class Op>
[[gnu::flatten]] void unary_backward_over(float* __restrict dy, const float* __restrict x, const float* __restrict y, int64_t n,
                         const Op op) {
    for (int64_t i = 0; i < n; ++i) dy[i] = op.grad(x[i], y[i], dy[i]);
}

template <class Op>
class UnaryBackward final : public OpNode {
public:
    Op op;
    const char* name() const override { return Op::kBackwardName; }
    // An op whose gradient reads its input (GELU, SiLU, ...) saves the input anyway, so its
    // output need not be kept by a consumer (Linear after GELU): it is op(x) again, by the same
    // kernel, so bit for bit.
    bool recomputes_output() const override { return Op::kUses == Uses::input; }
    void recompute_output(float* y) const override {
        if constexpr (Op::kUses == Uses::input) {
            const Tensor& x = saved(0);
            parallel_for(x.numel(), kElementGrain,
                         [&](int64_t b, int64_t e) { unary_forward(y + b, x.data() + b, e - b, op); });
        }
    }
    void backward(const Tensor& dy) override {
        if constexpr (Op::kUses != Uses::none) {
            // dx written over dy when the engine allows: one activation-sized buffer fewer (the
            // GELU between a transformer's feed-forward linears, whose dy and dx are [N, ff]).
            if (const GradOut over = grad_over_dout(0, dy)) {
                const float* x = saved(0).data();
                const float* y = Op::kUses == Uses::both ? saved(1).data() : x;
                parallel_for(dy.numel(), kElementGrain, [&](int64_t b, int64_t e) {
                    unary_backward_over(over.data + b, x + b, y + b, e - b, op);
                });
                return;
            }
        }
        const GradOut dx = grad_out(0);
        if (!dx) return;
        const float* x = dy.data();
        const float* y = dy.data();
        if constexpr (Op::kUses == Uses::input || Op::kUses == Uses::both) x = saved(0).data();
        if constexpr (Op::kUses == Uses::output) y = saved(0).data();
        if constexpr (Op::kUses == Uses::both) y = saved(1).data();
        dx.write([&]<class Store>(float* d) {
            parallel_for(dy.numel(), kElementGrain, [&](int64_t b, int64_t e) {
                unary_backward<Store>(d + b, dy.data() + b, x + b, y + b, e - b, op);
            });
        });
    }
};

/// y = op(x) elementwise for a float32 x of any shape (non-contiguous views are copied first,
/// through the differentiable contiguous()); records UnaryBackward<Op> when x requires grad.
template <class Op>
Tensor unary_op(const Tensor& x_in, const char* name, const Op op) {
    NORMNET_CHECK(x_in.dtype() == kFloat32, name, ": expected a float32 tensor, got ", x_in.dtype());
    const Tensor x = x_in.contiguous();
    Tensor y = empty(x.shape());
    parallel_for(x.numel(), kElementGrain,
                 [&](int64_t b, int64_t e) { unary_forward(y.data() + b, x.data() + b, e - b, op); });
    UnaryBackward<Op>* node = nullptr;
    if constexpr (Op::kUses == Uses::none) node = record<UnaryBackward<Op>>(y, {x});
    if constexpr (Op::kUses == Uses::input) node = record<UnaryBackward<Op>>(y, {x}, {x});
    if constexpr (Op::kUses == Uses::output) node = record<UnaryBackward<Op>>(y, {x}, {y});
    if constexpr (Op::kUses == Uses::both) node = record<UnaryBackward<Op>>(y, {x}, {x, y});
    if (node) node->op = op;
    return y;
}

}  // namespace normnet::detail

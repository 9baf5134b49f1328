// Activation functions with their backwards: relu.
#include "loop.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"

namespace normnet {
namespace detail {
namespace {

// ---- relu ---------------------------------------------------------------------------------
// As torch: y = 0 where x < 0, else x (NaN and -0.0 pass through); dx = dy where y > 0 or y is
// NaN, else 0. The kernels take restrict pointers as plain arguments: read through a lambda's
// captures, the pointers were reloaded on every element and the loop stayed scalar.

// y: [n] = relu(x)
void relu_forward(float* __restrict y, const float* __restrict x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

// dx: [n] (Store) = y <= 0 ? 0 : dy
template <class Store>
void relu_backward(float* __restrict dx, const float* __restrict dy, const float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) Store::put(dx[i], y[i] <= 0.0f ? 0.0f : dy[i]);
}

class ReluBackward final : public OpNode {
public:
    const char* name() const override { return "ReluBackward0"; }
    void backward(const Tensor& dy) override {
        const Tensor& y = saved(0);
        if (const GradOut dx = grad_out(0)) {
            dx.write([&]<class Store>(float* d) {
                parallel_for(y.numel(), kElementGrain, [&](int64_t b, int64_t e) {
                    relu_backward<Store>(d + b, dy.data() + b, y.data() + b, e - b);
                });
            });
        }
    }
};

}  // namespace
}  // namespace detail

Tensor relu(const Tensor& x_in) {
    NORMNET_CHECK(x_in.dtype() == kFloat32, "relu: expected a float32 tensor, got ", x_in.dtype());
    const Tensor x = x_in.contiguous();
    Tensor y = empty(x.shape());
    detail::parallel_for(x.numel(), detail::kElementGrain,
                         [&](int64_t b, int64_t e) { detail::relu_forward(y.data() + b, x.data() + b, e - b); });
    detail::record<detail::ReluBackward>(y, {x}, {y});  // output, inputs, saved tensors
    return y;
}

}  // namespace normnet

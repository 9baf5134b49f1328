// Dropout and its backward. The mask is drawn in fixed chunks of elements, each from its own
// generator seeded by one draw of the caller's generator plus the chunk's index, so the same
// seed gives the same mask whatever the thread count, and chunks are drawn in parallel. As
// torch's CPU dropout the result is x * (keep ? 1 / (1 - p) : 0) (a dropped -x is -0, a dropped
// inf is nan), and x itself when nothing would change.
#include <cmath>

#include "loop.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"

namespace normnet {
namespace detail {
namespace {

// Elements per mask chunk (and generator); fixed, so the mask does not depend on the threads.
constexpr int64_t kDropoutChunk = 1 << 16;

// keep: [n] = a 32-bit draw >= threshold (probability 1 - threshold / 2^32), two per 64-bit draw;
// y: [n] = x * (keep ? scale : 0)
void dropout_forward(float* __restrict y, bool* __restrict keep, const float* __restrict x, float scale,
                     uint64_t threshold, Generator& gen, int64_t n) {
    for (int64_t i = 0; i < n; i += 2) {
        const uint64_t bits = gen.next_u64();
        keep[i] = (bits & 0xffffffffu) >= threshold;
        if (i + 1 < n) keep[i + 1] = (bits >> 32) >= threshold;
    }
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * (keep[i] ? scale : 0.0f);
}

// dx: [n] (Store) = dy * (keep ? scale : 0)
template <class Store>
void dropout_backward(float* __restrict dx, const float* __restrict dy, const bool* __restrict keep, float scale,
                      int64_t n) {
    for (int64_t i = 0; i < n; ++i) Store::put(dx[i], dy[i] * (keep[i] ? scale : 0.0f));
}

class DropoutBackward final : public OpNode {
public:
    float scale = 1.0f;
    // torch's CPU dropout multiplies by its noise tensor: its grad_fn is a MulBackward0.
    const char* name() const override { return "MulBackward0"; }
    void backward(const Tensor& dy) override {
        const Tensor& keep = saved(0);
        if (const GradOut dx = grad_out(0)) {
            dx.write([&]<class Store>(float* d) {
                parallel_for(dy.numel(), kElementGrain, [&](int64_t b, int64_t e) {
                    dropout_backward<Store>(d + b, dy.data() + b, keep.data_ptr<bool>() + b, scale, e - b);
                });
            });
        }
    }
};

}  // namespace
}  // namespace detail

Tensor dropout(const Tensor& x_in, double p, bool training, Generator& gen) {
    NORMNET_CHECK(x_in.dtype() == kFloat32, "dropout: expected a float32 tensor, got ", x_in.dtype());
    NORMNET_CHECK(p >= 0.0 && p <= 1.0, "dropout: dropout probability has to be between 0 and 1, but got ", p);
    if (!training || p == 0.0 || x_in.numel() == 0) return x_in;
    const Tensor x = x_in.contiguous();
    const int64_t n = x.numel();
    Tensor y = empty(x.shape()), keep = empty(x.shape(), kBool);
    if (p == 1.0) {
        // As torch: x * 0 with no random draws.
        std::fill_n(keep.data_ptr<bool>(), n, false);
        detail::parallel_for(n, detail::kElementGrain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) y.data()[i] = x.data()[i] * 0.0f;
        });
    } else {
        const float scale = 1.0f / static_cast<float>(1.0 - p);
        const auto threshold = static_cast<uint64_t>(std::llround(p * 4294967296.0));
        const uint64_t seed = gen.next_u64();
        const int64_t chunks = (n + detail::kDropoutChunk - 1) / detail::kDropoutChunk;
        detail::parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
            for (int64_t c = b; c < e; ++c) {
                Generator chunk_gen(seed + static_cast<uint64_t>(c));
                const int64_t begin = c * detail::kDropoutChunk, len = std::min(detail::kDropoutChunk, n - begin);
                detail::dropout_forward(y.data() + begin, keep.data_ptr<bool>() + begin, x.data() + begin, scale,
                                        threshold, chunk_gen, len);
            }
        });
    }
    if (auto* node = detail::record<detail::DropoutBackward>(y, {x}, {keep})) {
        node->scale = p == 1.0 ? 0.0f : 1.0f / static_cast<float>(1.0 - p);
    }
    return y;
}

// ---- feature dropout -----------------------------------------------------------------------------
// Whole channels dropped: x * noise, noise [N, C, 1, ...] drawn as dropout of ones (0 or 1 / (1 - p),
// as torch's feature_dropout). A composition: dropout's mask and the broadcasting product carry
// the gradient.

Tensor feature_dropout(const Tensor& x, double p, bool training, Generator& gen) {
    NORMNET_CHECK(x.dtype() == kFloat32, "feature_dropout: expected a float32 tensor, got ", x.dtype());
    NORMNET_CHECK(p >= 0.0 && p <= 1.0, "feature_dropout: dropout probability has to be between 0 and 1, but got ", p);
    // As torch, the rank is checked only where a mask is drawn: p 0 or 1, eval and empty inputs take any.
    if (!training || p == 0.0 || x.numel() == 0) return x;
    if (p == 1.0) return mul(x, zeros({}));  // x * 0: NaN and inf give NaN, as torch
    NORMNET_CHECK(x.dim() >= 2, "feature_dropout: Feature dropout requires at least 2 dimensions in the input, got ",
                  x.shape());
    Shape noise_shape(std::vector<int64_t>(static_cast<size_t>(x.dim()), 1));
    noise_shape[0] = x.size(0), noise_shape[1] = x.size(1);
    const Tensor noise = dropout(ones(noise_shape), p, true, gen);
    return mul(x, noise);
}

Tensor dropout1d(const Tensor& x, double p, bool training, Generator& gen) {
    NORMNET_CHECK(p >= 0.0 && p <= 1.0, "dropout1d: dropout probability has to be between 0 and 1, but got ", p);
    NORMNET_CHECK(x.dim() == 2 || x.dim() == 3, "dropout1d: Expected 2D or 3D input, but received a ", x.dim(),
                  "D input (", x.shape(), ")");
    if (x.dim() == 3) return feature_dropout(x, p, training, gen);
    return feature_dropout(x.unsqueeze(0), p, training, gen).squeeze(0);  // unbatched [C, L]
}

Tensor dropout2d(const Tensor& x, double p, bool training, Generator& gen) {
    NORMNET_CHECK(p >= 0.0 && p <= 1.0, "dropout2d: dropout probability has to be between 0 and 1, but got ", p);
    return feature_dropout(x, p, training, gen);  // as torch 1.13's Python: any input is [N, C, ...]
}

Tensor dropout3d(const Tensor& x, double p, bool training, Generator& gen) {
    NORMNET_CHECK(p >= 0.0 && p <= 1.0, "dropout3d: dropout probability has to be between 0 and 1, but got ", p);
    if (x.dim() == 5) return feature_dropout(x, p, training, gen);
    return feature_dropout(x.unsqueeze(0), p, training, gen).squeeze(0);  // unbatched [C, D, H, W]
}

}  // namespace normnet

// Mixed precision for matrix products, as torch.autocast("cpu", dtype=torch.bfloat16) does it:
// inside an AutocastGuard every matrix product normnet computes (linear, matmul, conv2d's lowered
// products, attention, the LSTM's gates, forward and backward) rounds its two operands to
// bfloat16 and sums their products in float32; its result stays float32. Everything else
// (normalisation statistics, softmax, losses, the optimizer, the weights) is float32 as before.
//
// The setting is the process's, not a thread's: normnet's own threads split the products (a
// training step runs on one thread that hands work to them).
//
// bfloat16 products need oneDNN at build time (libdnnl-dev) and a CPU with AVX512_BF16 at run
// time; bf16_unavailable_reason() says which is missing, and turning them on without it throws.
#pragma once

#include <string>

#include "normnet/export.hpp"

namespace normnet {

enum class MatmulPrecision {
    float32,   ///< float32 operands (the default)
    bfloat16,  ///< operands rounded to bfloat16, products summed in float32
};

/// "" when this build and CPU compute bfloat16 products; otherwise why not, as a sentence.
NORMNET_API std::string bf16_unavailable_reason();

/// The precision of every matrix product from now on; bfloat16 throws normnet::Error with
/// bf16_unavailable_reason() when that is not empty.
NORMNET_API void set_matmul_precision(MatmulPrecision precision);
NORMNET_API MatmulPrecision matmul_precision();

/// Sets the matrix products' precision (bfloat16 by default) for its scope and restores the one
/// before when it ends: `{ AutocastGuard bf16; loss = criterion(model.forward(x), y); loss.backward(); }`.
class NORMNET_API AutocastGuard {
public:
    explicit AutocastGuard(MatmulPrecision precision = MatmulPrecision::bfloat16);
    ~AutocastGuard();
    AutocastGuard(const AutocastGuard&) = delete;
    AutocastGuard& operator=(const AutocastGuard&) = delete;

private:
    MatmulPrecision previous_;
};

}  // namespace normnet

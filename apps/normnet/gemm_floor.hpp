// The "GEMM floor" of a training step: the lowered matrix products of its layers (the shapes,
// per-thread split and threads that conv2d and linear use) run through the sgemm wrapper alone,
// on shared operands allocated once. `normnet bench` and apps/microbench/conv_bench time it next to
// the real step; a model's registry row lists its products (ModelKind::gemm_products).
#pragma once

#include <string>
#include <vector>

namespace normnet::cli {

/// One sgemm shape: C [M, N] = op(A) [M, K] @ op(B) [K, N].
struct Product {
    bool ta = false, tb = false;
    int64_t M = 0, N = 0, K = 0;
};

/// A layer's products of one step: per image (`images` > 0, repeated for each image with the
/// images split between the threads, as conv2d runs them) or whole-batch (`images` 0, split by
/// gemm itself, as linear runs them).
struct FloorLayer {
    std::string name;
    std::vector<Product> forward, backward;
    int64_t images = 0;
};

/// scaled_dot_product_attention's products over `slices` (batch x heads) slices of [L, E]
/// queries, [S, E] keys and values: q k^T and p v forward; dv = p^T dout, dp = dout v^T,
/// dq = ds k and dk = ds^T q backward; each slice's products single-threaded, the slices split
/// between the threads (as src/ops/attention.cpp runs them).
FloorLayer attention_products(const std::string& name, int64_t slices, int64_t L, int64_t S, int64_t E);

/// The products of one TransformerEncoderLayer's step over `sequences` sequences of T tokens:
/// in_proj (d_model -> 3 d_model), attention over sequences x heads slices, out_proj, linear1
/// (d_model -> dim_feedforward) and linear2, each Linear's input gradient included.
void add_encoder_layer_products(std::vector<FloorLayer>& layers, int64_t sequences, int64_t T, int64_t d_model,
                                int64_t heads, int64_t dim_feedforward);

/// The products of one pass, on operands shared by every pass (an output per thread for per-image ones).
class FloorPass {
public:
    FloorPass(std::vector<Product> products, int64_t images);
    void run();

private:
    std::vector<Product> products_;
    int64_t images_ = 0;
    int threads_ = 1;  // the threads that split the images (each writes its own output source)
};

/// Forward and backward passes of every layer of a step, ready to run.
class StepFloor {
public:
    explicit StepFloor(const std::vector<FloorLayer>& layers);
    /// All products of one training step.
    void run();
    /// Median seconds of run() over repetitions filling `budget` seconds (at least 3, after one warm-up).
    double seconds(double budget);

private:
    std::vector<FloorPass> passes_;
};

}  // namespace normnet::cli

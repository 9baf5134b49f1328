// The "GEMM floor" of a training step: the lowered matrix products of its layers (the shapes,
// per-thread split and threads that conv2d, linear and attention use) run through the library's
// sgemm wrapper alone, on operands allocated once. Timed next to the real step, it says how far a
// step is from the matrix products it cannot avoid (`normnet bench`, apps/microbench/conv_bench).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "normnet/export.hpp"

namespace normnet::bench {

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

/// One Linear(in, out) on `rows` rows: y = x W^T forward; dW = dy^T x and (with
/// `input_needs_grad`) dx = dy W backward, as linear() calls sgemm.
NORMNET_API FloorLayer linear_products(const std::string& name, int64_t in, int64_t out, int64_t rows, bool input_needs_grad);
/// A stack of Linear layers from `in` features through `widths` (the last is the output), named
/// fc1, fc2, ...; the first layer's input gradient only when `input_needs_grad`.
NORMNET_API void add_linear_products(std::vector<FloorLayer>& layers, int64_t in, const std::vector<int64_t>& widths,
                                     int64_t batch, bool input_needs_grad);

/// scaled_dot_product_attention's products over `slices` (batch x heads) slices of [L, E]
/// queries, [S, E] keys and values: q k^T and p v forward; dv = p^T dout, dp = dout v^T,
/// dq = ds k and dk = ds^T q backward; each slice's products single-threaded, the slices split
/// between the threads (as src/ops/attention.cpp runs them).
NORMNET_API FloorLayer attention_products(const std::string& name, int64_t slices, int64_t L, int64_t S, int64_t E);

/// The products of one TransformerEncoderLayer's step over `sequences` sequences of T tokens:
/// in_proj (d_model -> 3 d_model), attention over sequences x heads slices, out_proj, linear1
/// (d_model -> dim_feedforward) and linear2, each Linear's input gradient included.
NORMNET_API void add_encoder_layer_products(std::vector<FloorLayer>& layers, int64_t sequences, int64_t T, int64_t d_model,
                                int64_t heads, int64_t dim_feedforward);

/// Floats in pages mapped for them alone (not normnet's caching allocator), so that freeing them
/// gives the memory back to the system at once.
class NORMNET_API MappedFloats {
public:
    MappedFloats() = default;
    MappedFloats(size_t n, float value);
    ~MappedFloats();
    MappedFloats(MappedFloats&& other) noexcept;
    MappedFloats& operator=(MappedFloats&& other) noexcept;
    float* data() const { return data_; }

private:
    float* data_ = nullptr;
    size_t bytes_ = 0;
};

/// Operand buffers for products run one after another: one A and one B, which every thread only
/// reads, each as large as the largest product's, and per thread one C: thread 0's for any
/// product, the others' for the per-image products (whole-batch ones run on thread 0). Every
/// product of a step writes into the same buffers, so a floor's memory is that of its largest
/// product, not the sum over the step (which at the LM's batch 32 was 390 MB, more than the
/// training step itself). What the products cost barely changes: the LM's and ViT's operands
/// are megabytes, beyond L2, so a product found them cold before and still does; per-image
/// products reused one set per thread already.
class NORMNET_API FloorOperands {
public:
    /// Room for whole-batch products (on thread 0) and per-image ones (on any of `threads`).
    FloorOperands(const std::vector<Product>& whole_batch, const std::vector<Product>& per_image, int threads);
    const float* a() const { return a_.data(); }
    const float* b() const { return b_.data(); }
    float* c(int thread) { return c_[static_cast<size_t>(thread)].data(); }
    /// Unmaps the buffers: between the floor's runs a bench's process holds only the training's
    /// memory (see TrainingPeakRss). acquire() maps them again (filled as at first; call it untimed).
    void release();
    void acquire();

private:
    size_t a_size_ = 0, b_size_ = 0, c_whole_ = 0, c_image_ = 0;
    int threads_ = 1;
    MappedFloats a_, b_;
    std::vector<MappedFloats> c_;  // [thread]
};

/// The products of one pass, with their operands allocated once (per thread for per-image ones),
/// their own or shared with other passes.
class NORMNET_API FloorPass {
public:
    FloorPass(std::vector<Product> products, int64_t images);
    FloorPass(std::vector<Product> products, int64_t images, std::shared_ptr<FloorOperands> operands);
    void run();
    /// Threads whose operands a pass of `images` needs (1 for whole-batch products).
    static int threads_for(int64_t images);

private:
    std::vector<Product> products_;
    int64_t images_ = 0;
    std::shared_ptr<FloorOperands> operands_;
};

/// Forward and backward passes of every layer of a step, ready to run.
class NORMNET_API StepFloor {
public:
    explicit StepFloor(const std::vector<FloorLayer>& layers);
    /// All products of one training step.
    void run();
    /// Median seconds of run() over repetitions filling `budget` seconds (at least 3, after one warm-up).
    double seconds(double budget);
    /// FloorOperands::release and acquire for the step's operands (run() needs them acquired,
    /// as they are after construction).
    void release() { operands_->release(); }
    void acquire() { operands_->acquire(); }

private:
    std::shared_ptr<FloorOperands> operands_;
    std::vector<FloorPass> passes_;
};

}  // namespace normnet::bench

// Data-parallel training over MPI, in torch.distributed's terms: a process group of all the
// processes a launcher (mpirun, srun, any PMIx launcher) started, collectives on tensors, and
// the pieces of a data-parallel step: broadcast the model from rank 0, average the gradients
// after backward. Built with -DNORMNET_MPI=ON (the default where CMake finds MPI); without MPI,
// or run without a launcher, the group is the one process itself and every collective is a copy.
//
//   dist::init_process_group();
//   dist::broadcast_module(model);                  // every rank starts from rank 0's weights
//   dist::GradientAllReduce reduce(model.parameters());
//   for (...) {                                      // each rank on its shard of the batch
//       loss = cross_entropy(model(x_local), y_local);
//       loss.backward();
//       reduce.all_reduce(local_batch / global_batch);  // grads = the global batch's gradient
//       optimizer.step_and_zero_grad();
//   }
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/optim.hpp"
#include "normnet/tensor.hpp"

namespace normnet::dist {

/// How all_reduce combines the ranks' values.
enum class ReduceOp { sum, max, min };

/// True when this normnet was built with MPI.
NORMNET_API bool is_available();
/// Joins the process group of the launcher's processes (MPI_Init_thread, once; later calls do
/// nothing). Without MPI or a launcher, a group of one. Finalised at exit.
NORMNET_API void init_process_group();
/// True once init_process_group() has run.
NORMNET_API bool is_initialized();
/// This process's rank in [0, world size) and the number of processes (1 before init).
NORMNET_API int get_rank();
NORMNET_API int get_world_size();
/// Waits until every rank has reached this call.
NORMNET_API void barrier();

/// t (float32 or int64, contiguous) becomes the combination over all ranks of their t, in place.
NORMNET_API void all_reduce(Tensor& t, ReduceOp op = ReduceOp::sum);
/// The same for plain doubles (metrics: loss sums, counts).
NORMNET_API void all_reduce(double* values, int64_t n, ReduceOp op = ReduceOp::sum);
/// t (contiguous) takes the values of rank src's t.
NORMNET_API void broadcast(Tensor& t, int src = 0);
/// Rank k's t at row k of the result: [world size, *t.shape] (the same shape on every rank).
NORMNET_API Tensor all_gather(const Tensor& t);
/// The same for plain doubles: rank k's n values at out[k * n, (k + 1) * n) (out holds world size x n).
NORMNET_API void all_gather(const double* values, int64_t n, double* out);

/// Every parameter and buffer of module takes rank src's values (the start of data parallelism).
NORMNET_API void broadcast_module(const Module& module, int src = 0);

/// Averages gradients across ranks with one all-reduce per step over one flat buffer (made once;
/// no allocation per step): all_reduce(scale) sums every parameter's gradient (zeros where a
/// parameter has none on this rank) over the ranks after multiplying it by `scale` (this rank's
/// share of the global batch, so the sum is the global batch's gradient), and leaves the result
/// in every parameter's .grad. Every rank must call it, also one without samples. As DDP's
/// gradient_as_bucket_view: after a call every .grad is a view of the buffer, so the backward of
/// the next step accumulates into the buffer and nothing is copied; a .grad that is not (the first
/// step, after zero_grad() set it to none) is copied in and replaced by the view, so read p.grad()
/// after the call rather than keeping the tensor from before it.
/// With `metrics` > 0 the buffer has that many more slots, for a few values of the step that the
/// ranks also want summed (a loss x samples, a count of correct predictions): all_reduce(scale,
/// values) sums them in the same call, unscaled, in float32 (exact for counts below 2^24), so
/// that a global training loss per step costs no collective of its own.
class NORMNET_API GradientAllReduce {
public:
    explicit GradientAllReduce(std::vector<Tensor> params, int64_t metrics = 0);
    void all_reduce(float scale);
    /// values: `metrics` floats, replaced by their sums over the ranks.
    void all_reduce(float scale, std::span<float> values);
    /// Seconds spent inside the MPI call, summed over all calls (for benchmarks).
    double seconds_in_allreduce() const { return seconds_; }

    /// The sharded step (collective; every rank calls it with its optimizer over the same
    /// parameters, in the same order as this reduction's): when every rank runs on one node, the
    /// flat buffer gets a twin in MPI-3 shared memory (MPI_Win_allocate_shared) and each rank
    /// owns a contiguous shard of the parameters' concatenation, about 1/N of it, on which alone
    /// its optimizer steps (Optimizer::set_shard). A step is then reduce_shard(), the optimizer
    /// step, gather_parameters(): each rank sums the ranks' gradients of its shard only, straight
    /// from shared memory, updates it, and copies the other shards' new values from their owners,
    /// so the ranks stay bit-identical with 1/N of the optimizer's work each and no allreduce.
    /// The update of an element depends only on that element, so elementwise optimizers (all of
    /// normnet's) give the same parameters as unsharded. False (and nothing changes: use
    /// all_reduce) with one process, ranks on several nodes, or an optimizer over other tensors.
    bool shard_optimizer(Optimizer& optimizer);
    bool sharded() const { return window_ != nullptr; }
    /// After backward, instead of all_reduce: this rank's shard of every .grad holds the sum over
    /// the ranks (scaled as all_reduce's), the rest of each .grad zeros; `values` are summed as
    /// all_reduce's. Then step the optimizer and call gather_parameters().
    void reduce_shard(float scale, std::span<float> values);
    /// After the optimizer's step: every parameter takes the new values of each shard from its owner.
    void gather_parameters();
    /// Every rank's optimizer state takes each shard's values from its owner (so that any rank
    /// can save all of it: before a checkpoint). Collective.
    void gather_optimizer_state(Optimizer& optimizer) const;

    ~GradientAllReduce();
    GradientAllReduce(const GradientAllReduce&) = delete;
    GradientAllReduce& operator=(const GradientAllReduce&) = delete;

private:
    void pack(float scale, std::span<const float> values);  // the gradients (scaled) and values into flat_
    void bind_gradients();                                   // every .grad a view of its slot of flat_
    std::vector<Tensor> params_;
    int64_t metrics_ = 0;
    Tensor flat_;
    double seconds_ = 0.0;
    // The sharded step: a shared segment per rank ([gradients, metrics | parameters]), their
    // addresses, and the shards' boundaries in the parameters' concatenation.
    struct Window;
    Window* window_ = nullptr;
};

/// Batch normalisation in training with statistics over every rank's batch (torch.nn.SyncBatchNorm's
/// forward, on CPUs): per channel, each rank's (count, mean, sum of squared deviations) are
/// gathered and merged in rank order with Chan et al.'s formula, so every rank normalises with
/// the global mean and biased variance and updates running_var with the global unbiased one; the
/// backward all-reduces the two per-channel sums (of dy and dy * xhat) once. The batch-1 rule
/// applies to the global count; a rank without samples (x [0, C, *]) still joins both collectives.
/// Every rank's dy must be the gradient of the same loss up to one common factor (each rank's mean
/// loss over equal local batches, as DDP; or each rank's loss weighted by its share of the global
/// batch). weight/bias gradients are this rank's part: GradientAllReduce sums them. Arguments as
/// batch_norm (in training); with one process it is batch_norm.
NORMNET_API Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                                   const Tensor& weight, const Tensor& bias, std::optional<double> momentum = 0.1,
                                   double eps = 1e-5, int64_t num_batches_tracked = 0);
/// Every BatchNorm1d and BatchNorm2d in module's tree computes its training statistics over all
/// ranks (sync_batch_norm) from now on (torch.nn.SyncBatchNorm.convert_sync_batchnorm, in place:
/// the layers keep their type and state_dict, so checkpoints stay PyTorch's BatchNorm). Returns the
/// number of layers converted.
NORMNET_API int64_t convert_sync_batchnorm(Module& module, bool sync = true);

/// Ends the whole job (every rank) with exit status `code`, as MPI_Abort: for a rank that cannot
/// go on, so the others do not wait for it forever. Without MPI, std::exit(code).
[[noreturn]] NORMNET_API void abort_job(int code);

}  // namespace normnet::dist

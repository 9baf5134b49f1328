// BatchNorm's two ways of evaluating besides its running statistics, for `normnet compare`:
// with the statistics of each test batch (training mode), and with "precise" population
// statistics recomputed over training images under the final weights (Wu and He 2018, and
// Wu and Johnson 2021, "Rethinking 'Batch' in BatchNorm"), which separates the error that small
// training batches cause from the error of running averages that lag behind the weights.
#pragma once

#include <memory>

#include "normnet/data.hpp"
#include "normnet/layers.hpp"
#include "task.hpp"

namespace normnet::cli {

/// Replaces the running_mean and running_var of every BatchNorm layer among the children of
/// `model`, a model whose forward runs its children in order (in order, each with the statistics
/// the children before it now give) by the mean and unbiased
/// variance of its inputs over all of `data` in eval mode. Statistics in double, per batch two
/// passes, combined across batches by Chan's formula.
void recompute_population_statistics(Module& model, const Examples& data);

/// The buffers of a model (running statistics), to put back after measuring.
class SavedBuffers {
public:
    explicit SavedBuffers(Module& model);
    void restore();

private:
    std::vector<Tensor> live_, saved_;
};

}  // namespace normnet::cli

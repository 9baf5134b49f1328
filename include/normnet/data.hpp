// DataLoader: seeded, reshuffled-every-epoch mini-batches over a uint8 image Dataset (turned
// into floats batch by batch) or over a user's own tensors. Iterating refills one Batch in
// place, so a training loop allocates nothing per batch once warmed up.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <optional>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/idx.hpp"
#include "normnet/tensor.hpp"

namespace normnet {

/// Options of DataLoader (PyTorch's names and defaults).
struct DataLoaderOptions {
    using Self = DataLoaderOptions;
    NORMNET_ARG(int64_t, batch_size) = 1;
    NORMNET_ARG(bool, shuffle) = true;     // reshuffle every epoch (libtorch's default); the order depends only on (seed, epoch)
    NORMNET_ARG(bool, drop_last) = false;  // drop the last batch when it is smaller than batch_size
    NORMNET_ARG(uint64_t, seed) = 0;
    // Data parallelism: batch_size is the global batch, which must divide by num_replicas; every
    // rank draws the same order and takes its contiguous slice of each global batch (rows
    // [rank * b, (rank + 1) * b) of it, b = batch_size / num_replicas), so every global step sees
    // exactly the single-process batch. A last partial batch is split the same way, which can
    // leave a rank an empty slice (it still runs the step, as every collective needs it).
    NORMNET_ARG(int64_t, num_replicas) = 1;
    NORMNET_ARG(int64_t, rank) = 0;
};

/// How uint8 pixels become floats: x / 255, then optionally (x - mean) / std.
struct ImageTransform {
    std::optional<float> mean{};  // e.g. 0.1307 for MNIST
    std::optional<float> std{};   // e.g. 0.3081 for MNIST
};

/// One mini-batch. `labels` holds int64 class indices (image datasets, tensors with int64
/// labels); `targets` holds float targets when the loader was built from float targets.
struct Batch {
    Tensor inputs;   // [B, channels, rows, cols] for images (as torchvision gives them), [B, features...] for tensors
    Tensor targets;  // [B, ...] float32, or undefined
    Tensor labels;   // [B] int64, or undefined
    int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

/// The first n examples of a dataset (all of it when n >= its size), e.g. for quick runs.
NORMNET_API Dataset take(const Dataset& dataset, int64_t n);

/// Mini-batches over an image Dataset or over a user's tensors (as torch.utils.data.DataLoader):
/// `for (const Batch& b : loader)` runs one epoch; each full pass moves to the next epoch's order.
class NORMNET_API DataLoader {
public:
    /// Batches of images as floats [B, channels, rows, cols] (IDX images: one channel) with their
    /// labels; flatten(1) gives the [B, features] rows an MLP takes.
    DataLoader(std::shared_ptr<const Dataset> dataset, const DataLoaderOptions& options, ImageTransform transform = {});
    /// Batches of rows of inputs [N, ...] with the matching rows of targets [N, ...]: float32
    /// values (Batch::targets, e.g. for regression) or int64 class labels (Batch::labels).
    DataLoader(Tensor inputs, Tensor targets, const DataLoaderOptions& options);

    /// Number of examples.
    int64_t dataset_size() const { return size_; }
    /// Batches per epoch (global batches: the same on every rank).
    int64_t num_batches() const;
    /// This rank's share of global batch `index`: its rows over the global batch's rows.
    double share(int64_t index) const;
    /// The options given at construction.
    const DataLoaderOptions& options() const { return options_; }
    /// The epoch the next iteration runs (0 first); each full iteration moves to the next.
    int64_t epoch() const { return epoch_; }
    /// Chooses the epoch (and so the shuffle order) of the next iteration, e.g. when resuming.
    void set_epoch(int64_t epoch) { epoch_ = epoch; }

    /// Input iterator over one epoch's batches; the Batch it points to is refilled by ++.
    class Iterator {
    public:
        const Batch& operator*() const { return loader_->batch_; }
        const Batch* operator->() const { return &loader_->batch_; }
        Iterator& operator++();
        bool operator!=(const Iterator& other) const { return index_ != other.index_; }

    private:
        friend class DataLoader;
        Iterator(DataLoader* loader, int64_t index) : loader_(loader), index_(index) {}
        DataLoader* loader_;
        int64_t index_;
    };
    /// Starts an epoch: shuffles (when asked) and fills the first batch.
    Iterator begin();
    /// Past the last batch of the epoch.
    Iterator end() { return Iterator(this, num_batches()); }

    /// Fills `batch` with batch number `index` of the current order (no allocation once the
    /// batch has reached full size).
    void fill(int64_t index, Batch& batch) const;

private:
    void shuffle_for_epoch(int64_t epoch);
    /// The first row (in the epoch's order) and the number of rows of this rank's part of batch `index`.
    std::pair<int64_t, int64_t> slice(int64_t index) const;

    std::shared_ptr<const Dataset> images_;
    ImageTransform transform_;
    Tensor inputs_, targets_;
    int64_t size_ = 0;
    DataLoaderOptions options_;
    std::vector<int64_t> order_;
    int64_t epoch_ = 0;
    Batch batch_;
};

}  // namespace normnet

// DataLoader: the epoch's order (a Fisher-Yates shuffle seeded by (seed, epoch), so it does not
// depend on threads or on earlier epochs and a resumed run sees the same batches), and batch
// assembly straight from the stored rows into a reused float batch.
#include "normnet/data.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "../parallel.hpp"
#include "../tensor_impl.hpp"

namespace normnet {
namespace {

uint64_t epoch_seed(uint64_t seed, int64_t epoch) {
    // Distinct, well-mixed streams per epoch: splitmix-style odd-constant mixing.
    return seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(epoch) * 0xbf58476d1ce4e5b9ULL + 1;
}

void check_options(const DataLoaderOptions& o) {
    NORMNET_CHECK(o.batch_size > 0, "DataLoader: batch_size must be positive, got ", o.batch_size);
    NORMNET_CHECK(o.num_replicas >= 1 && o.rank >= 0 && o.rank < o.num_replicas, "DataLoader: rank ", o.rank,
                  " is not in [0, num_replicas = ", o.num_replicas, ")");
    NORMNET_CHECK(o.batch_size % o.num_replicas == 0, "DataLoader: the global batch_size ", o.batch_size,
                  " does not divide by num_replicas ", o.num_replicas);
}

// Reuses `t` when it already has `shape` and `dtype` and nobody else holds it or its data; else
// allocates (a batch the caller still holds is never overwritten).
void ensure_shape(Tensor& t, const Shape& shape, Dtype dtype = kFloat32) {
    if (!t.defined() || !(t.shape() == shape) || t.dtype() != dtype || t.impl_ptr().use_count() > 1 ||
        t.impl().storage.use_count() > 1) {
        t = empty(shape, dtype);
    }
}

// The first byte of a contiguous tensor's elements.
char* byte_data(const Tensor& t) { return t.impl().bytes(); }

}  // namespace

Dataset take(const Dataset& dataset, int64_t n) {
    NORMNET_CHECK(n >= 0, "take: n must be non-negative, got ", n);
    Dataset out;
    out.name = dataset.name;
    out.num_classes = dataset.num_classes;
    out.images.rows = dataset.images.rows;
    out.images.cols = dataset.images.cols;
    out.images.channels = dataset.images.channels;
    out.images.count = std::min(n, dataset.size());
    const auto pixels = static_cast<size_t>(out.images.count * dataset.features());
    out.images.pixels.assign(dataset.images.pixels.begin(), dataset.images.pixels.begin() + static_cast<std::ptrdiff_t>(pixels));
    out.labels.assign(dataset.labels.begin(), dataset.labels.begin() + out.images.count);
    return out;
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, const DataLoaderOptions& options,
                       ImageTransform transform)
    : images_(std::move(dataset)), transform_(transform), options_(options) {
    NORMNET_CHECK(images_ != nullptr, "DataLoader: null dataset");
    check_options(options);
    NORMNET_CHECK(transform.mean.has_value() == transform.std.has_value(), "DataLoader: give both mean and std or neither");
    NORMNET_CHECK(!transform.std || *transform.std > 0.0f, "DataLoader: std must be positive");
    size_ = images_->size();
    order_.resize(static_cast<size_t>(size_));
}

DataLoader::DataLoader(Tensor inputs, Tensor targets, const DataLoaderOptions& options)
    // int32 labels are kept as int64, the dtype the losses take.
    : inputs_(inputs.contiguous()), targets_((targets.dtype() == kInt32 ? targets.to(kInt64) : targets).contiguous()),
      options_(options) {
    check_options(options);
    NORMNET_CHECK(inputs_.dim() >= 1 && targets_.dim() >= 1 && inputs_.size(0) == targets_.size(0),
                  "DataLoader: inputs of shape ", inputs_.shape(), " and targets of shape ", targets_.shape(),
                  " must have the same first dimension");
    NORMNET_CHECK(targets_.dtype() != kBool, "DataLoader: targets must be float32 values or int64 class labels, got ",
                  targets_.dtype());
    size_ = inputs_.size(0);
    order_.resize(static_cast<size_t>(size_));
}

std::pair<int64_t, int64_t> DataLoader::slice(int64_t index) const {
    const int64_t global_start = index * options_.batch_size;
    const int64_t global_rows = std::min(options_.batch_size(), size_ - global_start);
    const int64_t per_rank = options_.batch_size / options_.num_replicas;
    const int64_t begin = std::min(global_rows, options_.rank * per_rank);
    const int64_t end = std::min(global_rows, begin + per_rank);
    return {global_start + begin, end - begin};
}

double DataLoader::share(int64_t index) const {
    const int64_t global_rows = std::min(options_.batch_size(), size_ - index * options_.batch_size);
    return global_rows > 0 ? static_cast<double>(slice(index).second) / static_cast<double>(global_rows) : 0.0;
}

int64_t DataLoader::num_batches() const {
    // size_ / b rounded up, without forming size_ + b - 1 (which overflows for b near INT64_MAX).
    const int64_t b = options_.batch_size;
    return size_ / b + (!options_.drop_last && size_ % b != 0 ? 1 : 0);
}

void DataLoader::shuffle_for_epoch(int64_t epoch) {
    std::iota(order_.begin(), order_.end(), int64_t{0});
    if (!options_.shuffle) return;
    Generator gen(epoch_seed(options_.seed, epoch));
    for (int64_t i = size_ - 1; i > 0; --i) {
        const auto j = static_cast<int64_t>(gen.below(static_cast<uint64_t>(i + 1)));
        std::swap(order_[static_cast<size_t>(i)], order_[static_cast<size_t>(j)]);
    }
}

DataLoader::Iterator DataLoader::begin() {
    shuffle_for_epoch(epoch_);
    if (num_batches() > 0) fill(0, batch_);
    return Iterator(this, 0);
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
    ++index_;
    if (index_ < loader_->num_batches()) {
        loader_->fill(index_, loader_->batch_);
    } else {
        ++loader_->epoch_;  // a finished pass moves to the next epoch's order
    }
    return *this;
}

void DataLoader::fill(int64_t index, Batch& batch) const {
    NORMNET_CHECK(index >= 0 && index < num_batches(), "DataLoader: batch ", index, " out of range (", num_batches(),
          " batches)");
    // This rank's slice of the global batch. (Plain variables, not a structured binding: the
    // lambdas below capture B, which clang before 16 cannot do for a binding.)
    const std::pair<int64_t, int64_t> range = slice(index);
    const int64_t start = range.first, B = range.second;
    const int64_t* rows = order_.data() + start;
    if (images_) {
        const int64_t F = images_->features();
        ensure_shape(batch.inputs, {B, images_->images.channels, images_->images.rows, images_->images.cols});
        // Each value computed as PyTorch does (x / 255, then (x - mean) / std, in float32), so a
        // batch is bit for bit what torchvision would give; plain divisions vectorise well.
        float* dst = batch.inputs.data();
        const bool standardise = transform_.mean.has_value();
        const float mean = transform_.mean.value_or(0.0f), std = transform_.std.value_or(1.0f);
        detail::parallel_for(B, 32, [&](int64_t first, int64_t last) {
            for (int64_t b = first; b < last; ++b) {
                const uint8_t* src = images_->images.pixels.data() + rows[b] * F;
                float* out = dst + b * F;
                if (standardise) {
                    for (int64_t f = 0; f < F; ++f) out[f] = (static_cast<float>(src[f]) / 255.0f - mean) / std;
                } else {
                    for (int64_t f = 0; f < F; ++f) out[f] = static_cast<float>(src[f]) / 255.0f;
                }
            }
        });
        ensure_shape(batch.labels, {B}, kInt64);
        int64_t* labels = batch.labels.data_ptr<int64_t>();
        for (int64_t b = 0; b < B; ++b) labels[b] = images_->labels[static_cast<size_t>(rows[b])];
        batch.targets = Tensor();
        return;
    }
    // Rows of `from` (any dtype) in this batch's order.
    const auto gather = [&](const Tensor& from, Tensor& to) {
        Shape shape = from.shape();
        shape[0] = B;
        ensure_shape(to, shape, from.dtype());
        int64_t row = 1;
        for (int d = 1; d < from.dim(); ++d) row *= from.size(d);
        const auto bytes = static_cast<size_t>(row * element_size(from.dtype()));
        for (int64_t b = 0; b < B; ++b) {
            std::memcpy(byte_data(to) + static_cast<size_t>(b) * bytes, byte_data(from) + static_cast<size_t>(rows[b]) * bytes,
                        bytes);
        }
    };
    gather(inputs_, batch.inputs);
    const bool labels = targets_.dtype() == kInt64;
    gather(targets_, labels ? batch.labels : batch.targets);
    (labels ? batch.targets : batch.labels) = Tensor();
}

}  // namespace normnet

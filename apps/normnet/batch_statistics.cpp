// Precise BatchNorm statistics: each BatchNorm layer's inputs over a dataset, layer by layer.
#include "batch_statistics.hpp"

#include <vector>

#include "normnet/autograd.hpp"

namespace normnet::cli {

SavedBuffers::SavedBuffers(Module& model) : live_(model.buffers()) {
    for (const Tensor& b : live_) saved_.push_back(b.clone());
}

void SavedBuffers::restore() {
    for (size_t i = 0; i < live_.size(); ++i) live_[i].copy_(saved_[i]);
}

namespace {

// Per-channel count, mean and sum of squared deviations, merged batch by batch.
struct ChannelMoments {
    std::vector<double> mean, m2;
    double count = 0;

    // x: [B, C, *] (contiguous)
    void add(const Tensor& x) {
        const int64_t B = x.size(0), C = x.size(1), inner = x.numel() / (B * C);
        if (mean.empty()) mean.assign(static_cast<size_t>(C), 0.0), m2.assign(static_cast<size_t>(C), 0.0);
        const float* p = x.data();
        const double n = static_cast<double>(B * inner);
        for (int64_t c = 0; c < C; ++c) {
            double sum = 0;
            for (int64_t b = 0; b < B; ++b) {
                for (int64_t i = 0; i < inner; ++i) sum += p[(b * C + c) * inner + i];
            }
            const double m = sum / n;
            double squares = 0;
            for (int64_t b = 0; b < B; ++b) {
                for (int64_t i = 0; i < inner; ++i) {
                    const double d = p[(b * C + c) * inner + i] - m;
                    squares += d * d;
                }
            }
            // Chan et al.: the moments of the union of two sets from each set's.
            const auto k = static_cast<size_t>(c);
            const double total = count + n, delta = m - mean[k];
            mean[k] += delta * n / total;
            m2[k] += squares + delta * delta * count * n / total;
        }
        count += n;
    }
};

}  // namespace

void recompute_population_statistics(Module& model, const Examples& data) {
    NoGradGuard no_grad;
    const bool was_training = model.is_training();
    model.eval();
    const std::vector<std::shared_ptr<Module>> layers = model.children();
    for (size_t k = 0; k < layers.size(); ++k) {
        if (std::dynamic_pointer_cast<BatchNormBase>(layers[k]) == nullptr) continue;
        ChannelMoments moments;
        for (const Batch& batch : data.loader(DataLoaderOptions{.batch_size = 500, .shuffle = false})) {
            Tensor h = batch.inputs.flatten(1);
            for (size_t j = 0; j < k; ++j) h = layers[j]->forward(h);
            moments.add(h.contiguous());
        }
        std::vector<float> mean, var;
        for (size_t c = 0; c < moments.mean.size(); ++c) {
            mean.push_back(static_cast<float>(moments.mean[c]));
            var.push_back(static_cast<float>(moments.m2[c] / std::max(1.0, moments.count - 1)));  // unbiased, as running_var
        }
        const auto C = static_cast<int64_t>(mean.size());
        for (auto& [name, buffer] : layers[k]->named_buffers()) {
            if (name == "running_mean") buffer.copy_(from_vector(mean, {C}));
            if (name == "running_var") buffer.copy_(from_vector(var, {C}));
        }
    }
    model.train(was_training);
}

}  // namespace normnet::cli

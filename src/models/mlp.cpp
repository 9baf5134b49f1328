// MLP: Linear -> ReLU -> norm per hidden size, then Linear.
#include "normnet/models/mlp.hpp"

#include <string>

#include "normnet/nn/activation.hpp"
#include "normnet/nn/linear.hpp"

namespace normnet::models {

MLP::MLP(const MLPOptions& options) : options_(options) {
    int64_t width = options.in_features;
    const auto add = [this](std::shared_ptr<Module> m) { add_child(std::to_string(named_children().size()), std::move(m)); };
    for (int64_t h : options.hidden) {
        add(std::make_shared<Linear>(width, h));
        add(std::make_shared<ReLU>());
        if (auto norm = make_norm(options.norm, NormSite::features, {.channels = h}, "MLP").module) add(norm);
        width = h;
    }
    add(std::make_shared<Linear>(width, options.num_classes));
}

Tensor MLP::forward(const Tensor& x) {
    Tensor h = x;
    for (const auto& [name, layer] : named_children()) h = layer->forward(h);
    return h;
}

}  // namespace normnet::models

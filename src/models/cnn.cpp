// CNN: conv blocks with the norm -> max-pool -> ReLU fused, then the Linear layers.
#include "normnet/models/cnn.hpp"

#include <string>

#include "normnet/nn/activation.hpp"
#include "normnet/nn/conv.hpp"
#include "normnet/nn/linear.hpp"
#include "normnet/nn/pooling.hpp"

namespace normnet::models {

CNN::CNN(const CNNOptions& options) : options_(options) {
    const auto& o = options;
    // Adds a child under the next index; unless `fused` takes its place, its forward is a step.
    const auto add = [this](std::shared_ptr<Module> m, bool step = true) {
        Module* raw = m.get();
        add_child(std::to_string(named_children().size()), std::move(m));
        if (step) steps_.push_back([raw](const Tensor& x) { return raw->forward(x); });
    };
    add(std::make_shared<Unflatten>(1, std::vector<int64_t>{o.in_channels, o.height, o.width}));
    int64_t in = o.in_channels, h = o.height, w = o.width;
    for (int64_t c : o.channels) {
        add(std::make_shared<Conv2d>(Conv2dOptions{.in_channels = in, .out_channels = c, .kernel_size = 3, .padding = 1}));
        NormLayer norm = make_norm(o.norm, NormSite::channels, {.channels = c, .extent = {c, h, w}, .groups = o.groups}, "CNN");
        const bool fused = static_cast<bool>(norm.max_pool2d_relu);
        if (norm.module) add(norm.module, !fused);
        if (fused) steps_.push_back(std::move(norm.max_pool2d_relu));
        // No parameters: the indices of the layers after them are the Sequential's.
        add(std::make_shared<MaxPool2d>(2), !fused);
        add(std::make_shared<ReLU>(), !fused);
        in = c;
        h /= 2;
        w /= 2;
    }
    add(std::make_shared<Flatten>());
    int64_t width = in * h * w;
    for (int64_t f : o.fc) {
        add(std::make_shared<Linear>(width, f));
        add(std::make_shared<ReLU>());
        width = f;
    }
    add(std::make_shared<Linear>(width, o.num_classes));
}

Tensor CNN::forward(const Tensor& x) {
    // Images already [N, C, H, W] skip the first step (the Unflatten of loader rows).
    Tensor h = x;
    for (size_t i = x.dim() == 4 ? 1 : 0; i < steps_.size(); ++i) h = steps_[i](h);
    return h;
}

}  // namespace normnet::models

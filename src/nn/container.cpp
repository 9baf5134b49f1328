// Sequential: children named "0", "1", ... run in order.
#include "normnet/nn/container.hpp"

namespace normnet {


Sequential::Sequential(std::initializer_list<AnyModule> modules) {
    for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(AnyModule module) { add_child(std::to_string(size()), module.ptr()); }

Tensor Sequential::forward(const Tensor& x) {
    Tensor h = x;
    for (const auto& [name, child] : named_children()) h = child->forward(h);
    return h;
}

const std::shared_ptr<Module>& Sequential::operator[](size_t index) const {
    NORMNET_CHECK(index < size(), "Sequential: index ", index, " is out of range for ", size(), " modules");
    return named_children()[index].second;
}

}  // namespace normnet

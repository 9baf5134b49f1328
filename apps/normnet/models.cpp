// The model registry's table and lookups.
#include "models.hpp"

namespace normnet::cli {

const std::vector<const ModelKind*>& model_kinds() {
    static const std::vector<const ModelKind*> table{&mlp_model(), &cnn_model()};
    return table;
}

const ModelKind& model_kind(const std::string& name, const std::string& where) {
    for (const ModelKind* k : model_kinds()) {
        if (k->name == name) return *k;
    }
    fail(where, ": unknown model '", name, "' (expected ", model_choices(), ")");
}

double linear_stack_parameters(double in, const std::vector<int64_t>& widths) {
    double total = 0;
    for (int64_t w : widths) {
        total += (in + 1) * static_cast<double>(w);
        in = static_cast<double>(w);
    }
    return total;
}

// y = x W^T forward; dW = dy^T x and dx = dy W backward, as linear() calls sgemm.
void add_linear_products(std::vector<FloorLayer>& layers, int64_t in, const std::vector<int64_t>& widths, int64_t batch,
                         bool input_needs_grad) {
    for (size_t l = 0; l < widths.size(); ++l) {
        const int64_t OC = widths[l];
        FloorLayer f{"fc" + std::to_string(l + 1), {{false, true, batch, OC, in}}, {{true, false, OC, in, batch}}, 0};
        if (l > 0 || input_needs_grad) f.backward.push_back({false, false, batch, in, OC});
        layers.push_back(f);
        in = OC;
    }
}

std::string model_choices() {
    std::string s;
    const auto& kinds = model_kinds();
    for (size_t i = 0; i < kinds.size(); ++i) s += (i == 0 ? "" : i + 1 == kinds.size() ? " or " : ", ") + kinds[i]->name;
    return s;
}

}  // namespace normnet::cli

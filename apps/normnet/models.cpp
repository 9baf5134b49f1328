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

std::string model_choices() {
    std::string s;
    const auto& kinds = model_kinds();
    for (size_t i = 0; i < kinds.size(); ++i) s += (i == 0 ? "" : i + 1 == kinds.size() ? " or " : ", ") + kinds[i]->name;
    return s;
}

}  // namespace normnet::cli

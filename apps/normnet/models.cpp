// The model registry's table and lookups.
#include "models.hpp"

namespace normnet::cli {

const std::vector<const ModelKind*>& model_kinds() {
    static const std::vector<const ModelKind*> table{&mlp_model(), &cnn_model(), &vit_model(), &lstm_model(), &lm_model()};
    return table;
}

const ModelKind& model_kind(const std::string& name, const std::string& where) {
    for (const ModelKind* k : model_kinds()) {
        if (k->name == name) return *k;
    }
    fail(where, ": unknown model '", name, "' (expected ", model_choices(), ")");
}

const ModelKind& model_kind_of_json(const std::string& type) {
    for (const ModelKind* k : model_kinds()) {
        if (!k->json_type.empty() && k->json_type == type) return *k;
    }
    return model_kind(type, "model type");
}

double linear_stack_parameters(double in, const std::vector<int64_t>& widths) {
    double total = 0;
    for (int64_t w : widths) {
        total += (in + 1) * static_cast<double>(w);
        in = static_cast<double>(w);
    }
    return total;
}

ImageShape image_of(const ModelSpec& spec) {
    const auto& i = spec.size("image");
    return {i.at(0), i.at(1), i.at(2)};
}

std::vector<int64_t> image_dims(const ModelSpec& spec) {
    const ImageShape im = image_of(spec);
    return {im.channels, im.height, im.width};
}

void check_image(const ModelSpec& spec, const std::string& where) {
    const auto& image = spec.size("image");
    NORMNET_CHECK(image.size() == 3, where, ": image must be [channels, height, width], got ", image.size(), " sizes");
    const ImageShape im = image_of(spec);
    NORMNET_CHECK(static_cast<double>(im.channels) * static_cast<double>(im.height) * static_cast<double>(im.width) ==
                      static_cast<double>(spec.inputs),
                  where, ": image ", im.channels, "x", im.height, "x", im.width, " does not have ", spec.inputs, " inputs");
}

std::string norms_per_model() {
    std::string s;
    for (const ModelKind* k : model_kinds()) s += (s.empty() ? "" : "; ") + k->name + " any of " + norm_choices(k->site, ",");
    return s;
}

const ModelChoice& choice_of(const ModelSpec& spec, const ModelOption& option) {
    const int64_t v = spec.scalar(option.key);
    NORMNET_CHECK(v >= 1 && v <= static_cast<int64_t>(option.choices.size()), option.flag, ": choice ", v, " out of range");
    return option.choices[static_cast<size_t>(v - 1)];
}

int64_t choice_index(const ModelOption& option, const std::string& name, const std::string& where) {
    std::string names;
    for (size_t i = 0; i < option.choices.size(); ++i) {
        if (option.choices[i].name == name) return static_cast<int64_t>(i + 1);
        names += (i == 0 ? "" : i + 1 == option.choices.size() ? " or " : ", ") + option.choices[i].name;
    }
    fail(where, ": unknown value '", name, "' (expected ", names, ")");
}

std::string model_choices() {
    std::string s;
    const auto& kinds = model_kinds();
    for (size_t i = 0; i < kinds.size(); ++i) s += (i == 0 ? "" : i + 1 == kinds.size() ? " or " : ", ") + kinds[i]->name;
    return s;
}

}  // namespace normnet::cli

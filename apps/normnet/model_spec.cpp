// ModelSpec: text forms and checks, through the registry row of its type.
#include "model_spec.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "models.hpp"

namespace normnet::cli {

ModelSpec ModelSpec::defaults(const std::string& type) {
    const ModelKind& k = model_kind(type);
    ModelSpec s;
    s.type = k.name;
    s.norm = k.default_norm;
    s.sizes.clear();
    for (const ModelOption& o : k.options) {
        if (!o.dropout) s.sizes[o.key] = o.defaults;
    }
    if (k.task == kLanguageModel) s.inputs = s.classes = 0;  // the vocabulary's, once the text is read
    return s;
}

const ModelKind& ModelSpec::kind() const { return model_kind(type, "model type"); }

const std::vector<int64_t>& ModelSpec::size(const std::string& key) const {
    const auto it = sizes.find(key);
    NORMNET_CHECK(it != sizes.end(), "the ", type, " model has no size '", key, "'");
    return it->second;
}

std::string ModelSpec::str() const {
    const ModelKind& k = kind();
    return k.str ? k.str(*this) : k.describe(*this) + " " + norm.name();
}

std::string ModelSpec::architecture() const { return kind().describe(*this) + (type == "mlp" ? " MLP" : ""); }

std::string ModelSpec::to_json() const {
    if (kind().to_json) return kind().to_json(*this).dump();
    nlohmann::ordered_json j{{"type", type}, {"inputs", inputs}};
    for (const ModelOption& o : kind().options) {
        const auto& v = size(o.key);
        if (!o.choices.empty()) {
            j[o.key] = choice_of(*this, o).name;
        } else if (o.scalar) {
            j[o.key] = v.at(0);
        } else {
            j[o.key] = v;
        }
    }
    j["classes"] = classes;
    j["norm"] = norm.name();
    return j.dump();
}

namespace {

// The generic architecture JSON: inputs, the row's options in order, classes, norm.
void read_generic(const nlohmann::json& j, ModelSpec& s) {
    // Sizes must be JSON integers: get<int64_t>() of 1e300 would be undefined behaviour.
    const auto size = [&](const nlohmann::json& v) {
        NORMNET_CHECK(v.is_number_integer() && (v.is_number_unsigned() || v.get<int64_t>() > 0) &&
                          v.get<uint64_t>() <= static_cast<uint64_t>(kMaxWidth),
                      "layer size ", v.dump(), " is not an integer in [1, ", kMaxWidth, "]");
        return v.get<int64_t>();
    };
    s.inputs = size(j.at("inputs"));
    for (const ModelOption& o : s.kind().options) {
        std::vector<int64_t>& v = s.sizes[o.key];
        const nlohmann::json& given = j.at(o.key);
        v.clear();
        if (!o.choices.empty()) {
            NORMNET_CHECK(given.is_string(), o.key, " is not a string");
            v.push_back(choice_index(o, given.get<std::string>(), o.key));
        } else if (o.scalar) {
            v.push_back(size(given));
        } else {
            NORMNET_CHECK(given.is_array(), o.key, " is not a list");
            for (const auto& h : given) v.push_back(size(h));
        }
    }
    s.classes = size(j.at("classes"));
    s.norm = Norm(j.at("norm").get<std::string>());
}

}  // namespace

ModelSpec ModelSpec::from_json(const std::string& text, const std::string& where) {
    ModelSpec s;
    try {
        const auto j = nlohmann::json::parse(text);
        NORMNET_CHECK(j.is_object(), "not a JSON object");
        // Checkpoints from before the registry had no other type than the MLP's.
        s = defaults(model_kind_of_json(j.contains("type") ? j.at("type").get<std::string>() : "mlp").name);
        s.kind().from_json ? s.kind().from_json(j, s) : read_generic(j, s);
    } catch (const std::exception& e) {
        fail(where, ": malformed architecture metadata: ", e.what());
    }
    s.validate(where + ": architecture metadata");
    return s;
}

void ModelSpec::validate(const std::string& where) const {
    const ModelKind& k = kind();
    const auto in_range = [](int64_t v) { return v >= 1 && v <= kMaxWidth; };
    // A model sized by its data (the language model by its vocabulary) has 0 until it is read.
    const bool from_data = k.task == kLanguageModel;
    bool sizes_ok = ((from_data && inputs == 0) || in_range(inputs)) && ((from_data && classes == 0) || in_range(classes));
    for (const ModelOption& o : k.options) {
        if (o.dropout) continue;
        const auto it = sizes.find(o.key);
        NORMNET_CHECK(it != sizes.end() && !it->second.empty() && (!o.scalar || it->second.size() == 1), where, ": ",
                      o.flag.empty() ? o.key : o.flag, o.scalar ? " must be one size" : " must list at least one size");
        sizes_ok = sizes_ok && std::all_of(it->second.begin(), it->second.end(), in_range);
        NORMNET_CHECK(o.choices.empty() || (it->second.size() == 1 && it->second[0] <= static_cast<int64_t>(o.choices.size())),
                      where, ": ", o.flag, " holds no valid choice");
    }
    NORMNET_CHECK(sizes_ok, where, ": layer sizes must be in [1, ", kMaxWidth, "], got ", str());
    NORMNET_CHECK(norm.sits_at(k.site), where, ": normalisation '", norm.name(),
                  "' does not apply to --model ", type, " (expected ", norm_choices(k.site), ")");
    k.check(*this, where);
    const double params = parameters();
    NORMNET_CHECK(params <= kMaxParameters, where, ": the model ", str(), " would have ", count_text(params),
                  " parameters, more than the ", count_text(kMaxParameters), " normnet builds");
}

double ModelSpec::parameters() const { return kind().parameters(*this); }

std::string count_text(double n) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f", n);
    return buf;
}

namespace {

std::string trimmed(const std::string& s) {
    const size_t first = s.find_first_not_of(" \t"), last = s.find_last_not_of(" \t");
    return first == std::string::npos ? "" : s.substr(first, last - first + 1);
}

}  // namespace

std::vector<std::string> list_items(const std::string& text) {
    std::vector<std::string> items;
    size_t start = 0;
    while (true) {
        const size_t comma = text.find(',', start);
        items.push_back(trimmed(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
        if (comma == std::string::npos) return items;
        start = comma + 1;
    }
}

std::vector<int64_t> parse_size_list(const std::string& text, const std::string& option) {
    std::vector<int64_t> out;
    for (const std::string& item : list_items(text)) {
        size_t used = 0;
        long long v = 0;
        try {
            v = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        NORMNET_CHECK(!item.empty() && item[0] != '+' && used == item.size() && v > 0, option, ": '", text,
                      "' is not a comma-separated list of positive integers (e.g. 300,100)");
        NORMNET_CHECK(v <= kMaxWidth, option, ": ", item, " is too large (at most ", kMaxWidth, ")");
        out.push_back(v);
    }
    return out;
}

std::shared_ptr<Module> build_model(const ModelSpec& spec) {
    spec.validate("build_model");
    return spec.kind().build(spec);
}

}  // namespace normnet::cli

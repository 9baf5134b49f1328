// ModelSpec: text forms and building the Sequential model it describes.
#include "model_spec.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace normnet::cli {

std::string ModelSpec::str() const {
    std::string s = std::to_string(inputs);
    for (int64_t h : hidden) s.append("-").append(std::to_string(h));  // append: GCC 12 warns falsely on "-" + str
    return s.append("-").append(std::to_string(classes)).append(" ").append(norm);
}

std::string ModelSpec::to_json() const {
    return nlohmann::json{{"type", "mlp"}, {"inputs", inputs}, {"hidden", hidden}, {"classes", classes}, {"norm", norm}}
        .dump();
}

ModelSpec ModelSpec::from_json(const std::string& text, const std::string& where) {
    ModelSpec s;
    try {
        const auto j = nlohmann::json::parse(text);
        // Sizes must be JSON integers: get<int64_t>() of 1e300 would be undefined behaviour.
        const auto size = [&](const nlohmann::json& v) {
            check(v.is_number_integer() && (v.is_number_unsigned() || v.get<int64_t>() > 0) &&
                      v.get<uint64_t>() <= static_cast<uint64_t>(kMaxWidth),
                  "layer size ", v.dump(), " is not an integer in [1, ", kMaxWidth, "]");
            return v.get<int64_t>();
        };
        s.inputs = size(j.at("inputs"));
        s.hidden.clear();
        check(j.at("hidden").is_array(), "hidden is not a list");
        for (const auto& h : j.at("hidden")) s.hidden.push_back(size(h));
        s.classes = size(j.at("classes"));
        s.norm = j.at("norm").get<std::string>();
    } catch (const std::exception& e) {
        fail(where, ": malformed architecture metadata: ", e.what());
    }
    s.validate(where + ": architecture metadata");
    return s;
}

void ModelSpec::validate(const std::string& where) const {
    const auto in_range = [](int64_t v) { return v >= 1 && v <= kMaxWidth; };
    check(in_range(inputs) && in_range(classes) && std::all_of(hidden.begin(), hidden.end(), in_range), where,
          ": layer sizes must be in [1, ", kMaxWidth, "], got ", str());
    check(std::find(kNorms.begin(), kNorms.end(), norm) != kNorms.end(), where, ": unknown normalisation '", norm,
          "' (expected layer, batch, rms or none)");
    const double params = linear_parameters();
    check(params <= kMaxParameters, where, ": the model ", str(), " would have ", count_text(params),
          " parameters, more than the ", count_text(kMaxParameters), " normnet builds");
}

std::string count_text(double n) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f", n);
    return buf;
}

double ModelSpec::linear_parameters() const {
    double total = 0;
    double width = static_cast<double>(inputs);
    for (int64_t h : hidden) {
        total += (width + 1) * static_cast<double>(h);
        width = static_cast<double>(h);
    }
    return total + (width + 1) * static_cast<double>(classes);
}

namespace {

std::string trimmed(const std::string& s) {
    const size_t first = s.find_first_not_of(" \t"), last = s.find_last_not_of(" \t");
    return first == std::string::npos ? "" : s.substr(first, last - first + 1);
}

// The items of a comma-separated list, each with surrounding spaces removed.
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

}  // namespace

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
        check(!item.empty() && item[0] != '+' && used == item.size() && v > 0, option, ": '", text,
              "' is not a comma-separated list of positive integers (e.g. 300,100)");
        check(v <= kMaxWidth, option, ": ", item, " is too large (at most ", kMaxWidth, ")");
        out.push_back(v);
    }
    return out;
}

std::vector<std::string> parse_norm_list(const std::string& text) {
    std::vector<std::string> out;
    for (const std::string& item : list_items(text)) {
        check(std::find(kNorms.begin(), kNorms.end(), item) != kNorms.end(), "--norms: unknown normalisation '", item,
              "' in '", text, "' (expected any of layer,batch,rms,none)");
        check(std::find(out.begin(), out.end(), item) == out.end(), "--norms: '", item, "' is listed twice");
        out.push_back(item);
    }
    return out;
}

std::shared_ptr<Sequential> build_model(const ModelSpec& spec) {
    check(std::find(kNorms.begin(), kNorms.end(), spec.norm) != kNorms.end(), "unknown normalisation '", spec.norm,
          "' (expected layer, batch, rms or none)");
    auto model = std::make_shared<Sequential>();
    int64_t width = spec.inputs;
    for (int64_t h : spec.hidden) {
        model->push_back(Linear(width, h));
        model->push_back(ReLU());
        if (spec.norm == "layer") model->push_back(LayerNorm({h}));
        if (spec.norm == "batch") model->push_back(BatchNorm1d(h));
        if (spec.norm == "rms") model->push_back(RMSNorm({h}));
        width = h;
    }
    model->push_back(Linear(width, spec.classes));
    return model;
}

}  // namespace normnet::cli

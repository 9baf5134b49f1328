// ModelSpec: text forms and building the Sequential model it describes.
#include "model_spec.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

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
    try {
        const auto j = nlohmann::json::parse(text);
        ModelSpec s;
        s.inputs = j.at("inputs").get<int64_t>();
        s.hidden = j.at("hidden").get<std::vector<int64_t>>();
        s.classes = j.at("classes").get<int64_t>();
        s.norm = j.at("norm").get<std::string>();
        check(s.inputs > 0 && s.classes > 0 && std::all_of(s.hidden.begin(), s.hidden.end(), [](int64_t h) { return h > 0; }),
              "non-positive layer size");
        check(std::find(kNorms.begin(), kNorms.end(), s.norm) != kNorms.end(), "unknown norm '", s.norm, "'");
        return s;
    } catch (const std::exception& e) {
        fail(where, ": malformed architecture metadata: ", e.what());
    }
}

std::vector<int64_t> parse_size_list(const std::string& text, const std::string& option) {
    std::vector<int64_t> out;
    size_t start = 0;
    while (true) {
        const size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        size_t used = 0;
        long long v = 0;
        try {
            v = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        check(!item.empty() && used == item.size() && v > 0, option, ": '", text,
              "' is not a comma-separated list of positive integers (e.g. 300,100)");
        out.push_back(v);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

std::vector<std::string> parse_norm_list(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        check(std::find(kNorms.begin(), kNorms.end(), item) != kNorms.end(), "--norms: unknown normalisation '", item,
              "' in '", text, "' (expected any of layer,batch,rms,none)");
        check(std::find(out.begin(), out.end(), item) == out.end(), "--norms: '", item, "' is listed twice");
        out.push_back(item);
    }
    check(!out.empty(), "--norms: empty list");
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

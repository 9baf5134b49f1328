// Lookups by name in the library's normalisation table.
#include "norms.hpp"

#include <algorithm>

#include "model_spec.hpp"

namespace normnet::cli {
namespace {

const Norm* find(const std::string& name) {
    for (const Norm& n : Norm::all()) {
        if (n.name() == name) return &n;
    }
    return nullptr;
}

}  // namespace

Norm norm_named(const std::string& name, const std::string& where) {
    try {
        return Norm(name);
    } catch (const Error& e) {
        fail(where, ": ", e.what());
    }
}

bool uses_batch_statistics(const std::string& norm) {
    const Norm* n = find(norm);
    return n != nullptr && n->batch_statistics();
}

std::string norm_label(const std::string& norm) {
    const Norm* n = find(norm);
    return n != nullptr ? n->label() : norm;
}

std::vector<std::string> norm_names(NormSite site) {
    std::vector<std::string> names;
    for (Norm n : Norm::at(site)) names.push_back(n.name());
    return names;
}

std::vector<std::string> norm_names() {
    std::vector<std::string> names;
    for (Norm n : Norm::all()) names.push_back(n.name());
    return names;
}

std::vector<std::string> parse_norm_list(const std::string& text, NormSite site, const std::string& model) {
    std::vector<std::string> out;
    const std::vector<std::string> known = norm_names(site);
    for (const std::string& item : list_items(text)) {
        NORMNET_CHECK(std::find(known.begin(), known.end(), item) != known.end(), "--norms: unknown normalisation '", item,
                      "' in '", text, "' for --model ", model, " (expected any of ", norm_choices(site, ","), ")");
        NORMNET_CHECK(std::find(out.begin(), out.end(), item) == out.end(), "--norms: '", item, "' is listed twice");
        out.push_back(item);
    }
    return out;
}

}  // namespace normnet::cli

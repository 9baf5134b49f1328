// The normalisation table and the lookups that read it.
#include "norms.hpp"

#include <algorithm>

#include "model_spec.hpp"
#include "normnet/layers.hpp"

namespace normnet::cli {
namespace {

using F = NormSite;

// In a CNN, LayerNorm is GroupNorm with one group, as Wu and He define it (per-channel affine,
// statistics over C, H, W of each sample): the paper's "LN" curve is this layer.
const std::vector<NormKind> kTable{
    {"layer", "LayerNorm", "each sample over its features (in a CNN: over C, H, W, i.e. GroupNorm with 1 group)",
     {F::features, F::channels, F::tokens, F::cell}, false,
     [](NormSite site, const NormShape& s) -> std::shared_ptr<Module> {
         if (site == F::channels) return std::make_shared<GroupNorm>(1, s.channels);
         return std::make_shared<LayerNorm>(s.extent);
     }},
    {"batch", "BatchNorm", "each feature or channel over the batch (and H, W); running statistics in eval",
     {F::features, F::channels, F::tokens}, true,
     [](NormSite site, const NormShape& s) -> std::shared_ptr<Module> {
         if (site == F::channels) return std::make_shared<BatchNorm2d>(s.channels);
         if (site == F::tokens) return make_sequence_norm("batch", s.channels, 1e-5);  // over batch x time
         return std::make_shared<BatchNorm1d>(s.channels);
     }},
    {"group", "GroupNorm", "each sample over each of --groups groups of channels and H, W",
     {F::channels}, false,
     [](NormSite, const NormShape& s) -> std::shared_ptr<Module> { return std::make_shared<GroupNorm>(s.groups, s.channels); }},
    {"instance", "InstanceNorm", "each sample's channel over H, W (InstanceNorm2d with affine weights)",
     {F::channels}, false,
     [](NormSite, const NormShape& s) -> std::shared_ptr<Module> {
         return std::make_shared<InstanceNorm2d>(InstanceNorm2dOptions{.num_features = s.channels, .affine = true});
     }},
    {"rms", "RMSNorm", "each sample by the root mean square of its features", {F::features, F::tokens}, false,
     [](NormSite, const NormShape& s) -> std::shared_ptr<Module> { return std::make_shared<RMSNorm>(s.extent); }},
    {"none", "no norm", "no normalisation layer", {F::features, F::channels, F::tokens, F::cell}, false,
     [](NormSite, const NormShape&) -> std::shared_ptr<Module> { return nullptr; }},
};

bool sits_at(const NormKind& k, NormSite site) { return std::find(k.sites.begin(), k.sites.end(), site) != k.sites.end(); }

}  // namespace

const std::vector<NormKind>& norm_kinds() { return kTable; }

std::vector<std::string> norm_names(NormSite site) {
    std::vector<std::string> names;
    for (const NormKind& k : kTable) {
        if (sits_at(k, site)) names.push_back(k.name);
    }
    return names;
}

std::string norm_choices(NormSite site, const std::string& separator) {
    const std::vector<std::string> names = norm_names(site);
    std::string s;
    for (size_t i = 0; i < names.size(); ++i) {
        if (i > 0) s += !separator.empty() ? separator : i + 1 == names.size() ? " or " : ", ";
        s += names[i];
    }
    return s;
}

const NormKind& norm_kind(const std::string& name, const std::string& where) {
    for (const NormKind& k : kTable) {
        if (k.name == name) return k;
    }
    std::string all;
    for (const NormKind& k : kTable) all += (all.empty() ? "" : ", ") + k.name;
    fail(where, ": unknown normalisation '", name, "' (expected one of ", all, ")");
}

bool uses_batch_statistics(const std::string& norm) {
    for (const NormKind& k : kTable) {
        if (k.name == norm) return k.batch_statistics;
    }
    return false;
}

std::string norm_label(const std::string& norm) {
    for (const NormKind& k : kTable) {
        if (k.name == norm) return k.label;
    }
    return norm;
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

// The normalisation table (names, labels, sites) and the factory that builds a row at a site.
#include "normnet/nn/norm_choice.hpp"

#include <algorithm>

#include "normnet/error.hpp"
#include "normnet/nn/linear.hpp"
#include "normnet/nn/norm.hpp"

namespace normnet {
namespace {

using S = NormSite;

struct Row {
    NormKind kind;
    std::string name, label, description;
    std::vector<NormSite> sites;
    bool batch_statistics = false;
};

// In a CNN, LayerNorm is GroupNorm with one group, as Wu and He define it (per-channel affine,
// statistics over C, H, W of each sample): the paper's "LN" curve is this layer.
const std::vector<Row>& table() {
    static const std::vector<Row> rows{
        {NormKind::layer, "layer", "LayerNorm", "each sample over its features (in a CNN: over C, H, W, i.e. GroupNorm with 1 group)",
         {S::features, S::channels, S::tokens, S::cell}},
        {NormKind::batch, "batch", "BatchNorm", "each feature or channel over the batch (and H, W); running statistics in eval",
         {S::features, S::channels, S::tokens}, true},
        {NormKind::group, "group", "GroupNorm", "each sample over each of --groups groups of channels and H, W", {S::channels}},
        {NormKind::instance, "instance", "InstanceNorm", "each sample's channel over H, W (InstanceNorm2d with affine weights)",
         {S::channels}},
        {NormKind::rms, "rms", "RMSNorm", "each sample by the root mean square of its features", {S::features, S::tokens}},
        {NormKind::none, "none", "no norm", "no normalisation layer", {S::features, S::channels, S::tokens, S::cell}},
    };
    return rows;
}

const Row& row(NormKind kind) { return table()[static_cast<size_t>(kind)]; }

// "at a CNN's channels", for messages about a site.
const char* site_words(NormSite site) {
    switch (site) {
        case S::features: return "after a Linear layer";
        case S::channels: return "after a convolution";
        case S::tokens: return "in a sequence block";
        case S::cell: return "in an LSTM cell";
    }
    return "";
}

// relu(max_pool2d(norm(x), 2)) as the layer's fused op.
template <class Layer>
NormLayer fusable(std::shared_ptr<Layer> layer) {
    Layer* raw = layer.get();  // owned by the module that holds `module`
    return {layer, [raw](const Tensor& x) { return raw->forward_max_pool2d_relu(x); }};
}

}  // namespace

Norm::Norm(std::string_view name) {
    for (const Row& r : table()) {
        if (r.name == name) {
            kind_ = r.kind;
            return;
        }
    }
    std::string all;
    for (const Row& r : table()) all += (all.empty() ? "" : ", ") + r.name;
    fail("unknown normalisation '", name, "' (expected one of ", all, ")");
}

const std::string& Norm::name() const { return row(kind_).name; }
const std::string& Norm::label() const { return row(kind_).label; }
const std::string& Norm::description() const { return row(kind_).description; }
bool Norm::batch_statistics() const { return row(kind_).batch_statistics; }

bool Norm::sits_at(NormSite site) const {
    const auto& sites = row(kind_).sites;
    return std::find(sites.begin(), sites.end(), site) != sites.end();
}

const std::vector<Norm>& Norm::all() {
    static const std::vector<Norm> norms = [] {
        std::vector<Norm> v;
        for (const Row& r : table()) v.emplace_back(r.kind);
        return v;
    }();
    return norms;
}

std::vector<Norm> Norm::at(NormSite site) {
    std::vector<Norm> v;
    for (Norm n : all()) {
        if (n.sits_at(site)) v.push_back(n);
    }
    return v;
}

std::string norm_choices(NormSite site, const std::string& separator) {
    const std::vector<Norm> norms = Norm::at(site);
    std::string s;
    for (size_t i = 0; i < norms.size(); ++i) {
        if (i > 0) s += !separator.empty() ? separator : i + 1 == norms.size() ? " or " : ", ";
        s += norms[i].name();
    }
    return s;
}

void check_norm_site(Norm norm, NormSite site, std::string_view where) {
    NORMNET_CHECK(norm.sits_at(site), where, ": unknown norm '", norm.name(), "' ", site_words(site), " (expected ",
                  norm_choices(site), ")");
}

NormLayer make_norm(Norm norm, NormSite site, const NormShape& shape, std::string_view where) {
    check_norm_site(norm, site, where);
    NORMNET_CHECK(site != S::cell, where, ": the LSTMs build the normalisation of their cells themselves");
    const int64_t C = shape.channels;
    const std::vector<int64_t> extent = shape.extent.empty() ? std::vector<int64_t>{C} : shape.extent;
    const double eps = shape.eps.value_or(1e-5);
    switch (norm.kind()) {
        case NormKind::layer:
            if (site == S::channels) return fusable(std::make_shared<GroupNorm>(GroupNormOptions{1, C, eps}));
            return {std::make_shared<LayerNorm>(LayerNormOptions{extent, eps})};
        case NormKind::batch:
            if (site == S::channels) return fusable(std::make_shared<BatchNorm2d>(BatchNorm2dOptions{C, eps}));
            if (site == S::tokens) return {std::make_shared<SequenceBatchNorm>(BatchNorm1dOptions{C, eps})};
            return {std::make_shared<BatchNorm1d>(BatchNorm1dOptions{C, eps})};
        case NormKind::group:
            return fusable(std::make_shared<GroupNorm>(GroupNormOptions{shape.groups, C, eps}));
        case NormKind::instance:
            return fusable(std::make_shared<InstanceNorm2d>(InstanceNorm2dOptions{.num_features = C, .eps = eps, .affine = true}));
        case NormKind::rms:
            return {std::make_shared<RMSNorm>(RMSNormOptions{extent, shape.eps})};
        case NormKind::none:
            if (site == S::tokens) return {std::make_shared<Identity>()};
            return {};
    }
    fail(where, ": unknown normalisation");
}

}  // namespace normnet

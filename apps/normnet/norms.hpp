// The normalisations the command line knows, as one table: name, label, where in a model it can
// sit, the layer it builds there, and whether it normalises with batch statistics. Parsing,
// help texts, model building, compare's labels, the BatchNorm last-batch rule and the
// allocation test all read this table; adding a normalisation is one row in norms.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "normnet/module.hpp"

namespace normnet::cli {

/// Where a model puts its normalisations, which decides the layers that can go there: after a
/// Linear on [N, C] features (the MLP), after a Conv2d on [N, C, H, W] maps (the CNN), over the
/// last dimension of [N, T, C] tokens inside Transformer blocks (the ViT; BatchNorm there
/// normalises over batch x time), or inside an LSTM cell, on its gate pre-activations and cell
/// state (Ba et al.'s LayerNorm LSTM). At the last two the library model builds the layer from
/// the name (make_sequence_norm, LayerNormLSTM), so `make` is not called there.
enum class NormSite { features, channels, tokens, cell };

/// What a factory needs to build the layer at one site.
struct NormShape {
    int64_t channels = 0;         // C: features of [N, C] or channels of [N, C, H, W]
    std::vector<int64_t> extent;  // the normalised sample shape: {C} or {C, H, W}
    int64_t groups = 1;           // GroupNorm's num_groups
};

struct NormKind {
    std::string name;   // as on the command line: "batch"
    std::string label;  // in reports and charts: "BatchNorm"
    std::string help;   // what it normalises over, for --help
    std::vector<NormSite> sites;  // where it can sit (the architectures follow from their sites)
    bool batch_statistics = false;  // trains on statistics over the batch (needs >= 2 samples, a train/eval gap)
    /// The layer at one site of `site` kind; nullptr for "none" (no module, so the state_dict
    /// matches a torch.nn.Sequential without it).
    std::shared_ptr<Module> (*make)(NormSite site, const NormShape& shape) = nullptr;
};

/// The table, in the order help texts list it.
const std::vector<NormKind>& norm_kinds();

/// The row named `name`; throws normnet::Error naming `where` and the choices otherwise.
const NormKind& norm_kind(const std::string& name, const std::string& where = "--norm");
/// True for a known normalisation that uses batch statistics (BatchNorm).
bool uses_batch_statistics(const std::string& norm);

/// The names of the normalisations that can sit at `site`, in table order.
std::vector<std::string> norm_names(NormSite site);
/// "layer, batch, rms or none" for messages; "layer|batch|rms|none" with `separator` "|".
std::string norm_choices(NormSite site, const std::string& separator = "");
/// The label of a normalisation for reports ("LayerNorm"); the name itself when unknown.
std::string norm_label(const std::string& norm);

/// Parses "layer,batch" (spaces around items allowed) into names of normalisations that can sit
/// at `site`; throws normnet::Error on unknown, inapplicable or repeated names.
std::vector<std::string> parse_norm_list(const std::string& text, NormSite site, const std::string& model);

}  // namespace normnet::cli

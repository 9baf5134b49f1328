// The normalisations as one typed choice (Norm) and one factory (make_norm): where "batch" in an
// options struct, a checkpoint's metadata or on the command line becomes the layer that sits at a
// given place of a network. The models of normnet::models build every normalisation through it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "normnet/export.hpp"
#include "normnet/module.hpp"

namespace normnet {

enum class NormKind { layer, batch, group, instance, rms, none };

/// Where a model puts a normalisation, which decides the layer that goes there: after a Linear on
/// [N, C] features (an MLP), after a Conv2d on [N, C, H, W] maps (a CNN), over the last dimension
/// of [N, T, C] tokens in a Transformer block (BatchNorm there normalises over batch x time), or
/// inside an LSTM cell, on its gate pre-activations and cell state (Ba et al.'s LayerNorm LSTM).
enum class NormSite { features, channels, tokens, cell };

/// One normalisation. Built from its name ("layer", "batch", "group", "instance", "rms" or "none",
/// so that options can be written `.norm = "batch"`) or from NormKind; an unknown name throws
/// normnet::Error naming the choices.
class NORMNET_API Norm {
public:
    constexpr Norm(NormKind kind = NormKind::layer) : kind_(kind) {}
    Norm(std::string_view name);
    Norm(const char* name) : Norm(std::string_view(name)) {}
    Norm(const std::string& name) : Norm(std::string_view(name)) {}

    constexpr NormKind kind() const { return kind_; }
    /// "batch": as options, metadata and the command line write it.
    const std::string& name() const;
    /// "BatchNorm": as reports name it.
    const std::string& label() const;
    /// What it normalises over, for help texts.
    const std::string& description() const;
    /// Trains on statistics over the batch (BatchNorm): needs two samples or more per batch, and
    /// evaluates with running statistics instead.
    bool batch_statistics() const;
    /// True when a layer of this normalisation can sit at `site`.
    bool sits_at(NormSite site) const;
    friend constexpr bool operator==(Norm, Norm) = default;

    /// Every normalisation, in the order help texts list them.
    static const std::vector<Norm>& all();
    /// Those that can sit at `site`, in that order.
    static std::vector<Norm> at(NormSite site);

private:
    NormKind kind_;
};

/// The names of the normalisations that can sit at `site`: "layer, batch, rms or none", or joined
/// by `separator` when one is given ("layer,batch,rms,none").
NORMNET_API std::string norm_choices(NormSite site, const std::string& separator = "");

/// What the layer at one site normalises.
struct NormShape {
    int64_t channels = 0;         // C: features of [N, C], channels of [N, C, H, W], the width of tokens
    std::vector<int64_t> extent{};  // the normalised sample shape ({C} or {C, H, W}); {channels} when empty
    int64_t groups = 1;           // GroupNorm's num_groups
    std::optional<double> eps{};  // the layers' own default when empty
};

/// The layer of one normalisation at one site, and at the channels site the same layer run fused
/// with the MaxPool2d(2) -> ReLU that follows it in a CNN block (one op that pools and rectifies as
/// it normalises; the same function and state updates as the three modules in turn).
struct NormLayer {
    std::shared_ptr<Module> module;  // nullptr for "none", except at the tokens site (Identity)
    std::function<Tensor(const Tensor&)> max_pool2d_relu{};  // empty where there is no fused form
};

/// Builds `norm` at `site`: at features LayerNorm, BatchNorm1d or RMSNorm over {C}; at channels
/// GroupNorm(1, C) for "layer" (Wu and He's LayerNorm of a CNN), BatchNorm2d, GroupNorm(groups, C)
/// or InstanceNorm2d with affine weights; at tokens LayerNorm, SequenceBatchNorm (over batch x
/// time) or RMSNorm over {C}, and Identity for "none" (a block needs a module there). The cell site
/// is built by the LSTMs themselves. Throws normnet::Error naming `where` and the choices when the
/// normalisation does not sit at `site`.
NORMNET_API NormLayer make_norm(Norm norm, NormSite site, const NormShape& shape, std::string_view where = "make_norm");

/// Throws normnet::Error naming `where` and the choices unless `norm` can sit at `site`.
NORMNET_API void check_norm_site(Norm norm, NormSite site, std::string_view where);

}  // namespace normnet

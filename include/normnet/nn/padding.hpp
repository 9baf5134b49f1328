// Padding layers (torch.nn.ReflectionPad1d/2d, ReplicationPad1d/2d, ConstantPad1d/2d, ZeroPad2d):
// pad (ops/pad.cpp) as layers, with PyTorch's options and printed forms.
#pragma once

#include <string>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/ops.hpp"

namespace normnet {

/// Options of the padding layers: padding holds one size for every side, or (left, right) for
/// the 1-D layers and (left, right, top, bottom) for the 2-D ones; value is the constant pads'.
struct PadOptions {
    using Self = PadOptions;
    NORMNET_ARG(std::vector<int64_t>, padding){};
    NORMNET_ARG(double, value) = 0.0;
};
using ReflectionPad1dOptions = PadOptions;
using ReflectionPad2dOptions = PadOptions;
using ReplicationPad1dOptions = PadOptions;
using ReplicationPad2dOptions = PadOptions;
using ConstantPad1dOptions = PadOptions;
using ConstantPad2dOptions = PadOptions;
using ZeroPad2dOptions = PadOptions;

/// The padding layers' shared parts, out of line.
struct NORMNET_API PadParts {
    /// padding with one value expanded to every side of `dims` dims, checked (naming the layer).
    static std::vector<int64_t> expand(const char* layer, const std::vector<int64_t>& padding, int dims);
    /// "(1, 2)" or "padding=(1, 2), value=0.0", as PyTorch prints the pads.
    static std::string repr(const std::vector<int64_t>& padding, bool constant, double value);
};

/// A padding layer: pad(x, padding, Derived::kMode, value) over the last kDims dims.
template <class Derived, int kDims>
class PadModule : public Cloneable<Derived> {
public:
    explicit PadModule(const PadOptions& options)
        : options_{PadParts::expand(Derived::kName, options.padding, kDims), options.value} {}
    /// ReflectionPad2d(2), ReflectionPad2d({1, 1, 2, 0}), as libtorch's.
    explicit PadModule(std::vector<int64_t> padding) : PadModule(PadOptions{std::move(padding)}) {}
    explicit PadModule(int64_t padding) : PadModule(PadOptions{{padding}}) {}
    Tensor forward(const Tensor& x) override { return pad(x, options_.padding, Derived::kMode, options_.value); }
    std::string type_name() const override { return Derived::kName; }
    std::string extra_repr() const override {
        return PadParts::repr(options_.padding, Derived::kConstantRepr, options_.value);
    }
    /// The options, padding expanded to both sides of each dim.
    const PadOptions& options() const { return options_; }

private:
    PadOptions options_;
};

/// Mirrors the input at its edges without repeating them.
class NORMNET_API ReflectionPad1d : public PadModule<ReflectionPad1d, 1> {
public:
    static constexpr const char* kName = "ReflectionPad1d";
    static constexpr const char* kMode = "reflect";
    static constexpr bool kConstantRepr = false;
    using PadModule::PadModule;
};
class NORMNET_API ReflectionPad2d : public PadModule<ReflectionPad2d, 2> {
public:
    static constexpr const char* kName = "ReflectionPad2d";
    static constexpr const char* kMode = "reflect";
    static constexpr bool kConstantRepr = false;
    using PadModule::PadModule;
};
/// Repeats the edge values.
class NORMNET_API ReplicationPad1d : public PadModule<ReplicationPad1d, 1> {
public:
    static constexpr const char* kName = "ReplicationPad1d";
    static constexpr const char* kMode = "replicate";
    static constexpr bool kConstantRepr = false;
    using PadModule::PadModule;
};
class NORMNET_API ReplicationPad2d : public PadModule<ReplicationPad2d, 2> {
public:
    static constexpr const char* kName = "ReplicationPad2d";
    static constexpr const char* kMode = "replicate";
    static constexpr bool kConstantRepr = false;
    using PadModule::PadModule;
};
/// Pads with options().value (ConstantPad1d({2}, 3.5) or ConstantPad1d(PadOptions{{2}, 3.5})).
class NORMNET_API ConstantPad1d : public PadModule<ConstantPad1d, 1> {
public:
    static constexpr const char* kName = "ConstantPad1d";
    static constexpr const char* kMode = "constant";
    static constexpr bool kConstantRepr = true;
    using PadModule::PadModule;
    ConstantPad1d(std::vector<int64_t> padding, double value) : PadModule(PadOptions{std::move(padding), value}) {}
};
class NORMNET_API ConstantPad2d : public PadModule<ConstantPad2d, 2> {
public:
    static constexpr const char* kName = "ConstantPad2d";
    static constexpr const char* kMode = "constant";
    static constexpr bool kConstantRepr = true;
    using PadModule::PadModule;
    ConstantPad2d(std::vector<int64_t> padding, double value) : PadModule(PadOptions{std::move(padding), value}) {}
};
/// Pads with zeros.
class NORMNET_API ZeroPad2d : public PadModule<ZeroPad2d, 2> {
public:
    static constexpr const char* kName = "ZeroPad2d";
    static constexpr const char* kMode = "constant";
    static constexpr bool kConstantRepr = false;
    using PadModule::PadModule;
};

}  // namespace normnet

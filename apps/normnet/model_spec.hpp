// The architecture the command line trains: an MLP with a chosen normalisation after each
// hidden ReLU (the seed model: 784-300-100-10 with LayerNorm). Stored in checkpoint metadata so
// `normnet eval` can rebuild the model from the file alone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "normnet/layers.hpp"

namespace normnet::cli {

struct ModelSpec {
    int64_t inputs = 784;
    std::vector<int64_t> hidden{300, 100};
    int64_t classes = 10;
    std::string norm = "layer";  // layer | batch | rms | none

    /// "784-300-100-10 layer"
    std::string str() const;
    std::string to_json() const;
    /// Parses to_json()'s text; throws normnet::Error naming `where` when it is malformed or out
    /// of range (see validate()).
    static ModelSpec from_json(const std::string& text, const std::string& where);
    /// Throws normnet::Error (prefixed by `where`) unless every size is in [1, kMaxWidth], the norm
    /// is known and the model has at most kMaxParameters parameters, so that building it cannot
    /// overflow or ask for absurd amounts of memory.
    void validate(const std::string& where) const;
    /// The parameters of the Linear layers (weights and biases), the bulk of the model; as a
    /// double, since for a hostile spec the count need not fit an integer.
    double linear_parameters() const;
    friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

/// Bounds on what the command line builds: a layer of 2^31 units, a model of 2^30 parameters
/// (4 GiB of float32 weights, 16 GiB with gradients and Adam's moments).
inline constexpr int64_t kMaxWidth = int64_t{1} << 31;
inline constexpr double kMaxParameters = double(int64_t{1} << 30);

/// A count held in a double (parameters of a hostile spec), printed as a whole number.
std::string count_text(double n);

/// The normalisations the command line knows.
inline const std::vector<std::string> kNorms{"layer", "batch", "rms", "none"};

/// Parses "300,100" (spaces around items allowed) into sizes; throws normnet::Error on anything
/// else (empty items, non-numbers, <= 0, > kMaxWidth).
std::vector<int64_t> parse_size_list(const std::string& text, const std::string& option);

/// Parses "layer,batch" (spaces around items allowed) into normalisation names; throws
/// normnet::Error on unknown or repeated names.
std::vector<std::string> parse_norm_list(const std::string& text);

/// Linear -> ReLU -> Norm for each hidden size, then the output Linear, as in the seed model
/// (with norm "none" the Norm is left out, so the state_dict matches nn.Sequential's).
std::shared_ptr<Sequential> build_model(const ModelSpec& spec);

}  // namespace normnet::cli

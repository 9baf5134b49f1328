// The architecture the command line trains, as stored in checkpoint metadata so that
// `normnet eval` can rebuild the model from the file alone: the model's type (a row of the model
// registry, models.hpp), its input and output sizes, its normalisation and its own sizes (the
// MLP's hidden widths, the CNN's channels...). What the sizes mean, how they are checked and
// how the model is built is the registry row's business; this struct only carries them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "normnet/layers.hpp"
#include "normnet/nn/norm_choice.hpp"

namespace normnet::cli {

struct ModelKind;

/// What kind of problem a run learns, which decides its data, loss, metrics and options: bits,
/// so that an option can belong to several.
enum TaskKind : unsigned { kClassification = 1, kLanguageModel = 2, kAnyTask = 3, kOwnData = 4 };
// kOwnData marks the options of runs on the user's own files: a table (--data FILE.csv, the MLP's
// classification or regression of its rows) or an image folder (--data DIR with DIR/train/<class>/);
// it adds to kClassification.

struct ModelSpec {
    std::string type = "mlp";
    int64_t inputs = 784;
    int64_t classes = 10;
    Norm norm = NormKind::layer;
    double dropout = 0.0;  // the language model's (its --dropout)
    /// The model's own sizes by option key (ModelKind::options); a scalar option holds one value.
    std::map<std::string, std::vector<int64_t>> sizes{{"hidden", {300, 100}}};

    /// The spec of `type` with its registry row's default sizes and normalisation.
    static ModelSpec defaults(const std::string& type);
    /// The registry row of `type` (throws normnet::Error for an unknown type).
    const ModelKind& kind() const;
    /// The sizes of option `key` (throws normnet::Error naming the key when absent).
    const std::vector<int64_t>& size(const std::string& key) const;
    /// The value of a scalar option.
    int64_t scalar(const std::string& key) const { return size(key).front(); }

    /// "784-300-100-10 layer", "cnn 1x28x28 c32-64 fc128-10 batch"
    std::string str() const;
    /// str() without the normalisation: "784-300-100-10 MLP"
    std::string architecture() const;
    /// {"type": "mlp", "inputs": 784, <the row's options in order>, "classes": 10, "norm": "layer"},
    /// or the row's own form (the language model's, as its checkpoints have always had it)
    std::string to_json() const;
    /// Parses to_json()'s text; throws normnet::Error naming `where` when it is malformed or out
    /// of range (see validate()). Nothing is built.
    static ModelSpec from_json(const std::string& text, const std::string& where);
    /// Throws normnet::Error (prefixed by `where`) unless every size is in [1, kMaxWidth], the norm
    /// applies to this model, the row's own checks pass and the model has at most kMaxParameters
    /// parameters, so that building it cannot overflow or ask for absurd amounts of memory.
    void validate(const std::string& where) const;
    /// The parameters a file must hold for this model (the row says which: the MLP counts its
    /// Linear layers); as a double, since for a hostile spec the count need not fit an integer.
    double parameters() const;
    friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

/// Bounds on what the command line builds: a layer of 2^31 units, a model of 2^30 parameters
/// (4 GiB of float32 weights, 16 GiB with gradients and Adam's moments).
inline constexpr int64_t kMaxWidth = int64_t{1} << 31;
inline constexpr double kMaxParameters = double(int64_t{1} << 30);

/// A count held in a double (parameters of a hostile spec), printed as a whole number.
std::string count_text(double n);

/// The items of a comma-separated list, each with surrounding spaces removed.
std::vector<std::string> list_items(const std::string& text);

/// Parses "300,100" (spaces around items allowed) into sizes; throws normnet::Error on anything
/// else (empty items, non-numbers, <= 0, > kMaxWidth).
std::vector<int64_t> parse_size_list(const std::string& text, const std::string& option);

/// The model the spec describes, through its registry row (validate() first).
std::shared_ptr<Module> build_model(const ModelSpec& spec);

}  // namespace normnet::cli

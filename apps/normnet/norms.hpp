// The normalisations on the command line: the library's table (normnet::Norm, norm_choice.hpp)
// read by name, and lists of them (--norms).
#pragma once

#include <string>
#include <vector>

#include "normnet/nn/norm_choice.hpp"

namespace normnet::cli {

/// The normalisation called `name`; throws normnet::Error naming `where` and the choices otherwise.
Norm norm_named(const std::string& name, const std::string& where);
/// True for a known normalisation that uses batch statistics (BatchNorm); false otherwise.
bool uses_batch_statistics(const std::string& norm);
/// The label of a normalisation for reports ("LayerNorm"); the name itself when unknown.
std::string norm_label(const std::string& norm);
/// The names of the normalisations that can sit at `site`, in table order.
std::vector<std::string> norm_names(NormSite site);
/// The names of every normalisation, in table order.
std::vector<std::string> norm_names();

/// Parses "layer,batch" (spaces around items allowed) into names of normalisations that can sit
/// at `site`; throws normnet::Error on unknown, inapplicable or repeated names.
std::vector<std::string> parse_norm_list(const std::string& text, NormSite site, const std::string& model);

}  // namespace normnet::cli

// Parameter groups: a list of (named) parameters with overrides of the optimizer's options, and
// split_parameters, which divides a model's parameters for them.
#include "normnet/optim.hpp"

namespace normnet {

ParamGroup::ParamGroup(NamedTensors params_in, ParamGroupOptions options_in)
    : params(std::move(params_in)), options(options_in) {}

ParamGroup::ParamGroup(const std::vector<Tensor>& params_in, ParamGroupOptions options_in)
    : options(options_in), named(false) {
    params.reserve(params_in.size());
    for (const Tensor& p : params_in) params.emplace_back(std::string(), p);  // named by position later
}

std::pair<NamedTensors, NamedTensors> split_parameters(const NamedTensors& params,
                                                       const std::function<bool(const std::string&, const Tensor&)>& pred) {
    NORMNET_CHECK(static_cast<bool>(pred), "split_parameters: the predicate is empty");
    std::pair<NamedTensors, NamedTensors> out;
    for (const auto& [name, p] : params) (pred(name, p) ? out.first : out.second).emplace_back(name, p);
    return out;
}

}  // namespace normnet

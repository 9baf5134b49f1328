// Sampling text from a character language model (`normnet lm sample`).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "normnet/module.hpp"

namespace normnet::cli {

/// Options of sample_text.
struct SampleOptions {
    int64_t tokens = 200;
    double temperature = 1.0;  // 0: always the most likely character
    int64_t top_k = 0;         // > 0: draw among the k most likely characters only
    uint64_t seed = 0;
};

/// Continues `prompt` (ids, at least one) by options.tokens characters drawn from the model in
/// eval mode, each from the softmax of its last logits / temperature over the last `context`
/// ids; `on_token` sees each new id as it is drawn. Returns the new ids.
std::vector<int64_t> sample_text(Module& model, int64_t context, std::vector<int64_t> prompt, const SampleOptions& options,
                                 const std::function<void(int64_t)>& on_token = {});

}  // namespace normnet::cli

// The part of `normnet compare`'s report that puts a sequence model's grid next to issue 13's
// anchors: Ba, Kiros and Hinton (2016), LayerNorm LSTMs converge faster than plain ones (so the
// comparison looks at the first epochs, not only the end), and Xiong et al. (2020), pre-LN
// Transformers train without the warm-up post-LN ones need (so the warm-up used is stated).
// Every sentence is computed from the runs' curves, never canned.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer.hpp"

namespace normnet::cli {

/// One run of the grid as the anchors read it.
struct SequenceRun {
    std::string norm;       // "layer", "none"...
    std::string placement;  // "pre" or "post" with a placement axis, "" otherwise
    int64_t batch = 0;
    std::vector<EpochMetrics> curve;
};

struct SequenceSetting {
    bool recurrent = false;       // an LSTM (Ba et al.'s anchor applies)
    int64_t warmup = 0;           // warm-up steps of every run (--warmup)
    int64_t train_images = 0;     // per epoch, for the warm-up's share of an epoch
    std::string what;             // "ViT ... on 2000 mnist training images for 2 epochs"
};

/// Markdown bullet points; "" when neither anchor applies to the grid (no LayerNorm and plain
/// LSTM pair, no pre/post pair).
std::string sequence_findings_md(const std::vector<SequenceRun>& runs, const SequenceSetting& setting);

}  // namespace normnet::cli

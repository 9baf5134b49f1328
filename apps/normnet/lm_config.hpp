// The options of one language-model run (`normnet lm train`): the character Transformer's
// architecture (LmSpec, stored in checkpoints with the vocabulary so that `normnet lm sample`
// rebuilds the model from the file alone) and the training recipe (LmConfig), with their JSON
// forms for config.json and checkpoint metadata.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "normnet/module.hpp"
#include "normnet/optim.hpp"

namespace normnet::cli {

/// The architecture of a GPT-style character model (normnet::models::CharTransformer).
struct LmSpec {
    int64_t vocab_size = 0;  // set from the corpus
    int64_t context = 128;
    int64_t d_model = 128;
    int64_t n_layers = 4;
    int64_t n_heads = 4;
    double dropout = 0.0;
    std::string norm = "layer";  // layer | rms | batch | none
    bool norm_first = true;      // pre-LN (true) or post-LN

    /// "char-transformer vocab 97, context 128, d_model 128, 4 layers, 4 heads, layer pre"
    std::string str() const;
    std::string to_json() const;
    /// Parses to_json()'s text; throws normnet::Error naming `where` when malformed or out of range.
    static LmSpec from_json(const std::string& text, const std::string& where);
    /// Throws normnet::Error naming the option of a value out of range (vocab_size 0 is accepted:
    /// it is not known before the corpus is read).
    void validate() const;
    /// The parameter count (embeddings, blocks, head), as a double: a hostile spec's need not fit.
    double parameters() const;
    friend bool operator==(const LmSpec&, const LmSpec&) = default;
};

/// Builds the model a spec describes: normnet::models::CharTransformer for the command; tests
/// pass a small stand-in.
using LmModelFactory = std::function<std::shared_ptr<Module>(const LmSpec&)>;
/// The command's model: CharTransformer with the spec's options.
std::shared_ptr<Module> build_char_transformer(const LmSpec& spec);

/// Debian's `fortunes`: the default corpus.
inline constexpr const char* kDefaultCorpus = "/usr/share/games/fortunes";

struct LmConfig {
    std::string text = kDefaultCorpus;  // a UTF-8 file or a folder of them
    double val_fraction = 0.05;         // share of the records held out
    LmSpec model;
    int64_t steps = 2000;  // optimizer steps; 0 when the run's length is given in epochs
    int64_t epochs = 0;    // passes over the training text (in tokens), when steps is 0
    int64_t batch_size = 32;
    double lr = 1e-3;
    double weight_decay = 0.1;        // AdamW, decoupled
    std::string schedule = "cosine";  // cosine | constant, after the warm-up
    int64_t warmup = 100;             // linear warm-up, in steps
    double clip = 1.0;                // max gradient norm, 0 = off
    int64_t eval_every = 200;         // steps between validations (and checkpoints)
    uint64_t seed = 0;
    int threads = 0;  // 0: normnet::default_num_threads()
    // --norm batch under mpirun: each rank's statistics over its windows x positions (local) or
    // every rank's (sync: dist::sync_batch_norm through SequenceBatchNorm, as one process would).
    std::string bn_sync = "local";
    // Activation checkpointing of each Transformer block (CharTransformer's checkpoint_blocks):
    // less memory, each block's forward run twice. A recipe choice, not the architecture.
    bool recompute = false;
    // Each block's feed-forward hidden activations recomputed in backward (CharTransformer's
    // checkpoint_ffn): on by default, a quarter less memory for a few percent of time (README);
    // moot with `recompute`, which recomputes whole blocks.
    bool recompute_ffn = true;

    std::string to_json() const;
    /// Reads to_json()'s text (missing keys keep their defaults); `where` names the source in errors.
    static LmConfig from_json(const std::string& text, const std::string& where);
    /// Throws normnet::Error naming the option of a value out of range.
    void validate() const;
    /// Optimizer steps in the run over a training stream of `train_tokens` tokens: `steps`, or
    /// `epochs` passes of batch_size x context tokens each (rounded up).
    int64_t total_steps(int64_t train_tokens) const;
    /// The thread count actually used.
    int resolved_threads() const;
};

/// Bounds on sizes, so that products such as steps x batch x context cannot overflow.
inline constexpr int64_t kMaxLmSize = int64_t{1} << 20;
inline constexpr int64_t kMaxLmSteps = int64_t{1} << 40;

/// AdamW with the config's lr; weight decay on matrices and embeddings (dim >= 2) only.
std::unique_ptr<Optimizer> make_lm_optimizer(const LmConfig& config, const NamedTensors& params);
/// Warm-up then cosine (or constant) over total_steps; throws UsageError when the warm-up does
/// not end before a cosine run does.
LRSchedulerOptions lm_schedule_options(const LmConfig& config, int64_t total_steps);

}  // namespace normnet::cli

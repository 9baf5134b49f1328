// LmTrainer: one run of `normnet lm train`: a character model over a corpus's training stream,
// AdamW with warm-up and cosine, validation on the held-out stream every --eval-every steps,
// and checkpoints (model, vocabulary, architecture; optimizer, schedule, both generators) that
// resume bit for bit, also from between two validations (after a signal).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lm_config.hpp"
#include "normnet/dist.hpp"
#include "normnet/text.hpp"
#include "replicas.hpp"
#include "run_folder.hpp"

namespace normnet::cli {

/// One validation: after `step` optimizer steps.
struct LmMetrics {
    int64_t step = 0;
    double train_loss = 0;  // mean over the steps since the previous validation
    double val_loss = 0;    // nats per character over the held-out stream
    double lr = 0;          // of the last step
    double seconds = 0;     // training time since the previous validation; NaN when unknown
    double bits_per_char() const;
};

/// The steps since the last validation, for the running loss and the time.
struct LmProgress {
    double loss_sum = 0;
    int64_t count = 0;
    double seconds = 0;
};

/// "val loss 1.2345 nats (1.781 bits/char)"
std::string val_loss_text(double nats);

/// metrics.csv of an LM run: step,train_loss,val_loss,val_bits_per_char,lr,seconds.
std::string lm_metrics_csv(const std::vector<LmMetrics>& history);

/// Called after each step: steps done, steps in the run, running mean loss.
using LmStepCallback = std::function<void(int64_t step, int64_t total, double running_loss)>;

class LmTrainer {
public:
    /// The model comes from `factory` (the config's spec, vocab_size set from the corpus).
    /// Throws normnet::Error when either stream of the corpus is not longer than the context.
    /// Under mpirun, `replicas` makes this process one replica of a data-parallel run: every rank
    /// draws the same global batch of config.batch_size windows (which must divide by the world
    /// size) and trains on its contiguous slice, the gradients (and the step's loss, in the same
    /// call) are summed over the ranks once per step, validation is sharded, and only rank 0
    /// writes checkpoints. Every rank must make the same calls.
    LmTrainer(const LmConfig& config, const TextCorpus& corpus, const LmModelFactory& factory,
              const Replicas& replicas = {});

    /// Trains to the next validation point (every eval_every steps, and the run's last step) and
    /// validates there; nullopt when `stop` (asked after each step) ended the interval first.
    std::optional<LmMetrics> run_interval(const LmStepCallback& on_step = {}, const std::function<bool()>& stop = {});
    /// Mean loss in nats per character of the model in eval mode over the held-out stream
    /// (its consecutive windows of `context` characters; in a group, each rank its share of
    /// them, the sums added up).
    double evaluate();

    /// Commits the checkpoint pair into dir (see run_folder.hpp): model.safetensors holds the
    /// state_dict and, as metadata, the architecture, the vocabulary and the config.
    void save_checkpoint(const std::string& dir) const;
    /// Restores a checkpoint read by read_checkpoint(), after checking everything it says
    /// (architecture, vocabulary, optimizer, step) against this run.
    void resume(const LoadedCheckpoint& checkpoint);

    Module& model() { return *model_; }
    const LmConfig& config() const { return config_; }
    int64_t step() const { return step_; }
    int64_t total_steps() const { return total_steps_; }
    const std::vector<LmMetrics>& history() const { return history_; }
    std::vector<LmMetrics>& history() { return history_; }
    const Replicas& replicas() const { return replicas_; }

private:
    // One step's forward and backward on this rank's slice and the all-reduce; returns the
    // global batch's loss, and in `stop` whether any rank asked to stop.
    float parallel_step(const Tensor& x, const Tensor& y, bool& stop);
    void average_running_stats() const;

    LmConfig config_;
    Replicas replicas_;
    std::unique_ptr<dist::GradientAllReduce> reduce_;  // world > 1 only
    std::vector<char32_t> vocab_;
    TokenStream val_;
    TextBatches batches_;
    std::shared_ptr<Module> model_;
    std::unique_ptr<Optimizer> optimizer_;
    std::unique_ptr<LRScheduler> scheduler_;
    int64_t total_steps_ = 0;
    int64_t step_ = 0;
    LmProgress progress_;
    std::vector<LmMetrics> history_;
};

/// The vocabulary as stored in checkpoint metadata (a JSON list of code points), and back.
std::string vocab_json(const std::vector<char32_t>& vocab);
std::vector<char32_t> parse_vocab(const std::string& text, const std::string& where);

/// A model file of `normnet lm train` read for sampling: its spec, vocabulary and weights loaded
/// into a model built by `factory`.
struct LmCheckpoint {
    LmSpec spec;
    LmConfig config;
    std::vector<char32_t> vocab;
    std::shared_ptr<Module> model;
};
LmCheckpoint load_lm_checkpoint(const std::string& path, const LmModelFactory& factory);

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

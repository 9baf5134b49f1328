// LmSpec and LmConfig: text forms, JSON round trip, validation, optimizer and schedule.
#include "lm_config.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "json_field.hpp"
#include "model_spec.hpp"
#include "norms.hpp"
#include "normnet/models/char_transformer.hpp"
#include "run_config.hpp"
#include "normnet/threads.hpp"

namespace normnet::cli {

std::string LmSpec::str() const {
    return normnet::str("char-transformer vocab ", vocab_size, ", context ", context, ", d_model ", d_model, ", ", n_layers,
                  n_layers == 1 ? " layer, " : " layers, ", n_heads, n_heads == 1 ? " head, " : " heads, ", norm,
                  norm_first ? " pre" : " post", dropout > 0 ? ", dropout " + std::to_string(dropout) : std::string());
}

std::string LmSpec::to_json() const {
    return nlohmann::ordered_json{{"type", "char_transformer"}, {"vocab_size", vocab_size}, {"context", context},
                                  {"d_model", d_model},         {"n_layers", n_layers},     {"n_heads", n_heads},
                                  {"dropout", dropout},         {"norm", norm},             {"norm_first", norm_first}}
        .dump();
}

LmSpec LmSpec::from_json(const std::string& text, const std::string& where) {
    LmSpec s;
    try {
        const auto j = nlohmann::json::parse(text);
        NORMNET_CHECK(j.is_object(), "not a JSON object");
        NORMNET_CHECK(j.value("type", std::string()) == "char_transformer", "not a character language model (type ",
                      j.contains("type") ? j.at("type").dump() : std::string("missing"), ")");
        read_field(j, "vocab_size", s.vocab_size);
        read_field(j, "context", s.context);
        read_field(j, "d_model", s.d_model);
        read_field(j, "n_layers", s.n_layers);
        read_field(j, "n_heads", s.n_heads);
        read_field(j, "dropout", s.dropout);
        read_field(j, "norm", s.norm);
        read_field(j, "norm_first", s.norm_first);
    } catch (const std::exception& e) {
        fail(where, ": malformed architecture metadata: ", e.what());
    }
    try {
        s.validate();
        NORMNET_CHECK(s.vocab_size >= 1, "vocab_size must be >= 1, got ", s.vocab_size);
    } catch (const Error& e) {
        fail(where, ": architecture metadata: ", e.what());
    }
    return s;
}

void LmSpec::validate() const {
    const auto check_size = [](const char* option, int64_t v) {
        NORMNET_CHECK(v >= 1 && v <= kMaxLmSize, option, ": must be in [1, ", kMaxLmSize, "], got ", v);
    };
    NORMNET_CHECK(vocab_size >= 0 && vocab_size <= kMaxLmSize, "vocab_size: must be in [0, ", kMaxLmSize, "], got ", vocab_size);
    check_size("--context", context);
    check_size("--d-model", d_model);
    check_size("--layers", n_layers);
    check_size("--heads", n_heads);
    NORMNET_CHECK(d_model % n_heads == 0, "--d-model ", d_model, " is not divisible by --heads ", n_heads);
    NORMNET_CHECK(std::isfinite(dropout) && dropout >= 0 && dropout < 1, "--dropout: must be in [0, 1), got ", dropout);
    // A block normalises each token over its features: the norm table's features site.
    const std::vector<std::string> norms = norm_names(NormSite::features);
    NORMNET_CHECK(std::find(norms.begin(), norms.end(), norm) != norms.end(), "--norm: unknown normalisation '", norm,
                  "' (expected layer, rms, batch or none)");
    const double p = parameters();
    NORMNET_CHECK(p <= kMaxParameters, "the model ", str(), " would have ", count_text(p), " parameters, more than the ",
                  count_text(kMaxParameters), " normnet builds");
}

double LmSpec::parameters() const {
    const auto d = static_cast<double>(d_model), v = static_cast<double>(vocab_size);
    // Token and position embeddings, per block attention (4 d^2) and feed-forward (8 d^2) with
    // biases and two norms, the final norm (pre-LN) and the output head (no bias).
    const double block = 12 * d * d + 13 * d;
    return v * d + static_cast<double>(context) * d + static_cast<double>(n_layers) * block + (norm_first ? 2 * d : 0) + d * v;
}

std::shared_ptr<Module> build_char_transformer(const LmSpec& s) {
    return std::make_shared<models::CharTransformer>(models::CharTransformerOptions{.vocab_size = s.vocab_size,
                                                                                   .context = s.context,
                                                                                   .d_model = s.d_model,
                                                                                   .n_layers = s.n_layers,
                                                                                   .n_heads = s.n_heads,
                                                                                   .dropout = s.dropout,
                                                                                   .norm = s.norm,
                                                                                   .norm_first = s.norm_first});
}

std::string LmConfig::to_json() const {
    return nlohmann::ordered_json{{"text", text},
                                  {"val_fraction", val_fraction},
                                  {"model", nlohmann::json::parse(model.to_json())},
                                  {"steps", steps},
                                  {"epochs", epochs},
                                  {"batch_size", batch_size},
                                  {"lr", lr},
                                  {"weight_decay", weight_decay},
                                  {"schedule", schedule},
                                  {"warmup", warmup},
                                  {"clip", clip},
                                  {"eval_every", eval_every},
                                  {"seed", seed},
                                  {"threads", threads},
                                  {"bn_sync", bn_sync},
                                  {"recompute", recompute},
                                  {"recompute_ffn", recompute_ffn}}
        .dump();
}

LmConfig LmConfig::from_json(const std::string& text, const std::string& where) {
    LmConfig c;
    try {
        const auto j = nlohmann::json::parse(text);
        NORMNET_CHECK(j.is_object(), "not a JSON object");
        read_field(j, "text", c.text);
        read_field(j, "val_fraction", c.val_fraction);
        if (j.contains("model")) c.model = LmSpec::from_json(j.at("model").dump(), where);
        read_field(j, "steps", c.steps);
        read_field(j, "epochs", c.epochs);
        read_field(j, "batch_size", c.batch_size);
        read_field(j, "lr", c.lr);
        read_field(j, "weight_decay", c.weight_decay);
        read_field(j, "schedule", c.schedule);
        read_field(j, "warmup", c.warmup);
        read_field(j, "clip", c.clip);
        read_field(j, "eval_every", c.eval_every);
        read_field(j, "seed", c.seed);
        read_field(j, "threads", c.threads);
        read_field(j, "bn_sync", c.bn_sync);
        read_field(j, "recompute", c.recompute);
        read_field(j, "recompute_ffn", c.recompute_ffn);
    } catch (const std::exception& e) {
        fail(where, ": malformed training config metadata: ", e.what());
    }
    return c;
}

void LmConfig::validate() const {
    NORMNET_CHECK(val_fraction > 0 && val_fraction < 1, "val_fraction: must be in (0, 1), got ", val_fraction);
    model.validate();
    NORMNET_CHECK((steps > 0) != (epochs > 0), "--steps and --epochs: give the length of the run in one of them, got ",
                  steps, " steps and ", epochs, " epochs");
    NORMNET_CHECK(steps >= 0 && steps <= kMaxLmSteps, "--steps: must be in [1, ", kMaxLmSteps, "], got ", steps);
    NORMNET_CHECK(epochs >= 0 && epochs <= kMaxEpochs, "--epochs: must be in [1, ", kMaxEpochs, "], got ", epochs);
    NORMNET_CHECK(batch_size >= 1 && batch_size <= kMaxLmSize, "--batch-size: must be in [1, ", kMaxLmSize, "], got ",
                  batch_size);
    NORMNET_CHECK(model.norm != "batch" || batch_size * model.context >= 2, "--batch-size ", batch_size,
                  ": BatchNorm needs at least 2 positions per batch");
    NORMNET_CHECK(std::isfinite(lr) && lr > 0, "--lr: must be a positive finite number, got ", lr);
    NORMNET_CHECK(std::isfinite(weight_decay) && weight_decay >= 0, "--weight-decay: must be a finite number >= 0, got ",
                  weight_decay);
    NORMNET_CHECK(schedule == "cosine" || schedule == "constant", "--schedule: unknown schedule '", schedule,
                  "' (expected cosine or constant)");
    NORMNET_CHECK(warmup >= 0 && warmup <= kMaxLmSteps, "--warmup: must be in [0, ", kMaxLmSteps, "], got ", warmup);
    NORMNET_CHECK(std::isfinite(clip) && clip >= 0, "--clip: must be a finite number >= 0 (0 turns clipping off), got ", clip);
    NORMNET_CHECK(eval_every >= 1 && eval_every <= kMaxLmSteps, "--eval-every: must be in [1, ", kMaxLmSteps, "], got ",
                  eval_every);
    NORMNET_CHECK(threads >= 0 && threads <= 1024, "--threads: must be in [1, 1024], got ", threads);
    NORMNET_CHECK(!recompute || model.norm != "batch", "--recompute: not with --norm batch (its running statistics "
                  "would be updated twice per step)");
    NORMNET_CHECK(bn_sync == "local" || bn_sync == "sync", "--bn-sync: unknown '", bn_sync, "' (expected local or sync)");
}

int64_t LmConfig::total_steps(int64_t train_tokens) const {
    if (steps > 0) return steps;
    const int64_t per_step = batch_size * model.context;  // both <= 2^20
    const int64_t per_epoch = std::max<int64_t>(1, (train_tokens + per_step - 1) / per_step);
    NORMNET_CHECK(per_epoch <= kMaxLmSteps / epochs, "--epochs ", epochs, ": ", epochs, " x ", per_epoch,
                  " steps per epoch is more than the ", kMaxLmSteps, " steps a run may have");
    return epochs * per_epoch;
}

int LmConfig::resolved_threads() const {
    return threads > 0 ? threads : default_num_threads();
}

std::unique_ptr<Optimizer> make_lm_optimizer(const LmConfig& c, const NamedTensors& params) {
    // As in GPT-2 and nanoGPT: matrices (and embeddings) decay, biases and norm weights do not.
    auto [decay, no_decay] = split_parameters(params, [](const std::string&, const Tensor& p) { return p.dim() >= 2; });
    return std::make_unique<AdamW>(std::vector<ParamGroup>{ParamGroup(std::move(decay)),
                                                           ParamGroup(std::move(no_decay), {.weight_decay = 0.0})},
                                   AdamWOptions{.lr = c.lr, .weight_decay = c.weight_decay});
}

LRSchedulerOptions lm_schedule_options(const LmConfig& c, int64_t total_steps) {
    LRSchedulerOptions o;
    o.schedule = c.schedule == "cosine" ? Schedule::cosine : Schedule::constant;
    o.total_steps = total_steps;
    o.warmup_steps = c.warmup;
    if (o.schedule == Schedule::cosine && o.warmup_steps >= o.total_steps) {
        throw UsageError(str("--warmup ", c.warmup, ": the cosine schedule needs the warm-up to end before the run does (",
                             total_steps, " steps)"));
    }
    return o;
}

}  // namespace normnet::cli

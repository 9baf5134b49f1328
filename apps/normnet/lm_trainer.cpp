// LmTrainer: training steps, validation, checkpoints and exact resume of a character model;
// reading a model file back and sampling text from it.
#include "lm_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>

#include "checkpoint_metadata.hpp"
#include "commands.hpp"
#include "normnet/normnet.hpp"
#include "trainer.hpp"

namespace normnet::cli {
namespace {

using Json = nlohmann::json;

// The window generator's seed: another sequence than the default generator's (the weights'),
// although both come from --seed.
uint64_t window_seed(uint64_t seed) { return seed ^ 0x9e3779b97f4a7c15ull; }

// `stream`, after checking it can give a window of `context` characters and its targets.
const TokenStream& long_enough(const TokenStream& stream, const char* what, const LmConfig& c, const TextCorpus& corpus) {
    NORMNET_CHECK(stream.size() > c.model.context, "--text ", corpus.name, ": the ", what, " text (", stream.size(),
                  " characters", corpus.records > 1 ? ", from a corpus of " + std::to_string(corpus.records) + " records" : std::string(),
                  ") is not longer than the context (", c.model.context, "): use a longer corpus or a shorter --context");
    return stream;
}

// Rows of the history without the seconds (so the same run writes the same checkpoint bytes):
// [step, train_loss, val_loss, lr].
std::string history_json(const std::vector<LmMetrics>& history) {
    Json rows = Json::array();
    for (const LmMetrics& m : history) rows.push_back({m.step, number(m.train_loss), number(m.val_loss), number(m.lr)});
    return rows.dump();
}

std::vector<LmMetrics> parse_history(const std::string& text, int64_t step) {
    const Json rows = Json::parse(text);
    NORMNET_CHECK(rows.is_array(), "not a list");
    std::vector<LmMetrics> history;
    for (const Json& row : rows) {
        NORMNET_CHECK(row.is_array() && row.size() == 4, "malformed row ", row.dump());
        LmMetrics m;
        m.step = count_of(row[0], step);
        NORMNET_CHECK(history.empty() || m.step > history.back().step, "step ", m.step, " out of order");
        m.train_loss = number_of(row[1]);
        m.val_loss = number_of(row[2]);
        m.lr = number_of(row[3]);
        m.seconds = NAN;  // from metrics.csv, if it has the row
        history.push_back(m);
    }
    return history;
}

std::string progress_json(const LmProgress& p) {
    return Json{{"loss_sum", number(p.loss_sum)}, {"count", p.count}, {"seconds", number(p.seconds)}}.dump();
}

LmProgress parse_progress(const std::string& text) {
    const Json j = Json::parse(text);
    NORMNET_CHECK(j.is_object(), "not a JSON object");
    LmProgress p;
    p.loss_sum = number_of(j.at("loss_sum"));
    p.count = count_of(j.at("count"), kMaxLmSteps);
    p.seconds = number_of(j.at("seconds"));
    NORMNET_CHECK(std::isfinite(p.loss_sum), "malformed progress ", text);
    return p;
}

}  // namespace

double LmMetrics::bits_per_char() const { return val_loss / std::numbers::ln2; }

std::string val_loss_text(double nats) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "val loss %.4f nats (%.3f bits/char)", nats, nats / std::numbers::ln2);
    return buf;
}

std::string lm_metrics_csv(const std::vector<LmMetrics>& history) {
    std::string csv = "step,train_loss,val_loss,val_bits_per_char,lr,seconds\n";
    for (const LmMetrics& m : history) {
        char seconds[32] = "";
        if (std::isfinite(m.seconds)) std::snprintf(seconds, sizeof seconds, "%.3f", m.seconds);
        char row[256];
        std::snprintf(row, sizeof row, "%lld,%.6f,%.6f,%.6f,%.6g,%s\n", static_cast<long long>(m.step), m.train_loss,
                      m.val_loss, m.bits_per_char(), m.lr, seconds);
        csv += row;
    }
    return csv;
}

std::string vocab_json(const std::vector<char32_t>& vocab) {
    Json list = Json::array();
    for (char32_t c : vocab) list.push_back(static_cast<uint32_t>(c));
    return list.dump();
}

std::vector<char32_t> parse_vocab(const std::string& text, const std::string& where) {
    std::vector<char32_t> vocab;
    try {
        const Json list = Json::parse(text);
        NORMNET_CHECK(list.is_array() && !list.empty(), "not a non-empty list");
        for (const Json& v : list) {
            const auto c = static_cast<char32_t>(count_of(v, 0x10ffff));
            NORMNET_CHECK(vocab.empty() || c > vocab.back(), "code points not in increasing order");
            vocab.push_back(c);
        }
    } catch (const std::exception& e) {
        fail(where, ": malformed normnet.vocab: ", e.what());
    }
    return vocab;
}

LmTrainer::LmTrainer(const LmConfig& config, const TextCorpus& corpus, const LmModelFactory& factory,
                     const Replicas& replicas)
    : config_(config),
      replicas_(replicas),
      vocab_(corpus.vocab),
      val_(long_enough(corpus.val, "held-out", config, corpus)),
      batches_(long_enough(corpus.train, "training", config, corpus), config.batch_size, config.model.context,
               window_seed(config.seed)) {
    config_.model.vocab_size = corpus.vocab_size();
    config_.validate();
    const int64_t per_rank = per_rank_batch(config_.batch_size, replicas_);
    const bool batch_norm = config_.model.norm == "batch";
    if (replicas_.parallel() && batch_norm && config_.bn_sync == "local" && per_rank * config_.model.context < 2) {
        throw UsageError(str("--batch-size ", config_.batch_size, " over ", replicas_.world, " processes leaves one position per "
                             "rank: BatchNorm with --bn-sync local needs at least 2 (use a larger --batch-size or --bn-sync sync)"));
    }
    total_steps_ = config_.total_steps(corpus.train.size());
    manual_seed(config_.seed);
    model_ = factory(config_.model);
    if (config_.recompute) {
        auto* transformer = dynamic_cast<models::CharTransformer*>(model_.get());
        NORMNET_CHECK(transformer != nullptr, "--recompute: the model is not a CharTransformer");
        transformer->set_checkpoint_blocks(true);
    }
    if (config_.recompute_ffn && !config_.recompute) {
        // On by default: a model of the factory's without Transformer blocks has nothing to recompute.
        if (auto* transformer = dynamic_cast<models::CharTransformer*>(model_.get())) transformer->set_checkpoint_ffn(true);
    }
    if (replicas_.parallel()) {
        // Every rank starts from rank 0's weights (the same seed gives them anyway; this makes it so).
        dist::broadcast_module(*model_);
        // SequenceBatchNorm is a BatchNormBase over [B x T, C]: synchronised, its statistics are
        // over every rank's windows and positions, those of the global batch in one process.
        if (batch_norm && config_.bn_sync == "sync") dist::convert_sync_batchnorm(*model_);
        reduce_ = std::make_unique<dist::GradientAllReduce>(model_->parameters(), 2);  // + the loss and the stop flag
    }
    optimizer_ = make_lm_optimizer(config_, model_->named_parameters());
    scheduler_ = std::make_unique<LRScheduler>(*optimizer_, lm_schedule_options(config_, total_steps_));
}

std::optional<LmMetrics> LmTrainer::run_interval(const LmStepCallback& on_step, const std::function<bool()>& stop) {
    model_->train();
    const std::vector<Tensor> params = model_->parameters();
    const int64_t end = std::min(total_steps_, (step_ / config_.eval_every + 1) * config_.eval_every);
    const auto start = std::chrono::steady_clock::now();
    const double seconds_before = progress_.seconds;
    const auto elapsed = [&] {
        return seconds_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    optimizer_->zero_grad();
    double lr = optimizer_->lr();
    while (step_ < end) {
        const auto [x, y] = batches_.next();
        float value = 0;
        bool stop_here = false;
        if (reduce_) {
            stop_here = stop && step_ + 1 < end && stop();  // asked before the step's all-reduce, which carries it
            value = parallel_step(x, y, stop_here);
        } else {
            const Tensor logits = model_->forward(x);  // [B, T, V]
            const int64_t V = logits.size(-1);
            const Tensor loss = cross_entropy(logits.reshape({-1, V}), y.reshape({-1}));
            value = loss.item();
            if (std::isfinite(value)) loss.backward();
        }
        if (!std::isfinite(value)) {
            throw NonFinite(str("non-finite loss (", value, ") at step ", step_ + 1, " of ", total_steps_));
        }
        if (config_.clip > 0) {
            const double norm = clip_grad_norm(params, config_.clip);
            if (!std::isfinite(norm)) {
                throw NonFinite(str("non-finite gradient norm (", norm, ") at step ", step_ + 1, " of ", total_steps_));
            }
        }
        lr = optimizer_->lr();
        optimizer_->step_and_zero_grad();
        scheduler_->step();
        ++step_;
        progress_.loss_sum += value;
        ++progress_.count;
        if (on_step) on_step(step_, total_steps_, progress_.loss_sum / static_cast<double>(progress_.count));
        if (step_ < end && (reduce_ ? stop_here : stop && stop())) {
            progress_.seconds = elapsed();
            return std::nullopt;
        }
    }
    LmMetrics m;
    m.step = step_;
    m.train_loss = progress_.loss_sum / static_cast<double>(std::max<int64_t>(progress_.count, 1));
    m.seconds = elapsed();
    m.lr = lr;
    m.val_loss = evaluate();
    progress_ = LmProgress{};
    history_.push_back(m);
    return m;
}

float LmTrainer::parallel_step(const Tensor& x, const Tensor& y, bool& stop) {
    // Rank r's slice of the global batch: windows [r b, (r + 1) b). Each rank backpropagates its
    // share (1 / world) of the global batch's mean loss, so that the all-reduce sums the ranks'
    // gradients into the global batch's (also through synchronised BatchNorm, whose backward
    // sums over the ranks); the loss and the stop flag ride in the same call.
    const int64_t b = x.size(0) / replicas_.world;
    const Tensor xs = x.narrow(0, replicas_.rank * b, b), ys = y.narrow(0, replicas_.rank * b, b);
    const float share = 1.0f / static_cast<float>(replicas_.world);
    // Dropout: the ranks' masks must be independent draws, not the same draws over each slice.
    // Each step takes one number from the default generator, as every rank does (so that its
    // state stays the same on all ranks and a checkpoint of rank 0's resumes any world size),
    // and draws this rank's masks from a generator seeded with it and the rank.
    Generator& generator = default_generator();
    const bool dropout = config_.model.dropout > 0;
    std::array<uint64_t, 4> shared{};
    if (dropout) {
        const uint64_t step_seed = generator.next_u64();
        shared = generator.state();
        generator.manual_seed(step_seed ^ (0xd1b54a32d192ed03ull * static_cast<uint64_t>(replicas_.rank + 1)));
    }
    const Tensor logits = model_->forward(xs);  // [b, T, V]
    const Tensor loss = cross_entropy(logits.reshape({-1, logits.size(-1)}), ys.reshape({-1}));
    if (dropout) generator.set_state(shared);
    const float value = loss.item();
    if (std::isfinite(value)) (loss * share).backward();  // else its NaN reaches every rank in the sum
    float metrics[2] = {value * share, stop ? 1.0f : 0.0f};
    reduce_->all_reduce(1.0f, metrics);
    stop = metrics[1] > 0;
    return metrics[0];
}

void LmTrainer::average_running_stats() const {
    if (config_.model.norm == "batch" && config_.bn_sync == "local") cli::average_running_stats(*model_, replicas_);
}

double LmTrainer::evaluate() {
    NoGradGuard no_grad;
    average_running_stats();
    const bool was_training = model_->is_training();
    model_->eval();
    const int64_t T = config_.model.context, windows = (val_.size() - 1) / T;
    // In a group, rank r evaluates the windows [r W / world, (r + 1) W / world).
    const int64_t first = windows * replicas_.rank / replicas_.world;
    const int64_t last = windows * (replicas_.rank + 1) / replicas_.world;
    double loss_sum = 0;  // of per-character losses
    for (int64_t w0 = first; w0 < last; w0 += config_.batch_size) {
        const int64_t n = std::min(config_.batch_size, last - w0);
        std::vector<int64_t> x(static_cast<size_t>(n * T)), y(static_cast<size_t>(n * T));
        val_.copy_to(w0 * T, n * T, x.data());
        val_.copy_to(w0 * T + 1, n * T, y.data());
        const Tensor logits = model_->forward(from_vector(x, {n, T}));
        const Tensor loss = cross_entropy(logits.reshape({-1, logits.size(-1)}), from_vector(y, {n * T}));
        loss_sum += static_cast<double>(loss.item()) * static_cast<double>(n * T);
    }
    model_->train(was_training);
    dist::all_reduce(&loss_sum, 1);  // every rank's share (nothing with one process)
    return loss_sum / static_cast<double>(windows * T);
}

void LmTrainer::save_checkpoint(const std::string& dir) const {
    // Every rank calls this: rank 0 writes (atomically, as one process would) while the others
    // wait for it. The state is the same on every rank (the running statistics once averaged).
    average_running_stats();
    if (!replicas_.leader()) {
        dist::barrier();
        return;
    }
    CheckpointContents c;
    c.model = model_->state_dict();
    const std::string bad = first_non_finite(c.model);
    if (!bad.empty()) throw NonFinite(str("the model's ", bad, " is not finite after step ", step_));
    const std::string step = std::to_string(step_);
    for (const auto& [name, t] : optimizer_->state_dict()) c.state.emplace_back("optimizer." + name, t);
    c.state_metadata = {{"normnet.step", step},
                        {"normnet.optimizer", optimizer_->name()},
                        {"normnet.rng_state", rng_state_text(default_generator())},
                        {"normnet.window_rng_state", rng_state_text(const_cast<TextBatches&>(batches_).generator())},
                        {"normnet.progress", progress_json(progress_)},
                        {"normnet.history", history_json(history_)}};
    c.model_metadata = {{"format", "pt"},
                        {"normnet.architecture", config_.model.to_json()},
                        {"normnet.vocab", vocab_json(vocab_)},
                        {"normnet.config", config_.to_json()},
                        {"normnet.step", step},
                        {"normnet.version", NORMNET_VERSION}};
    if (replicas_.parallel()) {  // what the run was trained on (a resume may use another world size)
        c.model_metadata["normnet.world_size"] = std::to_string(replicas_.world);
        c.model_metadata["normnet.bn_sync"] = config_.bn_sync;
    }
    commit_checkpoint(dir, std::move(c));
    if (replicas_.parallel()) dist::barrier();
}

void LmTrainer::resume(const LoadedCheckpoint& checkpoint) {
    const SafetensorsData& model = checkpoint.model;
    const SafetensorsData& state = checkpoint.state;
    const std::string& path = model.path;
    // Everything is read and checked before anything changes.
    const LmSpec spec = LmSpec::from_json(metadata_or_fail(model, "normnet.architecture"), path);
    NORMNET_CHECK(spec == config_.model, "--resume ", path, ": the checkpoint's architecture (", spec.str(),
                  ") differs from this run's (", config_.model.str(), ")");
    NORMNET_CHECK(parse_vocab(metadata_or_fail(model, "normnet.vocab"), path) == vocab_, "--resume ", path,
                  ": the corpus ", config_.text, " has another vocabulary than the checkpoint's (", spec.vocab_size,
                  " characters); resume on the corpus it was trained on");
    const auto step = static_cast<int64_t>(parse_count(metadata_or_fail(model, "normnet.step"), kMaxLmSteps, path));
    NORMNET_CHECK(parse_count(metadata_or_fail(state, "normnet.step"), kMaxLmSteps, state.path) == static_cast<uint64_t>(step),
                  state.path, ": training state is from another step than ", path);
    NORMNET_CHECK(step < total_steps_, "--resume ", path, ": the checkpoint has already trained ", step, " of ", total_steps_,
                  " steps (pass --steps N to train more)");
    const std::string optimizer = metadata_or_fail(state, "normnet.optimizer");
    NORMNET_CHECK(optimizer == optimizer_->name(), "--resume ", path, ": the checkpoint was trained with ", optimizer,
                  ", not ", optimizer_->name());
    const auto rng = parse_rng_state(metadata_or_fail(state, "normnet.rng_state"), state.path);
    const auto window_rng = parse_rng_state(metadata_or_fail(state, "normnet.window_rng_state"), state.path);
    LmProgress progress;
    std::vector<LmMetrics> history;
    try {
        progress = parse_progress(metadata_or_fail(state, "normnet.progress"));
        history = parse_history(metadata_or_fail(state, "normnet.history"), step);
    } catch (const std::exception& e) {
        fail(state.path, ": malformed training state metadata: ", e.what());
    }
    NamedTensors optimizer_state;
    for (const auto& [name, t] : state.tensors) {
        if (name.rfind("optimizer.", 0) == 0) optimizer_state.emplace_back(name.substr(10), t);
    }
    try {
        load(*model_, model);
    } catch (const Error& e) {
        fail("--resume ", e.what());
    }
    try {
        optimizer_->load_state_dict(optimizer_state);
    } catch (const Error& e) {
        fail("--resume ", state.path, ": ", e.what());
    }
    scheduler_->set_position(step);
    default_generator().set_state(rng);
    batches_.generator().set_state(window_rng);
    step_ = step;
    progress_ = progress;
    history_ = std::move(history);
}

LmCheckpoint load_lm_checkpoint(const std::string& path, const LmModelFactory& factory) {
    const SafetensorsData file = load_safetensors(path);
    LmCheckpoint c;
    c.spec = LmSpec::from_json(metadata_or_fail(file, "normnet.architecture"), path);
    c.config = LmConfig::from_json(metadata_or_fail(file, "normnet.config"), path);
    c.vocab = parse_vocab(metadata_or_fail(file, "normnet.vocab"), path);
    NORMNET_CHECK(static_cast<int64_t>(c.vocab.size()) == c.spec.vocab_size, path, ": the vocabulary has ", c.vocab.size(),
                  " characters but the architecture says ", c.spec.vocab_size);
    // The weights must be about as many values as the architecture needs before it is built, so
    // that metadata promising a huge model cannot make a small file allocate gigabytes.
    double values = 0;
    for (const auto& [name, t] : file.tensors) values += static_cast<double>(t.numel());
    NORMNET_CHECK(values >= 0.5 * c.spec.parameters(), path, ": the model ", c.spec.str(), " needs about ",
                  count_text(c.spec.parameters()), " parameters, but the file holds only ", count_text(values), " values");
    c.model = factory(c.spec);
    load(*c.model, file);
    c.model->eval();
    return c;
}

std::vector<int64_t> sample_text(Module& model, int64_t context, std::vector<int64_t> ids, const SampleOptions& options,
                                 const std::function<void(int64_t)>& on_token) {
    NORMNET_CHECK(!ids.empty(), "sample_text: the prompt needs at least one character");
    NoGradGuard no_grad;
    model.eval();
    Generator gen(options.seed);
    std::vector<int64_t> out;
    std::vector<double> p;
    for (int64_t i = 0; i < options.tokens; ++i) {
        const auto L = static_cast<int64_t>(std::min<size_t>(ids.size(), static_cast<size_t>(context)));
        const Tensor logits = model.forward(from_vector(std::span<const int64_t>(ids.data() + ids.size() - L, L), {1, L}));
        const int64_t V = logits.size(-1);
        const Tensor last = logits.reshape({L, V}).select(0, L - 1).contiguous();
        const float* z = last.data();
        int64_t next = std::max_element(z, z + V) - z;
        if (options.temperature > 0) {
            // Softmax of z / T in double, over the top k when asked (ties at the k-th value kept).
            float cut = -std::numeric_limits<float>::infinity();
            if (options.top_k > 0 && options.top_k < V) {
                std::vector<float> sorted(z, z + V);
                std::nth_element(sorted.begin(), sorted.begin() + (options.top_k - 1), sorted.end(), std::greater<>());
                cut = sorted[static_cast<size_t>(options.top_k - 1)];
            }
            p.assign(static_cast<size_t>(V), 0.0);
            double total = 0;
            for (int64_t v = 0; v < V; ++v) {
                if (z[v] < cut) continue;
                p[static_cast<size_t>(v)] = std::exp((static_cast<double>(z[v]) - z[next]) / options.temperature);
                total += p[static_cast<size_t>(v)];
            }
            const double u = static_cast<double>(gen.next_u64() >> 11) * 0x1p-53 * total;
            double acc = 0;
            for (int64_t v = 0; v < V; ++v) {
                acc += p[static_cast<size_t>(v)];
                if (p[static_cast<size_t>(v)] > 0 && u < acc) {
                    next = v;
                    break;
                }
            }
        }
        ids.push_back(next);
        out.push_back(next);
        if (on_token) on_token(next);
    }
    return out;
}

}  // namespace normnet::cli

// Trainer: the training step, evaluation, and checkpoints that resume bit for bit.
#include "trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>
#include <tuple>

#include "checkpoint_metadata.hpp"
#include "commands.hpp"
#include "models.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

using Json = nlohmann::json;
constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();

// FNV-1a over a tensor's bytes: replicas that are bit-identical hash the same.
int64_t content_hash(const Tensor& t) {
    const Tensor c = t.contiguous();
    const auto* p = reinterpret_cast<const unsigned char*>(c.data());
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i < c.numel() * static_cast<int64_t>(sizeof(float)); ++i) h = (h ^ p[i]) * 1099511628211ull;
    return static_cast<int64_t>(h);
}

// Test hook (tests/dist): NORMNET_TEST_PERTURB=<rank>:<parameter> nudges that parameter on that
// rank after the initial broadcast, so --check-replicas has a difference to find.
void perturb_for_test(Module& model, int rank) {
    const char* spec = std::getenv("NORMNET_TEST_PERTURB");
    if (!spec) return;
    const std::string s(spec);
    const size_t colon = s.find(':');
    if (colon == std::string::npos || std::atoi(s.substr(0, colon).c_str()) != rank) return;
    for (auto& [name, t] : model.named_parameters()) {
        if (name == s.substr(colon + 1)) t.data()[0] += 1e-3f;
    }
}

// The deterministic metrics of each finished epoch (not the seconds, so that the same run always
// writes the same checkpoint bytes). Runs counted in epochs: [epoch, train_loss, train_acc,
// test_loss, test_acc, lr, skipped], a regression's with [test_rmse, test_mae, test_r2] after
// them; in steps: [step, train_loss, val_loss, lr].
std::string history_json(const std::vector<EpochMetrics>& history, bool steps) {
    Json rows = Json::array();
    for (const EpochMetrics& m : history) {
        if (steps) {
            rows.push_back({m.step, number(m.train_loss), number(m.test_loss), number(m.lr)});
        } else {
            rows.push_back({m.epoch, number(m.train_loss), number(m.train_acc), number(m.test_loss), number(m.test_acc),
                            number(m.lr), m.skipped});
            if (!std::isnan(m.test_rmse)) {
                for (const double v : {m.test_rmse, m.test_mae, m.test_r2}) rows.back().push_back(number(v));
            }
        }
    }
    return rows.dump();
}

// `epochs` rows (runs counted in epochs), or rows of increasing steps up to `step`.
std::vector<EpochMetrics> parse_history(const std::string& text, bool steps, int64_t epochs, int64_t step) {
    const Json rows = Json::parse(text);
    NORMNET_CHECK(rows.is_array(), "not a list");
    NORMNET_CHECK(steps || rows.size() == static_cast<size_t>(epochs), "expected a list of ", epochs, " epochs");
    std::vector<EpochMetrics> history;
    for (const Json& row : rows) {
        NORMNET_CHECK(row.is_array() && (steps ? row.size() == 4u : row.size() == 7u || row.size() == 10u), "malformed ",
                      steps ? "" : "epoch ", "row ", row.dump());
        EpochMetrics m;
        m.epoch = static_cast<int64_t>(history.size()) + 1;
        m.train_loss = number_of(row[1]);
        if (steps) {
            m.step = count_of(row[0], step);
            NORMNET_CHECK(history.empty() || m.step > history.back().step, "step ", m.step, " out of order");
            m.test_loss = number_of(row[2]);
            m.lr = number_of(row[3]);
            m.train_acc = m.test_acc = NAN;
        } else {
            NORMNET_CHECK(count_of(row[0], kMaxEpochs) == m.epoch, "epoch ", row[0].dump(), " out of order");
            m.train_acc = number_of(row[2]);
            m.test_loss = number_of(row[3]);
            m.test_acc = number_of(row[4]);
            m.lr = number_of(row[5]);
            m.skipped = count_of(row[6], kMaxCount);
            if (row.size() == 10u) m.test_rmse = number_of(row[7]), m.test_mae = number_of(row[8]), m.test_r2 = number_of(row[9]);
        }
        m.seconds = NAN;  // filled in from metrics.csv, if it has the row
        history.push_back(m);
    }
    return history;
}

// The sums of the epoch so far. Runs counted in steps keep {loss_sum, count, seconds}.
std::string progress_json(const EpochProgress& p, bool steps) {
    if (steps) return Json{{"loss_sum", number(p.loss_sum)}, {"count", p.seen}, {"seconds", number(p.seconds)}}.dump();
    return Json{{"batch", p.batch},     {"correct", p.correct},           {"seen", p.seen},
                {"skipped", p.skipped}, {"loss_sum", number(p.loss_sum)}, {"seconds", number(p.seconds)}}
        .dump();
}

EpochProgress parse_progress(const std::string& text, bool steps) {
    const Json j = Json::parse(text);
    NORMNET_CHECK(j.is_object(), "not a JSON object");
    EpochProgress p;
    p.loss_sum = number_of(j.at("loss_sum"));
    p.seconds = number_of(j.at("seconds"));
    if (steps) {
        p.seen = count_of(j.at("count"), kMaxSteps);
    } else {
        p.batch = count_of(j.at("batch"), kMaxCount);
        p.seen = count_of(j.at("seen"), kMaxCount);
        p.correct = count_of(j.at("correct"), p.seen);
        p.skipped = count_of(j.at("skipped"), p.batch);
        NORMNET_CHECK(p.batch >= 1, "malformed progress ", text);
    }
    NORMNET_CHECK(std::isfinite(p.loss_sum), "malformed progress ", text);
    return p;
}

bool gradients_finite(const std::vector<Tensor>& params) {
    for (const Tensor& p : params) {
        const Tensor g = p.grad();
        if (!g.defined()) continue;
        const float* d = g.data();
        for (int64_t i = 0; i < g.numel(); ++i) {
            if (!std::isfinite(d[i])) return false;
        }
    }
    return true;
}

}  // namespace

double EpochMetrics::bits_per_char() const { return test_loss / std::numbers::ln2; }

std::pair<ModelSpec, RunConfig> read_checkpoint_config(const SafetensorsData& checkpoint) {
    ModelSpec spec = ModelSpec::from_json(metadata_or_fail(checkpoint, "normnet.architecture"), checkpoint.path);
    RunConfig config = RunConfig::from_json(metadata_or_fail(checkpoint, "normnet.config"), checkpoint.path);
    config.model = spec;
    return {spec, config};
}

void check_file_fits(const ModelSpec& spec, const SafetensorsData& weights, const std::string& option) {
    double values = 0;
    for (const auto& [name, t] : weights.tensors) values += static_cast<double>(t.numel());
    NORMNET_CHECK(spec.parameters() <= values, option, option.empty() ? "" : " ", weights.path, ": the model ", spec.str(),
                  " needs ", count_text(spec.parameters()), " parameters in its weights and biases alone, but the file holds only ",
                  count_text(values), " values");
}

ModelFile load_model_file(const std::string& path) {
    ModelFile m;
    m.file = load_safetensors(path);
    std::tie(m.spec, m.config) = read_checkpoint_config(m.file);
    // A model sized by its data (the language model's vocabulary) may say 0 until the data is read;
    // a model file must know it.
    NORMNET_CHECK(m.spec.inputs >= 1 && m.spec.classes >= 1, path, ": architecture metadata: vocab_size must be >= 1, got ",
                  m.spec.inputs);
    check_file_fits(m.spec, m.file);  // before building the model the metadata describes
    m.model = build_model(m.spec);
    load(*m.model, m.file);
    m.model->eval();
    return m;
}

ResumePoint parse_resume_point(const LoadedCheckpoint& c) {
    ResumePoint p;
    std::tie(p.spec, p.config) = read_checkpoint_config(c.model);
    const std::string& state = c.state.path;
    const bool steps = p.config.counts_steps();
    // Where: epochs done (and the batch inside the next, in the model file), or steps done.
    const char* key = steps ? "normnet.step" : "normnet.epoch";
    const int64_t max = steps ? kMaxSteps : kMaxEpochs;
    const auto at = static_cast<int64_t>(parse_count(metadata_or_fail(c.model, key), static_cast<uint64_t>(max), c.model.path));
    NORMNET_CHECK(parse_count(metadata_or_fail(c.state, key), static_cast<uint64_t>(max), state) == static_cast<uint64_t>(at),
                  state, ": training state is from another ", steps ? "step" : "epoch", " than ", c.model.path);
    p.optimizer = metadata_or_fail(c.state, "normnet.optimizer");
    p.rng = parse_rng_state(metadata_or_fail(c.state, "normnet.rng_state"), state);
    if (steps) {
        p.step = at;
        try {
            p.progress = parse_progress(metadata_or_fail(c.state, "normnet.progress"), true);
            p.history = parse_history(metadata_or_fail(c.state, "normnet.history"), true, 0, p.step);
        } catch (const std::exception& e) {
            fail(state, ": malformed training state metadata: ", e.what());
        }
        p.has_history = true;
        return p;
    }
    p.epoch = at;
    p.step = static_cast<int64_t>(parse_count(metadata_or_fail(c.state, "normnet.scheduler_position"), uint64_t{1} << 62, state));
    try {
        if (c.state.metadata.count("normnet.progress")) p.progress = parse_progress(c.state.metadata.at("normnet.progress"), false);
    } catch (const std::exception& e) {
        fail(state, ": malformed normnet.progress: ", e.what());
    }
    const auto batch = c.model.metadata.find("normnet.batch");
    NORMNET_CHECK((batch == c.model.metadata.end() ? 0 : parse_count(batch->second, uint64_t{1} << 62, c.model.path)) ==
                      static_cast<uint64_t>(p.progress.batch),
                  state, ": training state is from another batch than ", c.model.path);
    p.has_history = c.state.metadata.count("normnet.history") > 0;
    try {
        if (p.has_history) p.history = parse_history(c.state.metadata.at("normnet.history"), false, p.epoch, 0);
    } catch (const std::exception& e) {
        fail(state, ": malformed normnet.history: ", e.what());
    }
    return p;
}

Trainer::Trainer(const RunConfig& config, std::unique_ptr<Task> task, const Replicas& replicas)
    : config_(config), task_(std::move(task)), replicas_(replicas) {
    task_->complete(config_.model);
    config_.validate();
    config_.model.validate("--data " + config_.resolved_data_dir());  // as its data sized it (an image folder's images)
    // The same seed gives the same initial weights whatever the normalisation: the norm layers
    // draw no random numbers.
    manual_seed(config_.seed);
    try {
        model_ = build_model(config_.model);
        if (const auto setup = config_.model.kind().train_setup) setup(*model_, config_);
        optimizer_ = make_optimizer(config_, model_->named_parameters());
    } catch (const std::bad_alloc&) {
        fail("not enough memory for the model ", config_.model.str(), " (", count_text(config_.model.parameters()),
             " parameters; with gradients and optimizer state about ", count_text(config_.model.parameters() * 16 / 1e9),
             " GB)");
    }
    if (replicas_.parallel()) {
        // Every rank starts from rank 0's weights (the same seed gives them anyway; this makes it so).
        dist::broadcast_module(*model_);
        // Synchronised BatchNorm normalises over every rank's samples (a sequence model's: over
        // every rank's windows and positions), those of the global batch in one process.
        if (config_.bn_sync == "sync") dist::convert_sync_batchnorm(*model_);
        reduce_ = std::make_unique<dist::GradientAllReduce>(model_->parameters(), 4);  // + StepSums
        // Ranks on one node split the optimizer's step (dist.hpp); clipping and --on-nan skip
        // look at the whole gradient, so they keep the allreduce. NORMNET_DIST_SHARD=0 turns it off.
        const char* shard = std::getenv("NORMNET_DIST_SHARD");
        if (config_.clip == 0 && config_.on_nan != "skip" && !(shard && std::string(shard) == "0")) {
            sharded_ = reduce_->shard_optimizer(*optimizer_);
        }
        perturb_for_test(*model_, replicas_.rank);
    }
    scheduler_ = std::make_unique<LRScheduler>(
        *optimizer_, schedule_options(config_, task_->total_steps(), task_->steps_per_epoch()));
}

int64_t Trainer::epochs() const {
    const int64_t per = task_->steps_per_epoch();
    return (task_->total_steps() + per - 1) / per;
}

int64_t Trainer::batches_per_epoch() const {
    const int64_t per = task_->steps_per_epoch();
    return std::min(per, task_->total_steps() - epochs_done_ * per);
}

std::string Trainer::position() const {
    if (config_.counts_steps()) return "step " + std::to_string(step());
    if (progress_.batch == 0) return "epoch " + std::to_string(epochs_done_);
    return str("epoch ", epochs_done_ + 1, ", batch ", progress_.batch, " of ", batches_per_epoch());
}

std::string Trainer::epoch_label() const {
    if (config_.counts_steps()) {
        return str("step ", epochs_done_ * task_->steps_per_epoch() + batches_per_epoch(), "/", total_steps());
    }
    return str("epoch ", epochs_done_ + 1, "/", epochs());
}

std::string Trainer::where_in_run() const {
    if (config_.counts_steps()) return str("step ", step() + 1, " of ", total_steps());
    return str("epoch ", epochs_done_ + 1, ", batch ", progress_.batch + 1, " of ", batches_per_epoch());
}

EpochProgress Trainer::train_epoch(const BatchCallback& on_batch, const StopCheck& stop) {
    model_->train();
    task_->start_epoch(epochs_done_, progress_.batch);
    const std::vector<Tensor> params = model_->parameters();
    const int64_t batches = batches_per_epoch();
    const bool over_rows = task_->mean_over_rows();
    const auto start = std::chrono::steady_clock::now();
    const double seconds_before = progress_.seconds;
    const auto elapsed = [&] {
        return seconds_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    const bool skip_mode = config_.on_nan == "skip";
    const auto reject = [&](const char* what, double value) {
        if (skip_mode) return false;
        throw NonFinite(str("non-finite ", what, " (", value, ") at ", where_in_run()));
    };
    // Gradients are zeroed once here and then by step_and_zero_grad, in the optimizer's own
    // pass: each backward adds into buffers kept across steps.
    optimizer_->zero_grad();
    lap_start_ = std::chrono::steady_clock::now();
    while (progress_.batch < batches) {
        const StepData data = task_->next();
        lap(times_.data);
        Tensor output;
        float value = 0.0f;
        bool ok = true;
        bool stop_here = false;
        if (reduce_) {
            // A signal reaches the ranks at different steps: they stop together, after the step
            // at which the first of them saw it (asked before the step's all-reduce, which
            // carries it with the gradients).
            StepSums sums;
            sums.stop = stop && progress_.batch + 1 < batches && stop();
            ok = parallel_step(data, params, sums);
            stop_here = sums.stop;
            if (ok) {  // every rank's part of the step, the same on every rank
                progress_.loss_sum += sums.loss_sum;
                progress_.correct += sums.correct;
                progress_.seen += over_rows ? sums.seen : 1;
            }
        } else {
            output = model_->forward(data.inputs);
            const Tensor loss = task_->loss(output, data);
            // A non-finite loss is caught before it reaches the weights; a non-finite gradient with a
            // finite loss only where it is cheap to see (clipping computes the norm anyway) or asked
            // for (--on-nan skip); with --on-nan stop, the weights are checked before every save.
            value = loss.item();
            lap(times_.forward);
            ok = std::isfinite(value) || reject("loss", value);
            if (ok) {
                loss.backward();
                lap(times_.backward);
                if (config_.clip > 0) {
                    const double norm = clip_grad_norm(params, config_.clip);
                    ok = std::isfinite(norm) || reject("gradient norm", norm);
                } else if (skip_mode) {
                    ok = gradients_finite(params) || reject("gradient", NAN);
                }
            }
        }
        if (ok) {
            last_lr_ = optimizer_->lr();
            optimizer_->step_and_zero_grad();
            lap(times_.optimizer);
            if (sharded_) {
                reduce_->gather_parameters();
                lap(times_.allreduce);
            }
            if (!reduce_) {
                const int64_t weight = over_rows ? data.rows : 1;
                progress_.loss_sum += static_cast<double>(value) * static_cast<double>(weight);
                progress_.correct += std::max<int64_t>(task_->correct(output, data), 0);
                progress_.seen += weight;
            }
        } else {
            optimizer_->zero_grad();
            ++progress_.skipped;
        }
        scheduler_->step();  // a skipped step still moves the schedule, as the data moved on
        ++progress_.batch;
        if (replicas_.check_every > 0 && scheduler_->position() % replicas_.check_every == 0) check_replicas();
        if (on_batch) on_batch(progress_.batch, batches, progress_.seen ? progress_.mean_loss() : NAN);
        ++times_.steps;
        lap(times_.other);
        if (stop && progress_.batch < batches && (reduce_ ? stop_here : stop())) {
            progress_.seconds = elapsed();
            return progress_;
        }
    }
    EpochProgress done = progress_;
    done.seconds = elapsed();
    done.complete = true;
    progress_ = EpochProgress{};
    ++epochs_done_;
    if (done.seen == 0) {
        throw NonFinite(str("every batch of epoch ", epochs_done_, " had a non-finite loss or gradient (", done.skipped,
                            " skipped)"));
    }
    return done;
}

bool Trainer::parallel_step(const StepData& data, const std::vector<Tensor>& params, StepSums& sums) {
    // Each rank backpropagates its share of the global batch's mean loss, so that every rank's
    // gradients are parts of one gradient (also for synchronised BatchNorm, whose backward sums
    // them over the ranks) and the all-reduce adds them up. A rank without rows in this batch
    // (the last, partial one) still joins every collective: synchronised BatchNorm's through a
    // forward and backward of its empty slice, the gradient all-reduce with zeros. The step's
    // loss x weight, correct predictions, rows and stop flag ride in the same all-reduce.
    const bool skip_mode = config_.on_nan == "skip";
    const bool over_rows = task_->mean_over_rows();
    Tensor objective;
    float metrics[4] = {0.0f, 0.0f, static_cast<float>(data.rows), sums.stop ? 1.0f : 0.0f};
    if (data.rows > 0) {
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
        const Tensor output = model_->forward(data.inputs);
        const Tensor loss = task_->loss(output, data);
        if (dropout) generator.set_state(shared);
        const float value = loss.item();
        metrics[0] = value * static_cast<float>(over_rows ? static_cast<double>(data.rows) : data.share);
        metrics[1] = static_cast<float>(std::max<int64_t>(task_->correct(output, data), 0));
        lap(times_.forward);
        if (std::isfinite(value)) {
            objective = loss * static_cast<float>(data.share);
        } else if (skip_mode) {
            objective = output.sum() * NAN;  // NaN gradients on every rank after the sum: all skip the step
        } else {
            throw NonFinite(str("non-finite loss (", value, ") at ", where_in_run(), " on rank ", replicas_.rank));
        }
    } else if (config_.bn_sync == "sync" && config_.model.norm.batch_statistics()) {
        objective = model_->forward(data.inputs).sum();  // over no rows: 0, but through every BatchNorm
    }
    if (objective.defined()) objective.backward();
    lap(times_.backward);
    sharded_ ? reduce_->reduce_shard(1.0f, metrics) : reduce_->all_reduce(1.0f, metrics);
    lap(times_.allreduce);
    sums.loss_sum = metrics[0];
    sums.correct = static_cast<int64_t>(metrics[1]);
    sums.seen = static_cast<int64_t>(metrics[2]);
    sums.stop = metrics[3] > 0;
    // From here every rank holds the same gradients (all of them: clipping and skipping keep the
    // allreduce, not the sharded step), so they all make the same decisions.
    if (config_.clip > 0) {
        const double norm = clip_grad_norm(params, config_.clip);
        if (!std::isfinite(norm)) {
            if (!skip_mode) throw NonFinite(str("non-finite gradient norm (", norm, ") at ", where_in_run()));
            return false;
        }
    } else if (skip_mode) {
        return gradients_finite(params);
    }
    return true;
}

void Trainer::lap(double& phase) {
    const auto now = std::chrono::steady_clock::now();
    phase += std::chrono::duration<double>(now - lap_start_).count();
    lap_start_ = now;
}

void Trainer::average_running_stats() const {
    // --bn-sync local: each rank's BatchNorm statistics are its own; evaluation and checkpoints
    // use their mean over the ranks (the same on every rank afterwards).
    if (config_.bn_sync == "local" && config_.model.norm.batch_statistics()) cli::average_running_stats(*model_, replicas_);
}

void Trainer::check_replicas() const {
    const NamedTensors params = model_->named_parameters();
    Tensor hashes = empty({static_cast<int64_t>(params.size())}, kInt64);
    for (size_t i = 0; i < params.size(); ++i) hashes.data_ptr<int64_t>()[i] = content_hash(params[i].second);
    const Tensor all = dist::all_gather(hashes);
    const int64_t P = hashes.numel();
    for (int64_t i = 0; i < P; ++i) {
        for (int r = 1; r < replicas_.world; ++r) {
            NORMNET_CHECK(all.data_ptr<int64_t>()[r * P + i] == all.data_ptr<int64_t>()[i], "--check-replicas: after step ",
                          scheduler_->position(), ", rank ", r, "'s parameter ", params[static_cast<size_t>(i)].first,
                          " differs from rank 0's (the replicas are no longer identical)");
        }
    }
}

std::optional<EpochMetrics> Trainer::run_epoch(const BatchCallback& on_batch, const StopCheck& stop) {
    EpochMetrics m;
    // The lr of the epoch's first step, also when resuming from inside the epoch.
    const double first_lr = scheduler_->lr_at(scheduler_->position() - progress_.batch);
    const EpochProgress p = train_epoch(on_batch, stop);
    if (!p.complete) return std::nullopt;
    m.seconds = p.seconds;
    m.train_loss = p.mean_loss();
    m.train_acc = task_->mean_over_rows() && task_->has_accuracy() ? p.accuracy() : NAN;
    m.skipped = p.skipped;
    // A run counted in steps reports the lr of its last step, one in epochs of its first.
    m.lr = config_.counts_steps() ? last_lr_ : first_lr;
    const Evaluation e = evaluate();
    m.epoch = epochs_done_;
    m.step = step();
    m.test_loss = e.loss;
    m.test_acc = e.accuracy;
    m.test_rmse = e.rmse, m.test_mae = e.mae, m.test_r2 = e.r2;
    history_.push_back(m);
    return m;
}

Evaluation Trainer::evaluate() {
    average_running_stats();
    return task_->evaluate(*model_, replicas_);
}

void Trainer::save_checkpoint(const std::string& dir) const {
    // Every rank calls this: the running statistics are combined over the ranks (the epoch's
    // sums already are every rank's), then rank 0 writes (atomically, as one process would)
    // while the others wait for it.
    average_running_stats();
    if (sharded_) reduce_->gather_optimizer_state(*optimizer_);  // each rank stepped one shard of it
    if (!replicas_.leader()) {
        dist::barrier();
        return;
    }
    CheckpointContents c;
    c.model = model_->state_dict();
    const std::string bad = first_non_finite(c.model);
    if (!bad.empty()) throw NonFinite(str("the model's ", bad, " is not finite after ", position()));
    for (const auto& [name, t] : optimizer_->state_dict()) c.state.emplace_back("optimizer." + name, t);
    const bool steps = config_.counts_steps();
    const std::string at = std::to_string(steps ? step() : epochs_done_);
    const char* key = steps ? "normnet.step" : "normnet.epoch";
    c.state_metadata = {{key, at},
                        {"normnet.optimizer", optimizer_->name()},
                        {"normnet.rng_state", rng_state_text(default_generator())},
                        {"normnet.history", history_json(history_, steps)}};
    c.model_metadata = {{"format", "pt"},
                        {"normnet.architecture", config_.model.to_json()},
                        {"normnet.config", config_.to_json()},
                        {key, at},
                        {"normnet.version", NORMNET_VERSION}};
    if (!steps) c.state_metadata["normnet.scheduler_position"] = std::to_string(scheduler_->position());
    if (replicas_.parallel()) {  // what the run was trained on (a resume may use another world size)
        c.model_metadata["normnet.world_size"] = std::to_string(replicas_.world);
        c.model_metadata["normnet.bn_sync"] = config_.bn_sync;
    }
    if (steps || progress_.batch > 0) {  // stopped inside an epoch (a signal): where, and the sums so far
        c.state_metadata["normnet.progress"] = progress_json(progress_, steps);
        if (!steps) c.model_metadata["normnet.batch"] = std::to_string(progress_.batch);
    }
    task_->save(c);
    commit_checkpoint(dir, std::move(c));
    if (replicas_.parallel()) dist::barrier();
}

ResumePoint Trainer::resume(const LoadedCheckpoint& checkpoint) {
    const std::string& path = checkpoint.model.path;
    ResumePoint p = parse_resume_point(checkpoint);
    // Everything is read and checked before anything is changed.
    NORMNET_CHECK(p.spec == config_.model, "--resume ", path, ": the checkpoint's architecture ", p.spec.str(),
                  " differs from the requested ", config_.model.str());
    NORMNET_CHECK(p.optimizer == optimizer_->name(), "--resume ", path, ": the checkpoint was trained with ", p.optimizer,
                  ", not ", optimizer_->name());
    if (config_.counts_steps()) {
        // The epoch and the step inside it follow from the step (--eval-every may have changed).
        p.epoch = p.step / task_->steps_per_epoch();
        p.progress.batch = p.step % task_->steps_per_epoch();
    }
    NORMNET_CHECK(config_.counts_steps() || p.progress.batch < task_->steps_per_epoch(), "--resume ", path,
                  ": the checkpoint stopped after batch ", p.progress.batch, " of epoch ", p.epoch + 1, ", but the run now has ",
                  task_->steps_per_epoch(), " batches per epoch (--batch-size or --limit changed?)");
    task_->check_resume(checkpoint);
    NamedTensors optimizer_state;
    for (const auto& [name, t] : checkpoint.state.tensors) {
        if (name.rfind("optimizer.", 0) == 0) optimizer_state.emplace_back(name.substr(10), t);
    }
    try {
        load(*model_, checkpoint.model);
    } catch (const Error& e) {
        fail("--resume ", e.what());
    }
    try {
        optimizer_->load_state_dict(optimizer_state);
    } catch (const Error& e) {
        fail("--resume ", checkpoint.state.path, ": ", e.what());
    }
    task_->resume(checkpoint);
    scheduler_->set_position(p.step);
    default_generator().set_state(p.rng);
    epochs_done_ = p.epoch;
    progress_ = p.progress;  // every rank's sums, kept on every rank
    history_ = p.history;
    return p;
}

void Trainer::init_from(const SafetensorsData& weights) {
    try {
        load(*model_, weights);
    } catch (const Error& e) {
        fail("--init-from ", e.what());
    }
}

}  // namespace normnet::cli

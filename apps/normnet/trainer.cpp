// Trainer: the training loop, evaluation, and checkpoints that resume bit for bit.
#include "trainer.hpp"

#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "checkpoint_metadata.hpp"
#include "commands.hpp"
#include "norms.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

using Json = nlohmann::json;

DataLoaderOptions loader_options(const RunConfig& c, int64_t size, const Replicas& r) {
    // --batch-size is the global batch: each of the world's ranks takes batch / world of it.
    const int64_t per_rank = per_rank_batch(c.batch_size, r);
    const bool local_bn = uses_batch_statistics(c.model.norm) && c.bn_sync == "local";
    if (local_bn && r.world > 1 && per_rank < 2) {
        throw UsageError(str("--batch-size ", c.batch_size, " over ", r.world, " processes leaves ", per_rank,
                             " sample per rank: BatchNorm with --bn-sync local needs at least 2 (use a larger "
                             "--batch-size or --bn-sync sync)"));
    }
    // Batch statistics (BatchNorm) cannot train on a batch of one sample: drop such a last batch
    // (PyTorch would fail). With per-rank statistics, one sample on any rank (its slice of the
    // last batch) is such a batch.
    const int64_t last = size % c.batch_size;
    const bool lone_last = c.batch_size > 1 && (local_bn ? last % per_rank == 1 : last == 1);
    return DataLoaderOptions{.batch_size = c.batch_size,
                             .shuffle = true,
                             .drop_last = lone_last && uses_batch_statistics(c.model.norm),
                             .seed = c.seed,
                             .num_replicas = r.world,
                             .rank = r.rank};
}

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
// writes the same checkpoint bytes): [epoch, train_loss, train_acc, test_loss, test_acc, lr, skipped].
std::string history_json(const std::vector<EpochMetrics>& history) {
    Json rows = Json::array();
    for (const EpochMetrics& m : history) {
        rows.push_back({m.epoch, number(m.train_loss), number(m.train_acc), number(m.test_loss), number(m.test_acc),
                        number(m.lr), m.skipped});
    }
    return rows.dump();
}

std::vector<EpochMetrics> parse_history(const std::string& text, int64_t epochs) {
    const Json rows = Json::parse(text);
    NORMNET_CHECK(rows.is_array() && rows.size() == static_cast<size_t>(epochs), "expected a list of ", epochs, " epochs");
    std::vector<EpochMetrics> history;
    for (const Json& row : rows) {
        NORMNET_CHECK(row.is_array() && row.size() == 7, "malformed epoch row ", row.dump());
        EpochMetrics m;
        m.epoch = count_of(row[0], kMaxEpochs);
        NORMNET_CHECK(m.epoch == static_cast<int64_t>(history.size()) + 1, "epoch ", m.epoch, " out of order");
        m.train_loss = number_of(row[1]);
        m.train_acc = number_of(row[2]);
        m.test_loss = number_of(row[3]);
        m.test_acc = number_of(row[4]);
        m.lr = number_of(row[5]);
        m.skipped = count_of(row[6], std::numeric_limits<int64_t>::max());
        m.seconds = NAN;  // filled in from metrics.csv, if it has the row
        history.push_back(m);
    }
    return history;
}

std::string progress_json(const EpochProgress& p) {
    return Json{{"batch", p.batch},       {"correct", p.correct},   {"seen", p.seen},
                {"skipped", p.skipped},   {"loss_sum", number(p.loss_sum)}, {"seconds", number(p.seconds)}}
        .dump();
}

EpochProgress parse_progress(const std::string& text) {
    const Json j = Json::parse(text);
    NORMNET_CHECK(j.is_object(), "not a JSON object");
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    EpochProgress p;
    p.batch = count_of(j.at("batch"), kMax);
    p.seen = count_of(j.at("seen"), kMax);
    p.correct = count_of(j.at("correct"), p.seen);
    p.skipped = count_of(j.at("skipped"), p.batch);
    p.loss_sum = number_of(j.at("loss_sum"));
    p.seconds = number_of(j.at("seconds"));
    NORMNET_CHECK(p.batch >= 1 && std::isfinite(p.loss_sum), "malformed progress ", text);
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

ResumePoint parse_resume_point(const LoadedCheckpoint& c) {
    ResumePoint p;
    std::tie(p.spec, p.config) = read_checkpoint_config(c.model);
    const std::string& state = c.state.path;
    p.epoch = static_cast<int64_t>(parse_count(metadata_or_fail(c.model, "normnet.epoch"), kMaxEpochs, c.model.path));
    NORMNET_CHECK(parse_count(metadata_or_fail(c.state, "normnet.epoch"), kMaxEpochs, state) == static_cast<uint64_t>(p.epoch),
          state, ": training state is from another epoch than ", c.model.path);
    p.optimizer = metadata_or_fail(c.state, "normnet.optimizer");
    p.scheduler_position = static_cast<int64_t>(
        parse_count(metadata_or_fail(c.state, "normnet.scheduler_position"), uint64_t{1} << 62, state));
    p.rng = parse_rng_state(metadata_or_fail(c.state, "normnet.rng_state"), state);
    try {
        if (c.state.metadata.count("normnet.progress")) p.progress = parse_progress(c.state.metadata.at("normnet.progress"));
    } catch (const std::exception& e) {
        fail(state, ": malformed normnet.progress: ", e.what());
    }
    const auto batch = c.model.metadata.find("normnet.batch");
    NORMNET_CHECK((batch == c.model.metadata.end() ? 0 : parse_count(batch->second, uint64_t{1} << 62, c.model.path)) ==
              static_cast<uint64_t>(p.progress.batch),
          state, ": training state is from another batch than ", c.model.path);
    p.has_history = c.state.metadata.count("normnet.history") > 0;
    try {
        if (p.has_history) p.history = parse_history(c.state.metadata.at("normnet.history"), p.epoch);
    } catch (const std::exception& e) {
        fail(state, ": malformed normnet.history: ", e.what());
    }
    return p;
}

Trainer::Trainer(const RunConfig& config, std::shared_ptr<const Dataset> train, std::shared_ptr<const Dataset> test,
                 const Replicas& replicas)
    : config_(config),
      replicas_(replicas),
      train_(std::move(train)),
      test_(std::move(test)),
      loader_(train_, loader_options(config, train_->size(), replicas)) {
    config_.validate();
    if (loader_.num_batches() == 0) {
        throw UsageError(str("--limit ", config_.limit, ": ", train_->size(),
                                        " training image(s) give no batch of at least 2 for BatchNorm (use a larger --limit)"));
    }
    // The same seed gives the same initial Linear weights whatever the normalisation: the
    // norm layers draw no random numbers.
    manual_seed(config_.seed);
    try {
        model_ = build_model(config_.model);
        optimizer_ = make_optimizer(config_, model_->named_parameters());
    } catch (const std::bad_alloc&) {
        fail("not enough memory for the model ", config_.model.str(), " (", count_text(config_.model.parameters()),
             " parameters; with gradients and optimizer state about ", count_text(config_.model.parameters() * 16 / 1e9),
             " GB)");
    }
    if (replicas_.parallel()) {
        // Every rank starts from rank 0's weights (the same seed gives them anyway; this makes it so).
        dist::broadcast_module(*model_);
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
    scheduler_ = std::make_unique<LRScheduler>(*optimizer_, schedule_options(config_, loader_.num_batches()));
}

EpochProgress Trainer::train_epoch(const BatchCallback& on_batch, const StopCheck& stop) {
    model_->train();
    loader_.set_epoch(epochs_done_);
    const std::vector<Tensor> params = model_->parameters();
    const int64_t batches = loader_.num_batches();
    const auto start = std::chrono::steady_clock::now();
    const double seconds_before = progress_.seconds;
    const auto elapsed = [&] {
        return seconds_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    const bool skip_mode = config_.on_nan == "skip";
    const auto reject = [&](const char* what, double value) {
        if (skip_mode) return false;
        throw NonFinite(str("non-finite ", what, " (", value, ") at epoch ", epochs_done_ + 1, ", batch ",
                                       progress_.batch + 1, " of ", batches));
    };
    // Gradients are zeroed once here and then by step_and_zero_grad, in the optimizer's own
    // pass: each backward adds into buffers kept across steps.
    optimizer_->zero_grad();
    auto it = loader_.begin();
    for (int64_t i = 0; i < progress_.batch; ++i) ++it;  // resumed inside the epoch: pass the batches done
    lap_start_ = std::chrono::steady_clock::now();
    for (; it != loader_.end(); ++it) {
        const Batch& batch = *it;
        lap(times_.data);
        Tensor logits;
        float value = 0.0f;
        bool ok = true;
        bool stop_here = false;
        if (reduce_) {
            // A signal reaches the ranks at different batches: they stop together, after the
            // batch at which the first of them saw it (asked before the step's all-reduce, which
            // carries it with the gradients).
            StepSums sums;
            sums.stop = stop && progress_.batch + 1 < batches && stop();
            ok = parallel_step(batch, params, sums);
            stop_here = sums.stop;
            if (ok) {  // every rank's part of the step, the same on every rank
                progress_.loss_sum += sums.loss_sum;
                progress_.correct += sums.correct;
                progress_.seen += sums.seen;
            }
        } else {
            logits = model_->forward(batch.inputs.flatten(1));
            const Tensor loss = cross_entropy(logits, batch.labels, static_cast<float>(config_.label_smoothing));
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
            optimizer_->step_and_zero_grad();
            lap(times_.optimizer);
            if (sharded_) {
                reduce_->gather_parameters();
                lap(times_.allreduce);
            }
            if (!reduce_) {
                progress_.loss_sum += static_cast<double>(value) * static_cast<double>(batch.size());
                if (batch.size() > 0) progress_.correct += count_correct(logits, batch.labels);
                progress_.seen += batch.size();
            }
        } else {
            optimizer_->zero_grad();
            ++progress_.skipped;
        }
        scheduler_->step();  // a skipped batch still moves the schedule, as the data moved on
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
        throw NonFinite(str("every batch of epoch ", epochs_done_, " had a non-finite loss or gradient (",
                                       done.skipped, " skipped)"));
    }
    return done;
}

bool Trainer::parallel_step(const Batch& batch, const std::vector<Tensor>& params, StepSums& sums) {
    // Each rank backpropagates its share of the global batch's mean loss, so that every rank's
    // gradients are parts of one gradient (also for synchronised BatchNorm, whose backward sums
    // them over the ranks) and the all-reduce adds them up. A rank without rows in this batch
    // (the last, partial one) still joins every collective: synchronised BatchNorm's through a
    // forward and backward of its empty slice, the gradient all-reduce with zeros. The step's
    // loss x rows, correct predictions, rows and stop flag ride in the same all-reduce.
    const bool skip_mode = config_.on_nan == "skip";
    Tensor objective;
    float metrics[4] = {0.0f, 0.0f, static_cast<float>(batch.size()), sums.stop ? 1.0f : 0.0f};
    if (batch.size() > 0) {
        const Tensor logits = model_->forward(batch.inputs.flatten(1));
        const Tensor loss = cross_entropy(logits, batch.labels, static_cast<float>(config_.label_smoothing));
        const float value = loss.item();
        metrics[0] = value * static_cast<float>(batch.size());
        metrics[1] = static_cast<float>(count_correct(logits, batch.labels));
        const double share = loader_.share(progress_.batch);
        lap(times_.forward);
        if (std::isfinite(value)) {
            objective = loss * static_cast<float>(share);
        } else if (skip_mode) {
            objective = logits.sum() * NAN;  // NaN gradients on every rank after the sum: all skip the step
        } else {
            throw NonFinite(str("non-finite loss (", value, ") at epoch ", epochs_done_ + 1, ", batch ", progress_.batch + 1,
                                " of ", loader_.num_batches(), " on rank ", replicas_.rank));
        }
    } else if (config_.bn_sync == "sync" && uses_batch_statistics(config_.model.norm)) {
        objective = model_->forward(batch.inputs.flatten(1)).sum();  // over no rows: 0, but through every BatchNorm
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
            if (!skip_mode) throw NonFinite(str("non-finite gradient norm (", norm, ") at epoch ", epochs_done_ + 1,
                                                ", batch ", progress_.batch + 1, " of ", loader_.num_batches()));
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
    if (config_.bn_sync == "local" && uses_batch_statistics(config_.model.norm)) cli::average_running_stats(*model_, replicas_);
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
    // The lr of the epoch's first batch, also when resuming from inside the epoch.
    m.lr = scheduler_->lr_at(scheduler_->position() - progress_.batch);
    const EpochProgress p = train_epoch(on_batch, stop);
    if (!p.complete) return std::nullopt;
    m.seconds = p.seconds;
    m.train_loss = p.mean_loss();
    m.train_acc = p.accuracy();
    m.skipped = p.skipped;
    const Evaluation e = evaluate(*test_);
    m.epoch = epochs_done_;
    m.test_loss = e.loss;
    m.test_acc = e.accuracy;
    history_.push_back(m);
    return m;
}

Evaluation Trainer::evaluate(const Dataset& data, int64_t batch_size) {
    if (!replicas_.parallel()) return cli::evaluate(*model_, data, config_.model.classes, batch_size);
    // Sharded: each rank evaluates its slices, then the counts and sums are added up.
    average_running_stats();
    Evaluation e = cli::evaluate(*model_, data, config_.model.classes, batch_size, replicas_.world, replicas_.rank);
    const int64_t C = config_.model.classes;
    std::vector<double> sums{e.loss * static_cast<double>(e.count), static_cast<double>(e.correct),
                             static_cast<double>(e.count)};
    for (const auto& row : e.confusion) sums.insert(sums.end(), row.begin(), row.end());
    dist::all_reduce(sums.data(), static_cast<int64_t>(sums.size()));
    e.correct = static_cast<int64_t>(sums[1]);
    e.count = static_cast<int64_t>(sums[2]);
    for (int64_t t = 0; t < C; ++t) {
        for (int64_t p = 0; p < C; ++p) e.confusion[static_cast<size_t>(t)][static_cast<size_t>(p)] = static_cast<int64_t>(sums[static_cast<size_t>(3 + t * C + p)]);
    }
    e.loss = sums[0] / static_cast<double>(std::max<int64_t>(e.count, 1));
    e.accuracy = static_cast<double>(e.correct) / static_cast<double>(std::max<int64_t>(e.count, 1));
    return e;
}

Evaluation evaluate(Module& model, const Dataset& data, int64_t classes, int64_t batch_size, int64_t num_replicas,
                    int64_t rank) {
    NoGradGuard no_grad;
    const bool was_training = model.is_training();
    model.eval();
    auto shared = std::shared_ptr<const Dataset>(&data, [](const Dataset*) {});  // borrowed for this call
    DataLoader loader(shared, DataLoaderOptions{.batch_size = batch_size * num_replicas, .shuffle = false, .num_replicas = num_replicas, .rank = rank});
    Evaluation e;
    e.confusion.assign(static_cast<size_t>(classes), std::vector<int64_t>(static_cast<size_t>(classes), 0));
    double loss_sum = 0.0;
    for (const Batch& batch : loader) {
        if (batch.size() == 0) continue;  // this rank's slice of a last, short batch
        const Tensor logits = model.forward(batch.inputs.flatten(1));
        loss_sum += static_cast<double>(cross_entropy(logits, batch.labels).item()) * static_cast<double>(batch.size());
        const int64_t C = logits.size(1);
        const int64_t* labels = batch.labels.data_ptr<int64_t>();
        for (int64_t n = 0; n < batch.size(); ++n) {
            const float* row = logits.data() + n * C;
            const auto predicted = static_cast<size_t>(std::max_element(row, row + C) - row);
            const auto truth = static_cast<size_t>(labels[n]);
            ++e.confusion[truth][predicted];
            e.predictions.push_back(static_cast<int64_t>(predicted));
            e.correct += predicted == truth;
        }
        e.count += batch.size();
    }
    model.train(was_training);
    e.loss = loss_sum / static_cast<double>(std::max<int64_t>(e.count, 1));
    e.accuracy = static_cast<double>(e.correct) / static_cast<double>(std::max<int64_t>(e.count, 1));
    return e;
}

void Trainer::save_checkpoint(const std::string& dir) const {
    // Every rank calls this: the running statistics are combined over the ranks (the epoch's
    // sums already are every rank's), then rank 0 writes (atomically, as one process would)
    // while the others wait for it.
    average_running_stats();
    if (sharded_) reduce_->gather_optimizer_state(*optimizer_);  // each rank stepped one shard of it
    const EpochProgress& progress = progress_;
    if (!replicas_.leader()) {
        dist::barrier();
        return;
    }
    CheckpointContents c;
    c.model = model_->state_dict();
    const std::string bad = first_non_finite(c.model);
    if (!bad.empty()) {
        throw NonFinite(str("the model's ", bad, " is not finite after epoch ", epochs_done_,
                                       progress_.batch ? " batch " + std::to_string(progress_.batch) : std::string()));
    }
    const std::string epoch = std::to_string(epochs_done_);
    for (const auto& [name, t] : optimizer_->state_dict()) c.state.emplace_back("optimizer." + name, t);
    c.state_metadata = {{"normnet.epoch", epoch},
                        {"normnet.optimizer", optimizer_->name()},
                        {"normnet.scheduler_position", std::to_string(scheduler_->position())},
                        {"normnet.rng_state", rng_state_text(default_generator())},
                        {"normnet.history", history_json(history_)}};
    c.model_metadata = {{"format", "pt"},
                        {"normnet.architecture", config_.model.to_json()},
                        {"normnet.config", config_.to_json()},
                        {"normnet.epoch", epoch},
                        {"normnet.version", NORMNET_VERSION}};
    if (replicas_.parallel()) {  // what the run was trained on (a resume may use another world size)
        c.model_metadata["normnet.world_size"] = std::to_string(replicas_.world);
        c.model_metadata["normnet.bn_sync"] = config_.bn_sync;
    }
    if (progress.batch > 0) {  // stopped inside an epoch (a signal): where, and the sums so far
        c.state_metadata["normnet.progress"] = progress_json(progress);
        c.model_metadata["normnet.batch"] = std::to_string(progress.batch);
    }
    commit_checkpoint(dir, std::move(c));
    if (replicas_.parallel()) dist::barrier();
}

ResumePoint Trainer::resume(const LoadedCheckpoint& checkpoint) {
    const std::string& path = checkpoint.model.path;
    const ResumePoint p = parse_resume_point(checkpoint);
    NORMNET_CHECK(p.spec == config_.model, "--resume ", path, ": the checkpoint's architecture ", p.spec.str(),
          " differs from the requested ", config_.model.str());
    NORMNET_CHECK(p.optimizer == optimizer_->name(), "--resume ", path, ": the checkpoint was trained with ", p.optimizer, ", not ",
          optimizer_->name());
    NORMNET_CHECK(p.progress.batch < loader_.num_batches(), "--resume ", path, ": the checkpoint stopped after batch ",
          p.progress.batch, " of epoch ", p.epoch + 1, ", but the run now has ", loader_.num_batches(),
          " batches per epoch (--batch-size or --limit changed?)");
    NamedTensors optimizer_state;
    for (const auto& [name, t] : checkpoint.state.tensors) {
        if (name.rfind("optimizer.", 0) == 0) optimizer_state.emplace_back(name.substr(10), t);
    }
    // Everything is read and checked before anything is changed.
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
    scheduler_->set_position(p.scheduler_position);
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

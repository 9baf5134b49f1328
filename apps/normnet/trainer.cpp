// Trainer: the training loop, evaluation, and checkpoints that resume bit for bit.
#include "trainer.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "checkpoint_metadata.hpp"
#include "commands.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

using Json = nlohmann::json;

DataLoaderOptions loader_options(const RunConfig& c, int64_t size) {
    // BatchNorm cannot train on a batch of one sample: drop such a last batch (PyTorch would fail).
    const bool lone_last = c.batch_size > 1 && size % c.batch_size == 1;
    return DataLoaderOptions{
        .batch_size = c.batch_size, .shuffle = true, .drop_last = lone_last && c.model.norm == "batch", .seed = c.seed};
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
    NORMNET_CHECK(spec.linear_parameters() <= values, option, option.empty() ? "" : " ", weights.path, ": the model ", spec.str(),
          " needs ", count_text(spec.linear_parameters()), " parameters in its Linear layers alone, but the file holds only ",
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

Trainer::Trainer(const RunConfig& config, std::shared_ptr<const Dataset> train, std::shared_ptr<const Dataset> test)
    : config_(config), train_(std::move(train)), test_(std::move(test)), loader_(train_, loader_options(config, train_->size())) {
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
        fail("not enough memory for the model ", config_.model.str(), " (", count_text(config_.model.linear_parameters()),
             " parameters; with gradients and optimizer state about ", count_text(config_.model.linear_parameters() * 16 / 1e9),
             " GB)");
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
    for (; it != loader_.end(); ++it) {
        const Batch& batch = *it;
        const Tensor logits = model_->forward(batch.inputs);
        const Tensor loss = cross_entropy(logits, batch.labels, static_cast<float>(config_.label_smoothing));
        // A non-finite loss is caught before it reaches the weights; a non-finite gradient with a
        // finite loss only where it is cheap to see (clipping computes the norm anyway) or asked
        // for (--on-nan skip); with --on-nan stop, the weights are checked before every save.
        const float value = loss.item();
        bool ok = std::isfinite(value) || reject("loss", value);
        if (ok) {
            loss.backward();
            if (config_.clip > 0) {
                const double norm = clip_grad_norm(params, config_.clip);
                ok = std::isfinite(norm) || reject("gradient norm", norm);
            } else if (skip_mode) {
                ok = gradients_finite(params) || reject("gradient", NAN);
            }
        }
        if (ok) {
            optimizer_->step_and_zero_grad();
            progress_.loss_sum += static_cast<double>(value) * static_cast<double>(batch.size());
            progress_.correct += count_correct(logits, batch.labels);
            progress_.seen += batch.size();
        } else {
            optimizer_->zero_grad();
            ++progress_.skipped;
        }
        scheduler_->step();  // a skipped batch still moves the schedule, as the data moved on
        ++progress_.batch;
        if (on_batch) on_batch(progress_.batch, batches, progress_.seen ? progress_.mean_loss() : NAN);
        if (stop && progress_.batch < batches && stop()) {
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
    return cli::evaluate(*model_, data, config_.model.classes, batch_size);
}

Evaluation evaluate(Module& model, const Dataset& data, int64_t classes, int64_t batch_size) {
    NoGradGuard no_grad;
    const bool was_training = model.is_training();
    model.eval();
    auto shared = std::shared_ptr<const Dataset>(&data, [](const Dataset*) {});  // borrowed for this call
    DataLoader loader(shared, DataLoaderOptions{.batch_size = batch_size});
    Evaluation e;
    e.confusion.assign(static_cast<size_t>(classes), std::vector<int64_t>(static_cast<size_t>(classes), 0));
    double loss_sum = 0.0;
    for (const Batch& batch : loader) {
        const Tensor logits = model.forward(batch.inputs);
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
    if (progress_.batch > 0) {  // stopped inside an epoch (a signal): where, and the sums so far
        c.state_metadata["normnet.progress"] = progress_json(progress_);
        c.model_metadata["normnet.batch"] = std::to_string(progress_.batch);
    }
    commit_checkpoint(dir, std::move(c));
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
    progress_ = p.progress;
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

// Trainer: the training loop, evaluation, and checkpoints that resume bit for bit.
#include "trainer.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

DataLoaderOptions loader_options(const RunConfig& c, int64_t size) {
    // BatchNorm cannot train on a batch of one sample: drop such a last batch (PyTorch would fail).
    const bool lone_last = c.batch_size > 1 && size % c.batch_size == 1;
    return DataLoaderOptions{
        .batch_size = c.batch_size, .shuffle = true, .drop_last = lone_last && c.model.norm == "batch", .seed = c.seed};
}

std::string rng_state_text() {
    std::string s;
    for (uint64_t w : default_generator().state()) {
        if (!s.empty()) s.push_back(' ');
        s.append(std::to_string(w));
    }
    return s;
}

void set_rng_state_text(const std::string& text, const std::string& where) {
    std::array<uint64_t, 4> state{};
    size_t pos = 0;
    try {
        for (auto& w : state) {
            size_t used = 0;
            w = std::stoull(text.substr(pos), &used);
            pos += used;
        }
    } catch (const std::exception&) {
        fail(where, ": malformed RNG state '", text, "'");
    }
    default_generator().set_state(state);
}

std::string metadata_or_fail(const SafetensorsData& data, const std::string& key) {
    const auto it = data.metadata.find(key);
    check(it != data.metadata.end(), data.path, ": not a normnet checkpoint (no '", key, "' in its metadata)");
    return it->second;
}

int64_t parse_int(const std::string& text, const std::string& where) {
    try {
        size_t used = 0;
        const long long v = std::stoll(text, &used);
        if (used == text.size()) return v;
    } catch (const std::exception&) {
    }
    fail(where, ": malformed number '", text, "'");
}

}  // namespace

std::string training_state_path(const std::string& model_path) {
    return (std::filesystem::path(model_path).parent_path() / "training_state.safetensors").string();
}

std::pair<ModelSpec, RunConfig> read_checkpoint_config(const SafetensorsData& checkpoint) {
    ModelSpec spec = ModelSpec::from_json(metadata_or_fail(checkpoint, "normnet.architecture"), checkpoint.path);
    RunConfig config = RunConfig::from_json(metadata_or_fail(checkpoint, "normnet.config"), checkpoint.path);
    config.model = spec;
    return {spec, config};
}

Trainer::Trainer(const RunConfig& config, std::shared_ptr<const Dataset> train, std::shared_ptr<const Dataset> test)
    : config_(config), train_(std::move(train)), test_(std::move(test)), loader_(train_, loader_options(config, train_->size())) {
    config_.validate();
    // The same seed gives the same initial Linear weights whatever the normalisation: the
    // norm layers draw no random numbers.
    manual_seed(config_.seed);
    model_ = build_model(config_.model);
    optimizer_ = make_optimizer(config_, model_->named_parameters());
    scheduler_ = std::make_unique<LRScheduler>(*optimizer_, schedule_options(config_, loader_.num_batches()));
}

std::pair<double, double> Trainer::train_epoch(const BatchCallback& on_batch) {
    model_->train();
    loader_.set_epoch(epochs_done_);
    const std::vector<Tensor> params = model_->parameters();
    double loss_sum = 0.0;
    int64_t correct = 0, seen = 0, index = 0;
    const int64_t batches = loader_.num_batches();
    // Gradients are zeroed once here and then by step_and_zero_grad, in the optimizer's own
    // pass: each backward adds into buffers kept across steps.
    optimizer_->zero_grad();
    for (const Batch& batch : loader_) {
        const Tensor logits = model_->forward(batch.inputs);
        const Tensor loss = cross_entropy(logits, batch.labels, static_cast<float>(config_.label_smoothing));
        loss.backward();
        if (config_.clip > 0) clip_grad_norm(params, config_.clip);
        optimizer_->step_and_zero_grad();
        scheduler_->step();
        loss_sum += static_cast<double>(loss.item()) * static_cast<double>(batch.size());
        correct += count_correct(logits, batch.labels);
        seen += batch.size();
        if (on_batch) on_batch(++index, batches, loss_sum / static_cast<double>(seen));
    }
    ++epochs_done_;
    return {loss_sum / static_cast<double>(seen), static_cast<double>(correct) / static_cast<double>(seen)};
}

EpochMetrics Trainer::run_epoch(const BatchCallback& on_batch) {
    EpochMetrics m;
    m.lr = optimizer_->lr();
    const auto start = std::chrono::steady_clock::now();
    std::tie(m.train_loss, m.train_acc) = train_epoch(on_batch);
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Evaluation e = evaluate(*test_);
    m.epoch = epochs_done_;
    m.test_loss = e.loss;
    m.test_acc = e.accuracy;
    return m;
}

Evaluation Trainer::evaluate(const Dataset& data, int64_t batch_size) {
    NoGradGuard no_grad;
    const bool was_training = model_->is_training();
    model_->eval();
    auto shared = std::shared_ptr<const Dataset>(&data, [](const Dataset*) {});  // borrowed for this call
    DataLoader loader(shared, DataLoaderOptions{.batch_size = batch_size});
    Evaluation e;
    const auto classes = static_cast<size_t>(config_.model.classes);
    e.confusion.assign(classes, std::vector<int64_t>(classes, 0));
    double loss_sum = 0.0;
    for (const Batch& batch : loader) {
        const Tensor logits = model_->forward(batch.inputs);
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
    model_->train(was_training);
    e.loss = loss_sum / static_cast<double>(std::max<int64_t>(e.count, 1));
    e.accuracy = static_cast<double>(e.correct) / static_cast<double>(std::max<int64_t>(e.count, 1));
    return e;
}

void Trainer::save_checkpoint(const std::string& dir) const {
    const std::string epoch = std::to_string(epochs_done_);
    NamedTensors state;
    for (const auto& [name, t] : optimizer_->state_dict()) state.emplace_back("optimizer." + name, t);
    // The training state goes first: a model file always has its state beside it.
    save_safetensors((std::filesystem::path(dir) / "training_state.safetensors").string(), state,
                     {{"normnet.epoch", epoch},
                      {"normnet.optimizer", optimizer_->name()},
                      {"normnet.scheduler_position", std::to_string(scheduler_->position())},
                      {"normnet.rng_state", rng_state_text()}});
    save(*model_, (std::filesystem::path(dir) / "model.safetensors").string(),
         {{"format", "pt"},
          {"normnet.architecture", config_.model.to_json()},
          {"normnet.config", config_.to_json()},
          {"normnet.epoch", epoch},
          {"normnet.version", NORMNET_VERSION}});
}

void Trainer::resume(const std::string& model_path) {
    const SafetensorsData checkpoint = load_safetensors(model_path);
    const auto [spec, saved] = read_checkpoint_config(checkpoint);
    check(spec == config_.model, "--resume ", model_path, ": the checkpoint's architecture ", spec.str(),
          " differs from the requested ", config_.model.str());
    const int64_t epoch = parse_int(metadata_or_fail(checkpoint, "normnet.epoch"), model_path);
    const std::string state_path = training_state_path(model_path);
    check(std::filesystem::exists(state_path), "--resume ", model_path, ": its training state ", state_path,
          " is missing");
    const SafetensorsData state = load_safetensors(state_path);
    check(parse_int(metadata_or_fail(state, "normnet.epoch"), state_path) == epoch, state_path,
          ": training state is from another epoch than ", model_path);
    check(metadata_or_fail(state, "normnet.optimizer") == optimizer_->name(), "--resume ", model_path,
          ": the checkpoint was trained with ", metadata_or_fail(state, "normnet.optimizer"), ", not ",
          optimizer_->name());
    NamedTensors optimizer_state;
    for (const auto& [name, t] : state.tensors) {
        if (name.rfind("optimizer.", 0) == 0) optimizer_state.emplace_back(name.substr(10), t);
    }
    // Everything is read and checked before anything is changed.
    try {
        model_->load_state_dict(checkpoint.tensors);
    } catch (const Error& e) {
        fail("--resume ", model_path, ": ", e.what());
    }
    try {
        optimizer_->load_state_dict(optimizer_state);
    } catch (const Error& e) {
        fail("--resume ", state_path, ": ", e.what());
    }
    scheduler_->set_position(parse_int(metadata_or_fail(state, "normnet.scheduler_position"), state_path));
    set_rng_state_text(metadata_or_fail(state, "normnet.rng_state"), state_path);
    epochs_done_ = epoch;
}

}  // namespace normnet::cli

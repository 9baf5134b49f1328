// The tasks: image classification (an IDX dataset through a DataLoader, cross-entropy, accuracy
// and a confusion matrix) and the character language model (random windows of a corpus,
// cross-entropy per character, validation over the held-out stream in nats and bits).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numbers>

#include "checkpoint_metadata.hpp"
#include "commands.hpp"
#include "models.hpp"
#include "normnet/normnet.hpp"
#include "task.hpp"

namespace normnet::cli {
namespace {

using Json = nlohmann::json;

// ---- image classification ---------------------------------------------------------------------

DataLoaderOptions loader_options(const RunConfig& c, int64_t size, const Replicas& r) {
    // --batch-size is the global batch: each of the world's ranks takes batch / world of it.
    const int64_t per_rank = per_rank_batch(c.batch_size, r);
    const bool batch_stats = c.model.norm.batch_statistics();
    const bool local_bn = batch_stats && c.bn_sync == "local";
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
                             .drop_last = lone_last && batch_stats,
                             .seed = c.seed,
                             .num_replicas = r.world,
                             .rank = r.rank};
}

class ImageClassification final : public Task {
public:
    ImageClassification(const RunConfig& c, const TaskData& d, const Replicas& r)
        : config_(c), train_(d.train), test_(d.test), classes_(d.classes), text_(d.images_text),
          loader_(train_, loader_options(c, train_->size(), r)), it_(loader_.end()) {
        if (loader_.num_batches() == 0) {
            throw UsageError(str("--limit ", c.limit, ": ", train_->size(),
                                 " training image(s) give no batch of at least 2 for BatchNorm (use a larger --limit)"));
        }
    }
    // An image folder sizes the model: its classes, and its images' channels and size.
    void complete(ModelSpec& spec) const override {
        if (classes_.empty()) return;  // IDX: MNIST's layout, 10 classes
        const ImageSet& im = train_->images;
        spec.classes = static_cast<int64_t>(classes_.size());
        spec.inputs = im.channels * im.rows * im.cols;
        if (spec.sizes.count("image")) spec.sizes["image"] = {im.channels, im.rows, im.cols};
    }
    void save(CheckpointContents& c) const override {
        if (classes_.empty()) return;
        const ImageSet& im = train_->images;
        c.model_metadata[kImagesMetadata] =
            Json{{"classes", classes_}, {"channels", im.channels}, {"height", im.rows}, {"width", im.cols}}.dump();
    }
    void check_resume(const LoadedCheckpoint& c) const override {
        if (classes_.empty()) return;
        const std::optional<ImagesMetadata> saved = images_metadata_of(c.model);
        const ImageSet& im = train_->images;
        NORMNET_CHECK(saved && saved->classes == classes_ && saved->channels == im.channels && saved->height == im.rows &&
                          saved->width == im.cols,
                      "--resume ", c.model.path, ": ", config_.data_dir, " gives other classes or another image shape than "
                      "the checkpoint's; resume on the folder it was trained on");
    }
    int64_t steps_per_epoch() const override { return loader_.num_batches(); }
    int64_t total_steps() const override { return config_.epochs * loader_.num_batches(); }
    void start_epoch(int64_t epoch, int64_t first) override {
        loader_.set_epoch(epoch);
        it_ = loader_.begin();
        for (int64_t i = 0; i < first; ++i) ++it_;  // resumed inside the epoch: pass the batches done
        index_ = first;
        fresh_ = true;
    }
    StepData next() override {
        if (!fresh_) ++it_, ++index_;
        fresh_ = false;
        // Images come as [B, C, H, W]; the models take rows (the CNN and ViT unflatten them).
        return {it_->inputs.flatten(1), it_->labels, it_->size(), loader_.share(index_)};
    }
    Tensor loss(const Tensor& logits, const StepData& d) const override {
        return cross_entropy(logits, d.targets, static_cast<float>(config_.label_smoothing));
    }
    int64_t correct(const Tensor& logits, const StepData& d) const override {
        return d.rows > 0 ? count_correct(logits, d.targets) : 0;
    }
    bool mean_over_rows() const override { return true; }
    Evaluation evaluate(Module& model, const Replicas& r) override {
        Evaluation e = cli::evaluate(model, test_, config_.model.classes, 1000, r.world, r.rank);
        if (!r.parallel()) return e;
        // Sharded: each rank evaluated its slices; the counts and sums are added up.
        const auto C = static_cast<size_t>(config_.model.classes);
        std::vector<double> sums{e.loss * static_cast<double>(e.count), static_cast<double>(e.correct),
                                 static_cast<double>(e.count)};
        for (const auto& row : e.confusion) sums.insert(sums.end(), row.begin(), row.end());
        dist::all_reduce(sums.data(), static_cast<int64_t>(sums.size()));
        e.correct = static_cast<int64_t>(sums[1]);
        e.count = static_cast<int64_t>(sums[2]);
        for (size_t t = 0; t < C; ++t) {
            for (size_t p = 0; p < C; ++p) e.confusion[t][p] = static_cast<int64_t>(sums[3 + t * C + p]);
        }
        e.loss = sums[0] / static_cast<double>(std::max<int64_t>(e.count, 1));
        e.accuracy = static_cast<double>(e.correct) / static_cast<double>(std::max<int64_t>(e.count, 1));
        return e;
    }
    std::string data_text() const override {
        if (!text_.empty()) return text_;
        return str(config_.dataset, " (", train_->size(), " train / ", test_ ? test_->size() : 0, " test images)");
    }
    std::string rows_name() const override { return "images"; }
    int64_t samples_per_step() const override { return config_.batch_size; }

private:
    RunConfig config_;
    std::shared_ptr<const Dataset> train_, test_;
    std::vector<std::string> classes_;  // an image folder's
    std::string text_;
    DataLoader loader_;
    DataLoader::Iterator it_;
    int64_t index_ = 0;
    bool fresh_ = false;  // it_ holds the next batch already (the first of the epoch)
};

// ---- tables -----------------------------------------------------------------------------------


Tensor table_loss(const data::TableSchema& s, const std::string& loss, const Tensor& out, const Tensor& targets,
                  float label_smoothing = 0) {
    if (s.task == data::TableTask::classification) return cross_entropy(out, targets, label_smoothing);
    return loss == "huber" ? huber_loss(out, targets) : mse_loss(out, targets);
}

}  // namespace

// Regression targets are learned standardised by the training targets' mean and std, so that the
// default recipe suits any units; predictions are mapped back before they are measured.
Tensor standardised(const data::TableSchema& s, const Tensor& y) {
    return (y - static_cast<float>(s.target_mean)) * static_cast<float>(1.0 / s.target_std);
}

Evaluation evaluate_table(Module& model, const data::TableSchema& schema, const data::EncodedTable& rows,
                          const std::string& loss, const Replicas& r) {
    NoGradGuard no_grad;
    const bool was_training = model.is_training();
    model.eval();
    const bool regression = schema.task == data::TableTask::regression;
    const int64_t n = rows.inputs.size(0), first = n * r.rank / r.world, last = n * (r.rank + 1) / r.world;
    const int64_t C = schema.num_outputs();
    // classification: loss x rows, correct, then the confusion matrix; regression: loss x rows,
    // squared and absolute errors, the sum and sum of squares of the targets.
    std::vector<double> sums(regression ? 5 : 2 + static_cast<size_t>(C * C), 0.0);
    Evaluation e;
    for (int64_t b = first; b < last; b += 1000) {
        const int64_t count = std::min<int64_t>(1000, last - b);
        const Tensor out = model.forward(rows.inputs.narrow(0, b, count)).contiguous();
        if (regression) {
            const Tensor y = rows.targets.narrow(0, b, count).contiguous();
            sums[0] += static_cast<double>(table_loss(schema, loss, out, standardised(schema, y)).item()) * count;
            for (int64_t i = 0; i < count; ++i) {
                const double t = y.data()[i], err = out.data()[i] * schema.target_std + schema.target_mean - t;
                sums[1] += err * err, sums[2] += std::fabs(err), sums[3] += t, sums[4] += t * t;
            }
            continue;
        }
        const Tensor labels = rows.labels.narrow(0, b, count).contiguous();
        sums[0] += static_cast<double>(cross_entropy(out, labels).item()) * count;
        for (int64_t i = 0; i < count; ++i) {
            const float* row = out.data() + i * C;
            const int64_t predicted = std::max_element(row, row + C) - row, truth = labels.data_ptr<int64_t>()[i];
            sums[1] += predicted == truth;
            sums[2 + static_cast<size_t>(truth * C + predicted)] += 1;
            e.predictions.push_back(predicted);
        }
    }
    model.train(was_training);
    if (r.parallel()) dist::all_reduce(sums.data(), static_cast<int64_t>(sums.size()));
    e.count = n;
    const double count = static_cast<double>(std::max<int64_t>(n, 1));
    e.loss = sums[0] / count;
    if (regression) {
        const double sst = sums[4] - sums[3] * sums[3] / count;
        e.rmse = std::sqrt(sums[1] / count);
        e.mae = sums[2] / count;
        e.r2 = sst > 0 ? 1.0 - sums[1] / sst : NAN;
        return e;
    }
    e.correct = static_cast<int64_t>(sums[1]);
    e.accuracy = sums[1] / count;
    e.confusion.assign(static_cast<size_t>(C), std::vector<int64_t>(static_cast<size_t>(C), 0));
    for (size_t t = 0; t < static_cast<size_t>(C); ++t)
        for (size_t p = 0; p < static_cast<size_t>(C); ++p) e.confusion[t][p] = static_cast<int64_t>(sums[2 + t * C + p]);
    return e;
}

Tensor predict_table(Module& model, const data::TableSchema& schema, const Tensor& inputs) {
    NoGradGuard no_grad;
    model.eval();
    const Tensor out = model.forward(inputs);
    if (schema.task == data::TableTask::classification) return softmax(out, 1).contiguous();
    return (out * static_cast<float>(schema.target_std) + static_cast<float>(schema.target_mean)).contiguous();
}

data::TableSchema table_schema_of(const SafetensorsData& file) {
    return data::TableSchema::from_json(metadata_or_fail(file, kTableMetadata), file.path);
}

namespace {

class TablePrediction final : public Task {
public:
    TablePrediction(const RunConfig& c, std::shared_ptr<const TableData> d, const Replicas& r)
        : config_(c), data_(std::move(d)), replicas_(r), regression_(data_->schema.task == data::TableTask::regression),
          loader_(data_->train.inputs, regression_ ? standardised(data_->schema, data_->train.targets) : data_->train.labels,
                  loader_options(c, data_->train.inputs.size(0), r)),
          it_(loader_.end()) {
        if (regression_ && c.label_smoothing > 0)
            throw UsageError("--label-smoothing: the target of " + c.data_dir + " is a regression target (no classes)");
        if (loader_.num_batches() == 0) throw UsageError(str(c.data_dir, ": too few training rows for a batch"));
    }
    void complete(ModelSpec& spec) const override {
        spec.inputs = data_->schema.num_inputs();
        spec.classes = data_->schema.num_outputs();
    }
    int64_t steps_per_epoch() const override { return loader_.num_batches(); }
    int64_t total_steps() const override { return config_.epochs * loader_.num_batches(); }
    void start_epoch(int64_t epoch, int64_t first) override {
        loader_.set_epoch(epoch);
        it_ = loader_.begin();
        for (int64_t i = 0; i < first; ++i) ++it_;
        index_ = first;
        fresh_ = true;
    }
    StepData next() override {
        if (!fresh_) ++it_, ++index_;
        fresh_ = false;
        return {it_->inputs, regression_ ? it_->targets : it_->labels, it_->size(), loader_.share(index_)};
    }
    Tensor loss(const Tensor& out, const StepData& d) const override {
        return table_loss(data_->schema, config_.loss, out, d.targets, static_cast<float>(config_.label_smoothing));
    }
    int64_t correct(const Tensor& out, const StepData& d) const override {
        return regression_ ? -1 : d.rows > 0 ? count_correct(out, d.targets) : 0;
    }
    bool has_accuracy() const override { return !regression_; }
    bool mean_over_rows() const override { return true; }
    // Over this rank's share of the held-out rows; the sums are added up over the ranks.
    Evaluation evaluate(Module& model, const Replicas& r) override {
        return evaluate_table(model, data_->schema, data_->test, config_.loss, r);
    }
    void save(CheckpointContents& c) const override { c.model_metadata[kTableMetadata] = data_->schema.to_json(); }
    void check_resume(const LoadedCheckpoint& c) const override {
        NORMNET_CHECK(table_schema_of(c.model).to_json() == data_->schema.to_json(), "--resume ",
                      c.model.path, ": ", config_.data_dir, " gives other columns, classes or statistics than the "
                      "checkpoint's table; resume on the file it was trained on");
    }
    std::string data_text() const override { return data_->text; }
    std::string rows_name() const override { return "rows"; }
    int64_t samples_per_step() const override { return config_.batch_size; }

private:
    RunConfig config_;
    std::shared_ptr<const TableData> data_;
    Replicas replicas_;
    bool regression_;
    DataLoader loader_;
    DataLoader::Iterator it_;
    int64_t index_ = 0;
    bool fresh_ = false;
};

}  // namespace

std::shared_ptr<const TableData> load_table(const RunConfig& c) {
    // Memory: the parsed table and one float32 matrix of it at most, besides the final splits'
    // copies of that matrix: each table is released as soon as it is encoded.
    auto d = std::make_shared<TableData>();
    const auto csv = data::CsvOptions().delimiter(c.delimiter.at(0));
    data::Table rows = data::read_csv(c.data_dir, csv);
    std::optional<data::TableTask> task;
    if (c.task != "auto") task = data::parse_table_task(c.task);
    int64_t train_rows = rows.rows, test_rows = 0;
    if (!c.test.empty()) {
        d->schema = data::fit_table_schema(rows, c.target, task);
        d->train = data::encode_table(d->schema, rows);
        rows = {};
        const data::Table test = data::read_csv(c.test, csv);
        test_rows = test.rows;
        d->test = data::encode_table(d->schema, test);
    } else {
        // Held out before anything is fitted, so that no statistic of the held-out rows leaks in;
        // stratified by class for classification (the schema of all rows only says what the classes
        // are: its labels, encoded without the features).
        const data::TableSchema all = data::fit_table_schema(rows, c.target, task);
        std::vector<int64_t> strata;
        if (all.task == data::TableTask::classification) {
            data::TableSchema target_only = all;
            target_only.features.clear();
            const Tensor labels = data::encode_table(target_only, rows).labels;
            strata.assign(labels.data_ptr<int64_t>(), labels.data_ptr<int64_t>() + labels.numel());
        }
        const auto [kept, held] = data::holdout_split(rows.rows, c.val_fraction, c.seed, strata);
        d->schema = data::fit_table_schema(data::take_rows(rows, kept), c.target, all.task);
        d->schema.task_reason = all.task_reason;
        const data::EncodedTable encoded = data::encode_table(d->schema, rows);
        rows = {};
        const auto select = [&](const std::vector<int64_t>& indices) {
            const Tensor index = from_vector(indices, {static_cast<int64_t>(indices.size())});
            const auto pick = [&](const Tensor& x) { return x.defined() ? x.index_select(0, index).contiguous() : x; };
            return data::EncodedTable{pick(encoded.inputs), pick(encoded.labels), pick(encoded.targets)};
        };
        d->train = select(kept);
        d->test = select(held);
        train_rows = static_cast<int64_t>(kept.size());
        test_rows = static_cast<int64_t>(held.size());
    }
    NORMNET_CHECK(d->test.labels.defined() || d->test.targets.defined(), "--test ", c.test, ": no column \"",
                  d->schema.target, "\" (the target)");
    const data::TableSchema& t = d->schema;
    const std::string what = (t.task == data::TableTask::classification
                                  ? str("classification of ", t.target, " into ", t.classes.size(), " classes")
                                  : str("regression of ", t.target)) +
                             (c.task == "auto" ? " (" + t.task_reason + ")" : "");
    d->text = c.test.empty() ? str(c.data_dir, " (", train_rows, " training / ", test_rows, " held-out rows, ", what, ")")
                             : str(c.data_dir, " (", train_rows, " rows) and ", c.test, " (", test_rows, " rows), ", what);
    return d;
}

namespace {

// ---- the character language model ------------------------------------------------------------

// The window generator's seed: another sequence than the default generator's (the weights'),
// although both come from --seed.
uint64_t window_seed(uint64_t seed) { return seed ^ 0x9e3779b97f4a7c15ull; }

// `stream`, after checking it can give a window of `context` characters and its targets.
const TokenStream& long_enough(const TokenStream& stream, const char* what, int64_t context, const TextCorpus& corpus) {
    NORMNET_CHECK(stream.size() > context, "--text ", corpus.name, ": the ", what, " text (", stream.size(), " characters",
                  corpus.records > 1 ? ", from a corpus of " + std::to_string(corpus.records) + " records" : std::string(),
                  ") is not longer than the context (", context, "): use a longer corpus or a shorter --context");
    return stream;
}

class LanguageModel final : public Task {
public:
    LanguageModel(const RunConfig& c, std::shared_ptr<const TextCorpus> corpus, const Replicas& r)
        : config_(c), corpus_(std::move(corpus)), replicas_(r),
          context_(c.model.scalar("context")),
          val_(long_enough(corpus_->val, "held-out", context_, *corpus_)),
          batches_(long_enough(corpus_->train, "training", context_, *corpus_), c.batch_size, context_, window_seed(c.seed)) {
        const int64_t per_rank = per_rank_batch(c.batch_size, r);
        if (r.parallel() && c.model.norm.batch_statistics() && c.bn_sync == "local" && per_rank * context_ < 2) {
            throw UsageError(str("--batch-size ", c.batch_size, " over ", r.world, " processes leaves one position per "
                                 "rank: BatchNorm with --bn-sync local needs at least 2 (use a larger --batch-size or --bn-sync sync)"));
        }
        // The run's length: --steps, or --epochs passes of batch x context characters each (rounded up).
        total_ = c.steps;
        if (total_ == 0 && c.epochs > 0) {  // neither: RunConfig::validate says so (the Trainer calls it)
            const int64_t per_step = c.batch_size * context_;
            const int64_t per_epoch = std::max<int64_t>(1, (corpus_->train.size() + per_step - 1) / per_step);
            NORMNET_CHECK(per_epoch <= kMaxSteps / c.epochs, "--epochs ", c.epochs, ": ", c.epochs, " x ", per_epoch,
                          " steps per epoch is more than the ", kMaxSteps, " steps a run may have");
            total_ = c.epochs * per_epoch;
        }
    }
    void complete(ModelSpec& spec) const override { spec.inputs = spec.classes = corpus_->vocab_size(); }
    int64_t steps_per_epoch() const override { return config_.eval_every; }
    int64_t total_steps() const override { return total_; }
    void start_epoch(int64_t, int64_t) override {}  // the windows are drawn at random, from a generator the checkpoint keeps
    StepData next() override {
        // Every rank draws the same global batch and takes its slice: windows [r b, (r + 1) b).
        const auto [x, y] = batches_.next();
        const int64_t b = x.size(0) / replicas_.world;
        if (!replicas_.parallel()) return {x, y, b, 1.0};
        return {x.narrow(0, replicas_.rank * b, b), y.narrow(0, replicas_.rank * b, b), b, 1.0 / replicas_.world};
    }
    Tensor loss(const Tensor& logits, const StepData& d) const override {  // logits [B, T, V]
        return cross_entropy(logits.reshape({-1, logits.size(-1)}), d.targets.reshape({-1}));
    }
    int64_t correct(const Tensor&, const StepData&) const override { return -1; }
    bool mean_over_rows() const override { return false; }
    // Mean loss in nats per character over the held-out stream's consecutive windows of the
    // context's length; in a group, rank r takes windows [r W / world, (r + 1) W / world).
    Evaluation evaluate(Module& model, const Replicas& r) override {
        NoGradGuard no_grad;
        const bool was_training = model.is_training();
        model.eval();
        const int64_t T = context_, windows = (val_.size() - 1) / T;
        const int64_t first = windows * r.rank / r.world, last = windows * (r.rank + 1) / r.world;
        double loss_sum = 0;  // of per-character losses
        for (int64_t w0 = first; w0 < last; w0 += config_.batch_size) {
            const int64_t n = std::min(config_.batch_size, last - w0);
            std::vector<int64_t> x(static_cast<size_t>(n * T)), y(static_cast<size_t>(n * T));
            val_.copy_to(w0 * T, n * T, x.data());
            val_.copy_to(w0 * T + 1, n * T, y.data());
            const Tensor logits = model.forward(from_vector(x, {n, T}));
            const Tensor loss = cross_entropy(logits.reshape({-1, logits.size(-1)}), from_vector(y, {n * T}));
            loss_sum += static_cast<double>(loss.item()) * static_cast<double>(n * T);
        }
        model.train(was_training);
        dist::all_reduce(&loss_sum, 1);  // every rank's share (nothing with one process)
        Evaluation e;
        e.count = windows * T;
        e.loss = loss_sum / static_cast<double>(e.count);
        return e;
    }
    void save(CheckpointContents& c) const override {
        c.model_metadata["normnet.vocab"] = vocab_json(corpus_->vocab);
        c.state_metadata["normnet.window_rng_state"] = rng_state_text(const_cast<TextBatches&>(batches_).generator());
    }
    void check_resume(const LoadedCheckpoint& c) const override {
        const std::string& path = c.model.path;
        const std::vector<char32_t> saved = parse_vocab(metadata_or_fail(c.model, "normnet.vocab"), path);
        NORMNET_CHECK(saved == corpus_->vocab, "--resume ", path, ": the corpus ", config_.text,
                      " has another vocabulary than the checkpoint's (", saved.size(),
                      " characters); resume on the corpus it was trained on");
        parse_rng_state(metadata_or_fail(c.state, "normnet.window_rng_state"), c.state.path);
    }
    void resume(const LoadedCheckpoint& c) override {
        batches_.generator().set_state(parse_rng_state(c.state.metadata.at("normnet.window_rng_state"), c.state.path));
    }
    std::string data_text() const override {
        return str(config_.text, " (", corpus_->records, " records: ", corpus_->train.size(), " training / ", corpus_->val.size(),
                   " held-out characters)");
    }
    std::string rows_name() const override { return "windows"; }
    int64_t samples_per_step() const override { return config_.batch_size * context_; }

private:
    RunConfig config_;
    std::shared_ptr<const TextCorpus> corpus_;
    Replicas replicas_;
    int64_t context_;
    TokenStream val_;
    TextBatches batches_;
    int64_t total_ = 0;
};

}  // namespace

namespace {

// The images of `d` at `indices`, in that order.
std::shared_ptr<const Dataset> take_images(const Dataset& d, const std::vector<int64_t>& indices) {
    auto out = std::make_shared<Dataset>();
    out->images = {.count = static_cast<int64_t>(indices.size()), .rows = d.images.rows, .cols = d.images.cols, .pixels = {},
                   .channels = d.images.channels};
    out->num_classes = d.num_classes;
    const int64_t n = d.features();
    for (const int64_t i : indices) {
        out->images.pixels.insert(out->images.pixels.end(), d.images.pixels.begin() + i * n, d.images.pixels.begin() + (i + 1) * n);
        out->labels.push_back(d.labels[static_cast<size_t>(i)]);
    }
    return out;
}

// DIR/train/<class>/ (and DIR/test/<class>/, or --val-fraction of train's images, stratified),
// every image resized to --image-size or to the first training image's size.
void load_image_folder(const RunConfig& c, TaskData& d) {
    namespace fs = std::filesystem;
    const fs::path root(c.data_dir);
    auto options = data::ImageFolderOptions();
    if (!c.image_size.empty()) std::tie(options.height, options.width) = parse_image_size(c.image_size);
    data::ImageFolder train = data::read_image_folder((root / "train").string(), options);
    const ImageSet& im = train.dataset.images;
    std::shared_ptr<const Dataset> test;
    std::string split;
    if (fs::is_directory(root / "test")) {
        // The test images in the training images' classes, channels and size.
        options.height = im.rows, options.width = im.cols;
        options.channels = static_cast<int>(im.channels);
        options.classes = train.classes;
        test = std::make_shared<const Dataset>(data::read_image_folder((root / "test").string(), options).dataset);
        split = "test";
    } else {
        const std::vector<int64_t> labels(train.dataset.labels.begin(), train.dataset.labels.end());
        const auto [kept, held] = data::holdout_split(train.dataset.size(), c.val_fraction, c.seed, labels);
        test = take_images(train.dataset, held);
        train.dataset = *take_images(train.dataset, kept);
        split = "held-out";
    }
    std::shared_ptr<const Dataset> training = std::make_shared<const Dataset>(std::move(train.dataset));
    if (c.limit > 0 && c.limit < training->size()) training = std::make_shared<const Dataset>(take(*training, c.limit));
    if (c.limit > 0 && c.limit < test->size()) test = std::make_shared<const Dataset>(take(*test, c.limit));
    d.images_text = str(c.data_dir, " (", training->size(), " train / ", test->size(), " ", split, " images, ",
                        train.classes.size(), " classes, ", im.channels, "x", im.rows, "x", im.cols, ")");
    d.train = std::move(training);
    d.test = std::move(test);
    d.classes = std::move(train.classes);
}

}  // namespace

std::optional<ImagesMetadata> images_metadata_of(const SafetensorsData& file) {
    const auto it = file.metadata.find(kImagesMetadata);
    if (it == file.metadata.end()) return std::nullopt;
    ImagesMetadata m;
    try {
        const Json j = Json::parse(it->second);
        m.classes = j.at("classes").get<std::vector<std::string>>();
        m.channels = j.at("channels").get<int64_t>();
        m.height = j.at("height").get<int64_t>();
        m.width = j.at("width").get<int64_t>();
    } catch (const std::exception& e) {
        fail(file.path, ": malformed ", kImagesMetadata, " metadata: ", e.what());
    }
    NORMNET_CHECK(!m.classes.empty() && (m.channels == 1 || m.channels == 3) && m.height >= 1 && m.width >= 1 &&
                      m.height <= 4096 && m.width <= 4096,
                  file.path, ": ", kImagesMetadata, " metadata out of range");
    return m;
}

TaskData load_task_data(const RunConfig& config, bool test) {
    TaskData d;
    if (config.model.kind().task == kLanguageModel) {
        d.corpus = std::make_shared<const TextCorpus>(load_text_corpus(config.text, {.val_fraction = config.val_fraction}));
    } else if (config.is_table()) {
        d.table = load_table(config);
    } else if (config.is_image_folder()) {
        load_image_folder(config, d);
    } else {
        d.train = load_split(config, "train");
        if (test) d.test = load_split(config, "test");
    }
    return d;
}

std::unique_ptr<Task> make_task(const RunConfig& config, const TaskData& data, const Replicas& replicas) {
    if (config.model.kind().task == kLanguageModel) return std::make_unique<LanguageModel>(config, data.corpus, replicas);
    if (data.table) return std::make_unique<TablePrediction>(config, data.table, replicas);
    return std::make_unique<ImageClassification>(config, data, replicas);
}

int64_t Examples::size() const { return images ? images->size() : inputs.size(0); }

DataLoader Examples::loader(const DataLoaderOptions& options) const {
    return images ? DataLoader(images, options) : DataLoader(inputs, labels, options);
}

Tensor Examples::label_tensor() const {
    if (!images) return labels;
    return from_vector(std::vector<int64_t>(images->labels.begin(), images->labels.end()), {images->size()});
}

Examples Examples::first(int64_t n) const {
    if (n >= size()) return *this;
    if (images) return Examples(std::make_shared<const Dataset>(take(*images, n)));
    return Examples(inputs.narrow(0, 0, n), labels.narrow(0, 0, n));
}

Evaluation evaluate(Module& model, const Examples& data, int64_t classes, int64_t batch_size, int64_t num_replicas,
                    int64_t rank) {
    NoGradGuard no_grad;
    const bool was_training = model.is_training();
    model.eval();
    DataLoader loader = data.loader(DataLoaderOptions{.batch_size = batch_size * num_replicas, .shuffle = false,
                                                      .num_replicas = num_replicas, .rank = rank});
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

std::string val_loss_text(double nats) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "val loss %.4f nats (%.3f bits/char)", nats, nats / std::numbers::ln2);
    return buf;
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

}  // namespace normnet::cli

// A task: what a run learns from and how it is measured. The Trainer (trainer.hpp) owns the
// model, the step and the checkpoints; a task supplies the data of each step (this rank's part
// of the global batch), the loss, the metrics, the evaluation on held-out data and what its data
// adds to a checkpoint. Two tasks so far: classification of images (IDX files), and the character
// language model on a text corpus.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "normnet/data.hpp"
#include "normnet/table_schema.hpp"
#include "normnet/text.hpp"
#include "replicas.hpp"
#include "run_config.hpp"
#include "run_folder.hpp"

namespace normnet::cli {

/// This rank's part of one global batch.
struct StepData {
    Tensor inputs, targets;  // targets: int64 class labels (images) or next characters (text)
    int64_t rows = 0;        // this rank's rows (0: its empty slice of a short last batch)
    double share = 1;        // this rank's share of the global batch's mean loss
};

/// A model measured on held-out data. `accuracy` and the confusion matrix only for classification.
struct Evaluation {
    double loss = 0, accuracy = NAN;
    double rmse = NAN, mae = NAN, r2 = NAN;  // regression, in the target's units
    int64_t correct = 0, count = 0;
    std::vector<std::vector<int64_t>> confusion;  // [true class][predicted class]
    std::vector<int64_t> predictions;             // predicted class of every example, in order
};

class Task {
public:
    virtual ~Task() = default;

    /// Fills in what the data decides in the model's spec (a language model's vocabulary).
    virtual void complete(ModelSpec& spec) const = 0;
    /// Optimizer steps of each epoch (an epoch's batches; for a run counted in steps, its
    /// evaluation interval) and of the whole run.
    virtual int64_t steps_per_epoch() const = 0;
    virtual int64_t total_steps() const = 0;
    /// Starts epoch `epoch` (0-based) at its step `first` (resumed from inside it).
    virtual void start_epoch(int64_t epoch, int64_t first) = 0;
    /// This rank's part of the next global batch (valid until the next call).
    virtual StepData next() = 0;
    /// The loss the step minimises, of `output` = model(inputs) on this rank's rows.
    virtual Tensor loss(const Tensor& output, const StepData& data) const = 0;
    /// Rows predicted right (classification), or -1 when the task has no accuracy.
    virtual int64_t correct(const Tensor& output, const StepData& data) const = 0;
    /// False for a task without classes (a regression): no accuracy is reported.
    virtual bool has_accuracy() const { return true; }
    /// Train losses are averaged over rows (true), or over steps (the language model's, whose
    /// steps all have the same size).
    virtual bool mean_over_rows() const = 0;
    /// The model in eval mode over the held-out data: sharded over the ranks, sums reduced.
    virtual Evaluation evaluate(Module& model, const Replicas& replicas) = 0;

    /// What the data adds to a checkpoint (the language model's vocabulary and window generator),
    /// and a resume's check and restore of it (everything is checked before anything changes).
    virtual void save(CheckpointContents&) const {}
    virtual void check_resume(const LoadedCheckpoint&) const {}
    virtual void resume(const LoadedCheckpoint&) {}

    // For the command's messages.
    /// "mnist (60000 train / 10000 test images)", "corpus.txt (12 records: 900 training / 100 held-out characters)".
    virtual std::string data_text() const = 0;
    /// "images" or "windows": what a batch holds.
    virtual std::string rows_name() const = 0;
    /// Samples a progress bar counts per step (images, or characters).
    virtual int64_t samples_per_step() const = 0;
};

/// The task of `config` on its data as loaded by load_task_data (shared between the runs of a grid).
/// A table run's data: the schema fitted on the training rows, both splits encoded by it.
struct TableData {
    data::TableSchema schema;
    data::EncodedTable train, test;
    std::string text;  // "wine.csv (133 rows; 45 held out, --val-fraction 0.25)"
};

struct TaskData {
    std::shared_ptr<const Dataset> train{}, test{};  // images
    std::vector<std::string> classes{};              // an image folder's class names (IDX: none)
    std::string images_text{};                       // an image folder's description, for the first line
    std::shared_ptr<const TextCorpus> corpus{};      // text
    std::shared_ptr<const TableData> table{};        // a table
};
/// The checkpoint metadata key of an image-folder run: its class names and image shape.
inline constexpr const char* kImagesMetadata = "normnet.images";
/// The class names and image shape an image-folder checkpoint keeps (kImagesMetadata).
struct ImagesMetadata {
    std::vector<std::string> classes;
    int64_t channels = 1, height = 28, width = 28;
};
/// The image-folder metadata of a model file, or nothing (an IDX run's: MNIST's layout, classes 0-9).
std::optional<ImagesMetadata> images_metadata_of(const SafetensorsData& file);
/// The checkpoint metadata key of a table run's schema.
inline constexpr const char* kTableMetadata = "normnet.table";
/// A table run's data: --data's rows split into training and held-out rows (or --test's), the
/// schema fitted on the training rows.
std::shared_ptr<const TableData> load_table(const RunConfig& config);
/// A table model measured on encoded rows that have the target (this rank's share of them, the
/// sums reduced over the ranks): loss, and accuracy and confusion or RMSE, MAE and R^2.
/// A regression's targets as its model learns them: standardised by the training targets' mean and std.
Tensor standardised(const data::TableSchema& schema, const Tensor& targets);
Evaluation evaluate_table(Module& model, const data::TableSchema& schema, const data::EncodedTable& rows,
                          const std::string& loss, const Replicas& replicas = {});
/// What a table model says of encoded inputs: class probabilities [rows, classes], or values
/// [rows, 1] in the target's units.
Tensor predict_table(Module& model, const data::TableSchema& schema, const Tensor& inputs);
/// The schema kept in a table run's model file; an error naming the file if it has none.
data::TableSchema table_schema_of(const SafetensorsData& file);

/// Loads the data of `config` (the image dataset's splits, or the corpus); `test` false skips the
/// test split (bench).
TaskData load_task_data(const RunConfig& config, bool test = true);
std::unique_ptr<Task> make_task(const RunConfig& config, const TaskData& data, const Replicas& replicas);

/// Labelled examples of a classification, as compare measures them: an image dataset (uint8
/// pixels, scaled to [0, 1] by its loader) or a table's encoded rows.
struct Examples {
    std::shared_ptr<const Dataset> images;
    Tensor inputs, labels;  // a table's: [rows, features] float32, [rows] int64
    Examples() = default;
    Examples(std::shared_ptr<const Dataset> d) : images(std::move(d)) {}  // NOLINT: an image dataset is examples
    Examples(Tensor x, Tensor y) : inputs(std::move(x)), labels(std::move(y)) {}
    int64_t size() const;
    /// Batches in order, as `options` says (shuffle, shards).
    DataLoader loader(const DataLoaderOptions& options) const;
    /// The labels as one int64 tensor [size()].
    Tensor label_tensor() const;
    /// The first n examples (all of them when n >= size()).
    Examples first(int64_t n) const;
};

/// Loss, accuracy and confusion matrix of `model` (of `classes` outputs) in eval mode over `data`;
/// with num_replicas > 1, over this rank's shard of every batch of batch_size x num_replicas (the
/// counts, sums and confusion are this rank's part; predictions too).
Evaluation evaluate(Module& model, const Examples& data, int64_t classes, int64_t batch_size = 1000,
                    int64_t num_replicas = 1, int64_t rank = 0);

/// "val loss 1.2345 nats (1.781 bits/char)"
std::string val_loss_text(double nats);

/// The vocabulary as stored in checkpoint metadata (a JSON list of code points), and back.
std::string vocab_json(const std::vector<char32_t>& vocab);
std::vector<char32_t> parse_vocab(const std::string& text, const std::string& where);

}  // namespace normnet::cli
